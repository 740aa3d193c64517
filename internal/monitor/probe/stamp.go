package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"net/netip"

	"github.com/sonde-project/sonde/internal/stamp"
)

// stampKind probes a STAMP or TWAMP-Light reflector from one unconnected
// UDP socket (so a renewed session on another port needs no new socket).
type stampKind struct {
	s     *stream
	conn  *stamp.Conn
	tmpl  []byte // the probe, patched in place per send (scheduler only)
	tos   int
	est   stamp.ErrorEstimate
	clock *stamp.Clock

	mu  sync.Mutex // guards cur and offset (the reader and renewer read them)
	cur session
	// offset is the reflector's clock minus ours when both share a boot
	// (a sonde server on this host), else 0.
	offset int64

	stop chan struct{}
	wg   sync.WaitGroup
}

// session is where the probes go: the reflector's address and the SSID
// they carry (a random non-zero one for a plain reflector).
type session struct {
	id    string
	ssid  uint16
	dst   netip.AddrPort
	grant time.Duration
}

func newSTAMP(ctx context.Context, s *stream) (kind, error) {
	k := &stampKind{s: s, tos: s.cfg.DSCP << 2, est: stamp.LocalErrorEstimate(), clock: s.p.clock, stop: make(chan struct{})}
	if s.cfg.Sessions != nil {
		cur, err := k.open(ctx)
		if err != nil {
			return nil, err
		}
		k.cur = cur
	} else {
		dst, err := resolve(ctx, s.cfg.Target, stamp.DefaultPort)
		if err != nil {
			return nil, err
		}
		var b [2]byte
		for b[0] == 0 && b[1] == 0 {
			b = randBytes2()
		}
		k.cur = session{ssid: binary.BigEndian.Uint16(b[:]), dst: dst}
	}
	network := "udp4"
	if !k.cur.dst.Addr().Is4() {
		network = "udp6"
	}
	conn, err := stamp.Listen(network, ":0")
	if err != nil {
		k.closeSession(k.cur)
		return nil, err
	}
	k.conn = conn
	p := stamp.SenderPacket{Error: k.est}
	k.tmpl, err = p.AppendTo(nil, s.cfg.PacketBytes)
	if err != nil {
		conn.Close()
		k.closeSession(k.cur)
		return nil, err
	}
	k.wg.Add(1)
	go k.read(append([]byte(nil), k.tmpl...)) // a copy: only its length and TLV layout matter

	if s.cfg.Sessions != nil {
		k.wg.Add(1)
		go k.renew()
	}
	return k, nil
}

// open asks the server for a monitor session at the stream's rate for as
// long as the server grants.
func (k *stampKind) open(ctx context.Context) (session, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	rep, dst, err := k.s.cfg.Sessions.Open(ctx, stamp.SessionRequest{
		Client: "sonde-monitor", DurationS: stamp.MonitorMaxDurationS, IntervalUs: 1e6 / k.s.cfg.Rate,
		PacketBytes: k.s.cfg.PacketBytes, DSCP: k.s.cfg.DSCP, Monitor: true,
	})
	if err != nil {
		return session{}, err
	}
	grant := time.Duration(rep.DurationS * float64(time.Second))
	if grant <= 0 {
		grant = time.Duration(rep.ExpiresS * float64(time.Second))
	}
	if grant < time.Second {
		return session{}, fmt.Errorf("monitor session granted only %v", grant)
	}
	if rep.Clock.BootID != "" && rep.Clock.BootID == stamp.BootID() {
		k.mu.Lock()
		k.offset = rep.Clock.EpochNs - k.clock.Epoch()
		k.mu.Unlock()
	}
	return session{id: rep.ID, ssid: rep.SSID, dst: dst, grant: grant}, nil
}

func (k *stampKind) closeSession(c session) {
	if c.id == "" || k.s.cfg.Sessions == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = k.s.cfg.Sessions.Close(ctx, c.id)
}

// renew opens the next session when 80 % of the grant has passed, well
// before the server's expiry (grant plus its slack), switches the probes
// to it, and closes the old one once its last replies are beyond the
// late horizon: the sessions overlap, so no probe goes unreflected.
func (k *stampKind) renew() {
	defer k.wg.Done()
	k.mu.Lock()
	cur := k.cur
	k.mu.Unlock()
	wait := cur.grant * 8 / 10
	for {
		select {
		case <-k.stop:
			k.closeSession(cur)
			return
		case <-time.After(wait):
		}
		next, err := k.open(context.Background())
		if err != nil {
			k.s.mu.Lock()
			k.s.stats.RenewErrors++
			k.s.mu.Unlock()
			// Retry within what is left of the grant; once the old
			// session is gone the probes are lost, which is the truth.
			wait = min(max(cur.grant/20, 100*time.Millisecond), 10*time.Second)
			continue
		}
		k.mu.Lock()
		old := cur
		k.cur, cur = next, next
		k.mu.Unlock()
		k.s.mu.Lock()
		k.s.stats.Renewals++
		k.s.mu.Unlock()
		select {
		case <-k.stop:
			k.closeSession(old)
			k.closeSession(cur)
			return
		case <-time.After(time.Duration(k.s.pend.horizon)):
		}
		k.closeSession(old)
		wait = max(cur.grant*8/10-time.Duration(k.s.pend.horizon), time.Second)
	}
}

func (k *stampKind) send(s *stream, seq uint32, add func(r record)) error {
	k.mu.Lock()
	cur := k.cur
	k.mu.Unlock()
	now := k.clock.Now()
	ts := stamp.TimestampFromNs(now)
	b := k.tmpl
	binary.BigEndian.PutUint32(b[0:], seq)
	binary.BigEndian.PutUint64(b[4:], uint64(ts))
	binary.BigEndian.PutUint16(b[14:], cur.ssid)
	add(record{session: uint64(cur.ssid), wire: uint64(ts), sentNs: now, dst: cur.dst})
	return k.conn.WriteTo(b, cur.dst, k.tos)
}

func (k *stampKind) expired(*record) {}

func (k *stampKind) read(probe []byte) {
	defer k.wg.Done()
	buf := make([]byte, stamp.MaxReplyLen+1)
	oob := make([]byte, stamp.OOBLen())
	for {
		n, info, err := k.conn.Read(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP errors surface here; the probe times out
		}
		recv := recvTime(k.clock, info.At, info.KernelNs)
		k.mu.Lock()
		off := k.offset
		k.mu.Unlock()
		k.handle(buf[:n], probe, info.From, recv, off)
	}
}

// recvTime is a datagram's receive time on clock: the kernel's timestamp
// (CLOCK_REALTIME ns, 0: none) where it is usable, else at, the time the
// datagram was read. Every probe kind's reader times replies with it.
func recvTime(clock *stamp.Clock, at time.Time, kernelNs int64) int64 {
	if kernelNs != 0 {
		if t, ok := clock.FromKernel(kernelNs, at); ok {
			return t
		}
	}
	return clock.At(at)
}

// handle parses one datagram and delivers it to the stream's matcher.
func (k *stampKind) handle(b, probe []byte, from netip.AddrPort, recv, offset int64) {
	rp, _, err := stamp.ParseReply(b, probe)
	if err != nil && !errors.Is(err, stamp.ErrMalformTLV) {
		k.s.unmatched()
		return
	}
	// An RFC 8972 reflector echoes the SSID (a 44-octet reply reads the
	// same as TWAMP-Light's, hence FormatEither, but still carries it); a
	// TWAMP-Light or RFC 8762-only reflector has zero there, and then the
	// send timestamp and the address carry the match. A sonde server
	// always echoes, so a zero SSID from it is no reply of ours.
	ssid := uint64(rp.SSID)
	if ssid == 0 && k.s.cfg.Sessions == nil {
		k.mu.Lock()
		ssid = uint64(k.cur.ssid)
		k.mu.Unlock()
	}
	t1, t2, t3 := rp.SenderTimestamp.Ns(), rp.Receive.Ns(), rp.Timestamp.Ns()
	fwd, rev := t2-offset-t1, recv-(t3-offset)
	k.s.deliver(rp.SenderSeq, ssid, uint64(rp.SenderTimestamp), from, recv, fwd, rev)
}

func (k *stampKind) close() {
	select {
	case <-k.stop:
		return
	default:
	}
	close(k.stop)
	if k.conn != nil {
		k.conn.Close()
	}
	k.wg.Wait()
}
