package probe

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"golang.org/x/sys/unix"
)

// TCP connect probes. Each probe is a non-blocking connect: the send time
// is taken just before connect(2) (which emits the SYN) and the reply time
// when epoll reports the socket writable (SYN-ACK, or RST from a closed
// port: either is the host answering). The socket is then closed with
// SO_LINGER 0, so it ends with a RST and leaves no TIME_WAIT behind: at
// 10/s a normal close would hold ~600 sockets and ephemeral ports in
// TIME_WAIT per target for nothing. A connect still pending at the timeout
// is closed then: TCP probes have no late replies.

// tcpPoller is the prober's one epoll reader for all TCP streams.
type tcpPoller struct {
	p    *Prober
	ep   int
	wake int // eventfd that ends the reader

	mu    sync.Mutex
	open  map[int32]tcpProbe // fd → probe in flight
	gen   uint32
	done  chan struct{}
	close func()
}

type tcpProbe struct {
	s   *stream
	seq uint32
	gen uint32
}

func newTCPPoller(p *Prober) (*tcpPoller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("TCP probes: epoll: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("TCP probes: eventfd: %w", err)
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wake)}); err != nil {
		unix.Close(ep)
		unix.Close(wake)
		return nil, fmt.Errorf("TCP probes: epoll: %w", err)
	}
	t := &tcpPoller{p: p, ep: ep, wake: wake, open: map[int32]tcpProbe{}, done: make(chan struct{})}
	var once sync.Once
	t.close = func() {
		once.Do(func() {
			_, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
			<-t.done
			t.mu.Lock()
			for fd := range t.open {
				unix.Close(int(fd))
			}
			clear(t.open)
			t.mu.Unlock()
			unix.Close(ep)
			unix.Close(wake)
		})
	}
	go t.run()
	return t, nil
}

// run reads completions. It blocks in epoll_wait: one wake-up per probe.
func (t *tcpPoller) run() {
	defer close(t.done)
	events := make([]unix.EpollEvent, 32)
	for {
		n, err := unix.EpollWait(t.ep, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		recv := t.p.clock.Now()
		for _, ev := range events[:n] {
			if int(ev.Fd) == t.wake {
				return
			}
			t.complete(ev.Fd, uint32(ev.Pad), recv)
		}
	}
}

// complete handles one socket's completion; gen guards against an event
// for an fd that timed out and was reused by a newer probe.
func (t *tcpPoller) complete(fd int32, gen uint32, recv int64) {
	t.mu.Lock()
	pr, ok := t.open[fd]
	if !ok || pr.gen != gen {
		t.mu.Unlock()
		return
	}
	delete(t.open, fd)
	t.mu.Unlock()
	soerr, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
	unix.Close(int(fd))
	if err != nil || (soerr != 0 && soerr != int(unix.ECONNREFUSED)) {
		return // unreachable and the like: the probe times out as lost
	}
	pr.s.deliver(pr.seq, uint64(fd), uint64(gen), netip.AddrPort{}, recv, 0, 0)
}

// forget closes a probe's socket at its timeout, if still open.
func (t *tcpPoller) forget(fd int32, gen uint32) {
	t.mu.Lock()
	pr, ok := t.open[fd]
	if ok && pr.gen == gen {
		delete(t.open, fd)
		unix.Close(int(fd))
	}
	t.mu.Unlock()
}

type tcpKind struct {
	s   *stream
	t   *tcpPoller
	dst netip.AddrPort
	sa  unix.Sockaddr
	fam int
}

func newTCP(s *stream) (kind, error) {
	dst, err := resolve(context.Background(), s.cfg.Target, 0)
	if err != nil {
		return nil, err
	}
	if dst.Port() == 0 {
		return nil, errors.New("TCP probes need host:port")
	}
	k := &tcpKind{s: s, t: s.p.tcp, dst: dst}
	if dst.Addr().Is4() {
		k.fam, k.sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}
	} else {
		k.fam, k.sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(dst.Port()), Addr: dst.Addr().As16()}
	}
	return k, nil
}

func (k *tcpKind) send(s *stream, seq uint32, add func(r record)) error {
	fd, err := unix.Socket(k.fam, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("TCP probe: socket: %w", err)
	}
	_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	if s.cfg.DSCP != 0 {
		if k.fam == unix.AF_INET {
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, s.cfg.DSCP<<2)
		} else {
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, s.cfg.DSCP<<2)
		}
	}
	t := k.t
	t.mu.Lock()
	t.gen++
	gen := t.gen
	t.open[int32(fd)] = tcpProbe{s: s, seq: seq, gen: gen}
	t.mu.Unlock()
	now := s.p.clock.Now()
	add(record{session: uint64(fd), wire: uint64(gen), sentNs: now})
	err = unix.Connect(fd, k.sa)
	if err != nil && !errors.Is(err, unix.EINPROGRESS) {
		// Unreachable at once: the record times out as lost.
		t.forget(int32(fd), gen)
		return nil
	}
	// Registered after connect: an unconnected socket polls writable at
	// once. A connect that already completed is reported on ADD.
	ev := unix.EpollEvent{Events: unix.EPOLLOUT | unix.EPOLLONESHOT, Fd: int32(fd), Pad: int32(gen)}
	if err := unix.EpollCtl(t.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		t.forget(int32(fd), gen)
		return fmt.Errorf("TCP probe: epoll: %w", err)
	}
	return nil
}

// expired closes the socket of a connect that timed out.
func (k *tcpKind) expired(r *record) { k.t.forget(int32(r.session), uint32(r.wire)) }

func (k *tcpKind) close() {}

func (t *tcpPoller) closeAll() { t.close() }
