package capture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/capfilter"
)

// Group is an open capture: one socket and ring per worker, in one
// fanout group when there are several.
type Group struct {
	srcs      []*Source
	ringBytes int
}

// Source is one socket of a capture and its ring; one goroutine reads it.
type Source struct {
	fd        int
	loopback  bool
	ring      []byte // the mapped ring, blocks of blockSize
	blockSize int
	blocks    int
	cur       int         // the block being read or waited for
	blk       blockReader // the current block's walk, while the reader owns it
	owned     bool        // the current block is the reader's until released
	stats     Stats
}

// pollWait bounds a wait for the kernel to hand over a block, so that Next
// notices the end of its context.
const pollWait = 100 * time.Millisecond

// blockTimeoutMs is how long the kernel fills a block before handing it
// over part full: the latency of a quiet capture.
const blockTimeoutMs = 10

// Open starts capturing on the interface ifname with o.Workers sockets.
func Open(ifname string, o Options) (*Group, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("capture: no interface %q in this network namespace", ifname)
	}
	bs, nb := ringGeometry(o.RingBytes, os.Getpagesize())
	g := &Group{ringBytes: bs * nb}
	for range o.Workers {
		s, err := openSource(ifi, bs, nb)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("capture on %s: %w", ifname, err)
		}
		g.srcs = append(g.srcs, s)
	}
	if err := g.start(o.Filter); err != nil {
		g.Close()
		return nil, fmt.Errorf("capture on %s: %w", ifname, err)
	}
	return g, nil
}

// dropAll is a filter that accepts nothing: the sockets hold it until the
// fanout group is whole, so that no packet is read twice, by two sockets
// that are not yet in the group.
var dropAll = []unix.SockFilter{{Code: 0x06, K: 0}} // ret #0

// openSource opens a socket with a ring of nb blocks of bs bytes, bound to
// the interface and holding dropAll.
func openSource(ifi *net.Interface, bs, nb int) (*Source, error) {
	// Protocol 0 receives nothing until bind, so the filter is in place
	// before the first packet arrives.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket (needs CAP_NET_RAW): %w", err)
	}
	s := &Source{fd: fd, loopback: ifi.Flags&net.FlagLoopback != 0, blockSize: bs, blocks: nb}
	if err := s.setup(ifi.Index); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Source) setup(ifindex int) error {
	if err := attach(s.fd, dropAll); err != nil {
		return err
	}
	if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("TPACKET_V3: %w", err)
	}
	// The frame size is nominal in V3 (packets are packed in blocks);
	// the kernel checks only that frames tile the blocks.
	const frame = 2048
	req := unix.TpacketReq3{Block_size: uint32(s.blockSize), Block_nr: uint32(s.blocks),
		Frame_size: frame, Frame_nr: uint32(s.blockSize / frame * s.blocks), Retire_blk_tov: blockTimeoutMs}
	if err := unix.SetsockoptTpacketReq3(s.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_RX_RING of %d blocks of %d bytes: %w", s.blocks, s.blockSize, err)
	}
	ring, err := unix.Mmap(s.fd, 0, s.blockSize*s.blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap of the ring (%d bytes): %w", s.blockSize*s.blocks, err)
	}
	s.ring = ring
	return unix.Bind(s.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex})
}

// start joins the sockets in a fanout group and then puts the filter in
// place of dropAll. The packets dropAll refused are in no count: the
// kernel counts those that pass the filter.
func (g *Group) start(f *capfilter.Filter) error {
	if len(g.srcs) > 1 {
		// PACKET_FANOUT_HASH is the kernel's symmetric flow hash
		// (__skb_get_hash_symmetric: both directions of a connection
		// to one socket; TestFanoutSymmetric checks it on this kernel).
		// The first socket asks for a group id unused in this network
		// namespace; the others join it.
		const typ = unix.PACKET_FANOUT_HASH
		if err := unix.SetsockoptInt(g.srcs[0].fd, unix.SOL_PACKET, unix.PACKET_FANOUT, (typ|unix.PACKET_FANOUT_FLAG_UNIQUEID)<<16); err != nil {
			return fmt.Errorf("PACKET_FANOUT: %w", err)
		}
		v, err := unix.GetsockoptInt(g.srcs[0].fd, unix.SOL_PACKET, unix.PACKET_FANOUT)
		if err != nil {
			return fmt.Errorf("PACKET_FANOUT group id: %w", err)
		}
		id := v & 0xffff
		for _, s := range g.srcs[1:] {
			if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_FANOUT, id|typ<<16); err != nil {
				return fmt.Errorf("PACKET_FANOUT join of group %d: %w", id, err)
			}
		}
	}
	var prog []unix.SockFilter
	if f != nil {
		for _, r := range f.Program() {
			prog = append(prog, unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K})
		}
	}
	for _, s := range g.srcs {
		var err error
		if prog != nil {
			err = attach(s.fd, prog)
		} else if err = unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0); err != nil {
			err = fmt.Errorf("detach filter: %w", err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func attach(fd int, prog []unix.SockFilter) error {
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
		return fmt.Errorf("attach filter: %w", err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Sources returns the capture's sockets, one per worker: each is read by
// one goroutine.
func (g *Group) Sources() []*Source { return g.srcs }

// RingBytes is each socket's ring as allocated (whole blocks).
func (g *Group) RingBytes() int { return g.ringBytes }

// Stats returns the counts so far, summed over the sockets. Call it once
// the readers have stopped (the Read counts are theirs).
func (g *Group) Stats() (Stats, error) {
	var sum Stats
	var errs []error
	for _, s := range g.srcs {
		st, err := s.Stats()
		sum.add(st)
		errs = append(errs, err)
	}
	return sum, errors.Join(errs...)
}

// Close ends the capture.
func (g *Group) Close() error {
	var errs []error
	for _, s := range g.srcs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// status is the block's status word, shared with the kernel.
func (s *Source) status(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&s.ring[i*s.blockSize+blockStatusOff]))
}

// Next waits for the next packet; it returns ctx's error once ctx is done
// (looked at between blocks, and while waiting for one).
func (s *Source) Next(ctx context.Context, p *Packet) error {
	for {
		if s.owned {
			ok, err := s.blk.next(p)
			if err != nil {
				s.stats.BadBlocks++
			}
			if ok {
				s.stats.Read++
				if p.Outgoing && s.loopback {
					// On loopback every packet is seen leaving and
					// arriving: keep the arrival, as libpcap does.
					continue
				}
				return nil
			}
			// Done with the block: back to the kernel.
			atomic.StoreUint32(s.status(s.cur), 0) // TP_STATUS_KERNEL
			s.owned = false
			s.cur = (s.cur + 1) % s.blocks
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if atomic.LoadUint32(s.status(s.cur))&statusUser == 0 {
			if err := s.wait(); err != nil {
				return err
			}
			continue
		}
		blk, err := openBlock(s.ring[s.cur*s.blockSize : (s.cur+1)*s.blockSize])
		if err != nil {
			s.stats.BadBlocks++
		}
		s.blk, s.owned = blk, true
	}
}

// wait polls the socket until the kernel hands over a block, or pollWait.
func (s *Source) wait() error {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN | unix.POLLERR}}
	_, err := unix.Poll(fds, int(pollWait/time.Millisecond))
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("capture: poll: %w", err)
	}
	if fds[0].Revents&unix.POLLERR != 0 {
		// A socket error (the interface went away): read it.
		if e, gerr := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_ERROR); gerr == nil && e != 0 {
			return fmt.Errorf("capture: %w", unix.Errno(e))
		}
	}
	return nil
}

// Stats returns the socket's counts so far.
func (s *Source) Stats() (Stats, error) {
	st, err := unix.GetsockoptTpacketStatsV3(s.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return s.stats, fmt.Errorf("capture statistics: %w", err)
	}
	// Reading the counters resets them. tp_packets includes the drops.
	s.stats.Received += uint64(st.Packets)
	s.stats.Dropped += uint64(st.Drops)
	s.stats.Freezes += uint64(st.Freeze_q_cnt)
	return s.stats, nil
}

// Close ends the socket's capture.
func (s *Source) Close() error {
	var err error
	if s.ring != nil {
		err = unix.Munmap(s.ring)
		s.ring = nil
	}
	return errors.Join(err, unix.Close(s.fd))
}
