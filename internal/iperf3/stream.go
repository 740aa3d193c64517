package iperf3

import (
	"errors"
	"math"
	"net"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	sstream "github.com/sonde-project/sonde/internal/stream"
	"github.com/sonde-project/sonde/internal/tcpinfo"
	"sync/atomic"
)

// stream is one data connection of a test on the server.
type stream struct {
	ses    *session
	id     int
	sender bool   // the server sends on it
	seq    uint64 // its connection's place in the server's accept order (TCP)
	tcp    net.Conn
	udp    *net.UDPConn

	start   time.Time
	done    chan struct{}
	sampler *tcpinfo.Sampler
	tcpInfo []model.TCPSample
	counts  []model.ByteCount // receive counts; written by session.count only

	bytes atomic.Int64 // sent or received, from the first byte

	mu          sync.Mutex // guards the fields below against omit and finish
	omitBytes   int64      // bytes at the end of the omitted seconds
	omitRetrans uint32
	measureFrom time.Time // start of the reported span
	end         time.Time
	retrans     uint32
	// UDP receiver counters, as iperf_udp_recv keeps them.
	packets, errs, ooo          int64
	omitPackets, omitErrs       int64
	jitter, prevTransit         float64
	sentPackets, omitSentPacket int64
	err                         error
	closeOnce                   sync.Once
}

// run moves data until the session stops.
func (st *stream) run() {
	defer close(st.done)
	st.mu.Lock()
	st.measureFrom = st.start
	st.mu.Unlock()
	var err error
	switch {
	case st.tcp != nil && st.sender:
		err = st.sendTCP()
	case st.tcp != nil:
		err = st.recvTCP()
	case st.sender:
		err = st.sendUDP()
	default:
		err = st.recvUDP()
	}
	if err != nil && !st.stopping() {
		st.mu.Lock()
		st.err = err
		st.mu.Unlock()
	}
}

func (st *stream) stopping() bool {
	select {
	case <-st.ses.stop:
		return true
	default:
		return false
	}
}

// sendTCP writes blocks of len bytes, paced to the bandwidth when one is
// set, until stopped, or until the client's byte or block count is sent.
func (st *stream) sendTCP() error {
	p := st.ses.p
	buf := payload(p.Len)
	pacer := newPacer(p.Bandwidth, st.start)
	w := sstream.DirectWriter(st.tcp)
	for !st.stopping() {
		if st.ses.reachedCount(p) {
			return nil
		}
		pacer.wait(st.bytes.Load(), st.ses.stop)
		n, err := w.Write(buf)
		if n > 0 {
			st.sentBlock(n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sentBlock counts a block (or datagram) of n bytes sent.
func (st *stream) sentBlock(n int) {
	st.bytes.Add(int64(n))
	st.ses.addBytes(n)
	st.ses.sent.Add(int64(n))
	st.ses.blocks.Add(1)
}

// reachedCount says whether the client's -n or -k is sent (by all the
// server's streams together, as iperf3 counts it).
func (ses *session) reachedCount(p Checked) bool {
	return (p.Num > 0 && ses.sent.Load() >= p.Num) || (p.BlockCount > 0 && ses.blocks.Load() >= p.BlockCount)
}

// Receive buffer sizes of a TCP stream: it starts at iperf3's own read
// size (the client's -l, 128 KiB by default) and doubles, up to
// recvBufMax, each time a read fills it. A fast stream then takes what its
// socket holds in a quarter of the system calls (on loopback 512 KiB reads
// cost about 10 % less CPU per GB than 128 KiB ones, bench/iperf3.sh), and
// a slow one (most clients of a busy server) keeps the small buffer.
const (
	recvBufStart = 128 << 10
	recvBufMax   = 512 << 10
)

// recvBufSize is the buffer for the next read after a read of n bytes
// into one of size bytes.
func recvBufSize(n, size int) int {
	if n == size && size < recvBufMax {
		return min(2*size, recvBufMax)
	}
	return size
}

func (st *stream) recvTCP() error {
	buf := make([]byte, max(st.ses.p.Len, recvBufStart))
	r := sstream.DirectReader(st.tcp)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			st.bytes.Add(int64(n))
			st.ses.addBytes(n)
			if size := recvBufSize(n, len(buf)); size != len(buf) {
				buf = make([]byte, size)
			}
		}
		if err != nil {
			return err
		}
		if st.stopping() {
			return nil // the socket stays open: the client's writes block, they do not fail
		}
	}
}

// sendUDP sends datagrams of len bytes at the bandwidth, numbered from 1.
func (st *stream) sendUDP() error {
	p := st.ses.p
	buf := payload(p.Len)
	pacer := newPacer(p.Bandwidth, st.start)
	var count uint64
	for !st.stopping() {
		if st.ses.reachedCount(p) {
			return nil
		}
		pacer.wait(st.bytes.Load(), st.ses.stop)
		count++
		now := time.Now()
		UDPHeader{Sec: uint32(now.Unix()), Usec: uint32(now.Nanosecond() / 1000), Count: count}.Put(buf, p.Counters64)
		n, err := st.udp.Write(buf)
		if n > 0 {
			st.sentBlock(n)
			st.mu.Lock()
			st.sentPackets = int64(count)
			st.mu.Unlock()
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// ECONNREFUSED from an ICMP: iperf3 ignores it too.
			if isConnRefused(err) {
				continue
			}
			return err
		}
	}
	return nil
}

// recvUDP counts datagrams as iperf_udp_recv does: loss from gaps in the
// numbers, out-of-order arrivals, and RFC 1889's jitter of the transit
// time (receive clock minus the sender's timestamp).
func (st *stream) recvUDP() error {
	p := st.ses.p
	buf := make([]byte, MaxUDPLen+1)
	for {
		n, err := st.udp.Read(buf)
		if err != nil {
			if isConnRefused(err) {
				continue
			}
			return err
		}
		now := time.Now()
		st.bytes.Add(int64(n))
		st.ses.addBytes(n)
		h, err := ParseUDPHeader(buf[:n], p.Counters64)
		if err != nil {
			continue
		}
		sent := time.Unix(int64(h.Sec), int64(h.Usec)*1000)
		st.mu.Lock()
		st.udpArrival(int64(min(h.Count, math.MaxInt64)), now.Sub(sent).Seconds())
		st.mu.Unlock()
	}
}

// udpArrival updates the counters with one datagram numbered count whose
// transit time was transit seconds (st.mu held).
func (st *stream) udpArrival(count int64, transit float64) {
	first := st.packets == 0 && st.errs == 0 && st.ooo == 0
	if count >= st.packets+1 {
		if count > st.packets+1 {
			st.errs += count - 1 - st.packets
		}
		st.packets = count
	} else {
		st.ooo++
		if st.errs > 0 {
			st.errs--
		}
	}
	if first {
		st.prevTransit = transit
	}
	d := math.Abs(transit - st.prevTransit)
	st.prevTransit = transit
	st.jitter += (d - st.jitter) / 16
}

// omit ends the omitted seconds at now.
func (st *stream) omit(now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.omitBytes = st.bytes.Load()
	st.measureFrom = now
	st.omitPackets, st.omitErrs, st.omitSentPacket = st.packets, st.errs, st.sentPackets
	st.jitter = 0
	if st.tcp != nil && st.sender {
		if s, err := tcpinfo.Get(st.tcp, 0); err == nil {
			st.omitRetrans = s.TotalRetrans
		}
	}
}

// finish stops the stream at end: its last TCP_INFO, then its socket.
func (st *stream) finish(end time.Time) {
	if st.sampler != nil {
		st.tcpInfo, _ = st.sampler.Stop()
	}
	st.mu.Lock()
	st.end = end
	if n := len(st.tcpInfo); n > 0 {
		st.retrans = st.tcpInfo[n-1].TotalRetrans
	}
	st.mu.Unlock()
	st.close()
	if st.done != nil {
		<-st.done
	}
}

func (st *stream) close() {
	st.closeOnce.Do(func() {
		if st.tcp != nil {
			st.tcp.Close()
		}
		if st.udp != nil {
			st.udp.Close()
		}
	})
}

// result is the stream's entry in the server's results.
func (st *stream) result() StreamResult {
	st.mu.Lock()
	defer st.mu.Unlock()
	r := StreamResult{ID: st.id, Bytes: float64(st.bytes.Load() - st.omitBytes), Retransmits: -1}
	if st.sender && st.tcp != nil {
		r.Retransmits = float64(int64(st.retrans) - int64(st.omitRetrans))
	}
	if st.udp != nil {
		r.Jitter = st.jitter
		// Totals, as iperf3's send_results: the peer takes off the
		// omitted seconds' counts.
		if st.sender {
			r.Packets, r.OmittedPackets = float64(st.sentPackets), float64(st.omitSentPacket)
		} else {
			r.Packets, r.OmittedPackets = float64(st.packets), float64(st.omitPackets)
			r.Errors, r.OmittedErrors = float64(st.errs), float64(st.omitErrs)
		}
	}
	end := st.end
	if end.IsZero() {
		end = time.Now()
	}
	r.EndTime = max(end.Sub(st.measureFrom).Seconds(), 0)
	return r
}

// report is the stream as sonde's server records describe a flow.
func (st *stream) report() protocol.FlowReport {
	st.mu.Lock()
	defer st.mu.Unlock()
	f := protocol.FlowReport{ID: st.id, Kind: protocol.KindUpload, Bytes: st.bytes.Load(),
		StartS: 0, EndS: st.end.Sub(st.start).Seconds(), TCPInfo: st.tcpInfo}
	if st.sender {
		f.Kind = protocol.KindDownload
	} else {
		f.Counts = append([]model.ByteCount{{TS: 0, Bytes: 0}}, st.counts...)
		f.Counts = append(f.Counts, model.ByteCount{TS: f.EndS, Bytes: f.Bytes})
	}
	if st.tcp != nil {
		f.SndBufBytes, f.RcvBufBytes, _ = tcpinfo.Buffers(st.tcp)
	}
	if st.err != nil {
		f.Error = st.err.Error()
	}
	if l, _ := st.ses.limit.Load().(string); l != "" {
		f.Limit = l
	}
	return f
}

func (st *stream) addrs() (local, remote net.Addr) {
	if st.tcp != nil {
		return st.tcp.LocalAddr(), st.tcp.RemoteAddr()
	}
	return st.udp.LocalAddr(), st.udp.RemoteAddr()
}

// payload is a block of n bytes that does not compress (iperf3 fills its
// buffer from /dev/urandom unless asked for a repeating payload).
func payload(n int) []byte {
	b := make([]byte, n)
	var x uint64 = 0x9e3779b97f4a7c15
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// pacer holds a sender to a rate in bit/s from its start (0: unpaced), as
// iperf3's check of the average rate so far does.
type pacer struct {
	rate  float64
	start time.Time
}

func newPacer(rate float64, start time.Time) pacer { return pacer{rate: rate, start: start} }

// wait sleeps until sent bytes are within the rate.
func (p pacer) wait(sent int64, stop <-chan struct{}) {
	if p.rate <= 0 {
		return
	}
	due := p.start.Add(time.Duration(float64(sent) * 8 / p.rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
		}
	}
}
