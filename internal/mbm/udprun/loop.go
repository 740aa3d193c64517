package udprun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
)

// loop is a closed-loop session for the tests that react to what the path
// does (8.2's standing queue scan, 8.3.2's slowstart against an AQM): the
// server sends a feedback datagram per arrival (as TCP an ACK), which
// gives every packet's final fate and an RTT sample per new arrival (the
// packet that moved the highest sequence number seen: now − its send
// time). Its memory is fixed by its packet bound, never by the path.
type loop struct {
	uc *net.UDPConn
	// rx reads uc with the kernel's receive time (SO_TIMESTAMPNS), so that
	// a reader this busy host runs late does not lengthen the RTT; nil:
	// not available, the read's time is used.
	rx      *stamp.Conn
	token   uint64
	size    int
	limit   int64     // packets: the grant, at most maxLoopPackets
	end     time.Time // the grant's end
	started time.Time
	buf     []byte
	ecn     bool

	mu       sync.Mutex
	sendNs   []int64 // per sequence number: send time, Unix ns
	rttNs    []int64 // per sequence number: RTT sample (0: none)
	fate     []uint8 // per sequence number: fateUnknown, …
	final    int64   // every packet below has its fate
	next     int64   // highest Next seen
	received int64
	lost     int64 // final and lost
	marks    int64 // final and lost or CE
	first    int64 // the first marked packet from markFrom on (−1: none yet)
	markFrom int64
	lastFB   time.Time
	sent     int64
	gaps     int64
	sendErrs int64
}

const (
	fateUnknown = iota
	fateArrived
	fateCE
	fateLost
)

// maxLoopPackets bounds a closed-loop session's record (17 bytes a packet:
// 17 MiB at this bound).
const maxLoopPackets = 1 << 20

// openLoop opens a session for test id paced at most at rateBps, for at
// most packets packets over durationS.
func openLoop(ctx context.Context, api *apiclient.Client, cfg Config, id string, rateBps float64, packets int64, durationS float64) (*loop, *mbmwire.SessionReply, error) {
	p := cfg.Plan
	size := p.MTU - udpIPOverhead
	lossTimeout := max(4*p.RTT, 200*time.Millisecond)
	req := mbmwire.SessionRequest{
		Client: cfg.Software, Test: id, RateBps: rateBps, PacketBytes: size,
		TargetRTTMs: float64(p.RTT) / 1e6, TargetMTU: p.MTU, DurationS: min(max(durationS, 0.001), maxDurationS),
		Packets: min(packets, maxLoopPackets), LossTimeoutMs: min(float64(lossTimeout)/1e6, mbmwire.MaxLossTimeoutMs),
		// A loss is final once 3 later packets arrived (TCP's duplicate
		// ACKs); an ACK per arrival clocks the window and times the RTT.
		ReorderPackets: 3, FeedbackPackets: 1,
	}
	var rep mbmwire.SessionReply
	if err := api.Call(ctx, http.MethodPost, mbmwire.PathSessions, req, &rep); err != nil {
		var se *apiclient.StatusError
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
			return nil, nil, fmt.Errorf("%s: %w", api.Base.Host, ErrNoMBM)
		}
		// The rate is the closed loop's ceiling, twice the target: say so
		// when the server refuses it.
		return nil, nil, fmt.Errorf("test %s, paced at most at %s: %w", id, rate(rateBps), err)
	}
	if rep.Packets < 1 || rep.Packets > req.Packets || rep.Port < 1 || rep.Port > 65535 || !(rep.DurationS > 0 && rep.DurationS <= req.DurationS) {
		return nil, nil, fmt.Errorf("test %s: the server granted %d packets for %g s on port %d: not a valid grant", id, rep.Packets, rep.DurationS, rep.Port)
	}
	conn, err := net.Dial("udp", net.JoinHostPort(api.Base.Hostname(), fmt.Sprint(rep.Port)))
	if err != nil {
		return nil, &rep, fmt.Errorf("test %s: UDP socket to the server: %w", id, err)
	}
	uc := conn.(*net.UDPConn)
	_ = uc.SetWriteBuffer(4 << 20)
	_ = uc.SetReadBuffer(4 << 20)
	if cfg.ECN {
		_ = ipv4.NewConn(uc).SetTOS(0x02) // ECT(0)
	}
	rx, err := stamp.NewConn(uc)
	if err != nil || !rx.KernelTimestamps {
		rx = nil
	}
	n := rep.Packets
	now := time.Now()
	l := &loop{uc: uc, rx: rx, token: rep.Token, size: size, limit: n, started: now,
		end: now.Add(time.Duration(rep.DurationS * float64(time.Second))), buf: make([]byte, size), ecn: cfg.ECN,
		sendNs: make([]int64, n), rttNs: make([]int64, n), fate: make([]uint8, n), first: -1}
	return l, &rep, nil
}

// run reads the feedback until the socket closes.
func (l *loop) run() {
	buf := make([]byte, mbmwire.FeedbackLen(mbmwire.MaxFeedbackPackets)+1)
	oob := make([]byte, stamp.OOBLen())
	for {
		var n int
		var err error
		at := time.Now()
		if l.rx != nil {
			var info stamp.RecvInfo
			n, info, err = l.rx.Read(buf, oob)
			if at = info.At; info.KernelNs > 0 {
				at = time.Unix(0, info.KernelNs) // CLOCK_REALTIME, as the send times
			}
		} else {
			n, err = l.uc.Read(buf)
			at = time.Now()
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP errors: the silence check ends the test
		}
		f, err := mbmwire.ParseFeedback(buf[:n])
		if err != nil || f.Token != l.token {
			continue
		}
		l.observe(&f, at)
	}
}

// observe applies one feedback received at now.
func (l *loop) observe(f *mbmwire.Feedback, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastFB = now
	if next := int64(f.Next); next > l.next && next <= l.sent {
		// The arrival that sent this feedback: its round trip. (A timer
		// feedback carries no new Next unless the per-arrival one was
		// lost; then the sample is late by at most the timer's 10 ms.)
		l.next = next
		if s := l.sendNs[next-1]; s > 0 {
			l.rttNs[next-1] = max(now.UnixNano()-s, 1)
		}
	}
	l.received = max(l.received, int64(f.Received))
	first, end := int64(f.First), int64(f.First)+int64(f.Count)
	if first > l.final {
		l.gaps++ // the end report fills them
	}
	for seq := max(first, l.final); seq < end && seq < l.sent; seq++ {
		if l.fate[seq] != fateUnknown {
			continue
		}
		arrived, ce := f.Fate(uint32(seq - first))
		l.setFate(seq, arrived, ce)
	}
	l.final = max(l.final, min(end, l.sent))
}

// setFate records packet seq's final fate (l.mu held).
func (l *loop) setFate(seq int64, arrived, ce bool) {
	switch {
	case !arrived:
		l.fate[seq] = fateLost
		l.lost++
	case ce:
		l.fate[seq] = fateCE
	default:
		l.fate[seq] = fateArrived
	}
	if l.fate[seq] != fateArrived {
		l.marks++
		if seq >= l.markFrom && (l.first < 0 || seq < l.first) {
			l.first = seq
		}
	}
}

// state is what the sender steers by.
type loopState struct {
	sent, inflight, final, firstMark int64
	lastFB                           time.Time
}

func (l *loop) state() loopState {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Acknowledged: arrived (the server's count) or final and lost.
	return loopState{sent: l.sent, inflight: l.sent - l.received - l.lost, final: l.final, firstMark: l.first, lastFB: l.lastFB}
}

// send sends the next packet now; false when the grant is spent.
func (l *loop) send() (bool, error) {
	l.mu.Lock()
	seq := l.sent
	l.mu.Unlock()
	now := time.Now()
	if seq >= l.limit || now.After(l.end) {
		return false, nil
	}
	mbmwireData(l.buf, l.token, seq, now, 0, uint32(seq))
	l.mu.Lock()
	l.sendNs[seq] = now.UnixNano()
	l.sent = seq + 1
	l.mu.Unlock()
	if _, err := l.uc.Write(l.buf); err != nil {
		if !isTransient(err) {
			return false, fmt.Errorf("send: %w", err)
		}
		l.mu.Lock()
		l.sendErrs++ // lost on this host: the pattern was not produced
		l.mu.Unlock()
	}
	return true, nil
}

// waitUntil polls cond every 50 µs until it holds, the context ends or
// the server falls silent.
func (l *loop) waitUntil(ctx context.Context, cond func(loopState) bool) error {
	for {
		st := l.state()
		if cond(st) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		if now.Sub(l.started) > serverSilence && (st.lastFB.IsZero() || now.Sub(st.lastFB) > serverSilence) && st.sent > 0 {
			return fmt.Errorf("no feedback from the server for %s", serverSilence)
		}
		if now.After(l.end) {
			return errGrantOver
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// errGrantOver ends a closed-loop test at the end of the server's grant.
var errGrantOver = errors.New("the server's grant is over")

// baseRTT sends n packets one at a time (a window of one, each waited
// for at most wait: a lost one is never final until later ones arrive)
// and returns the least round trip: the path's RTT without a queue of
// this test's making. The first mark counts from the packet after them.
func (l *loop) baseRTT(ctx context.Context, n int, wait time.Duration) (time.Duration, error) {
	for range n {
		ok, err := l.send()
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, errGrantOver
		}
		sent := l.state().sent
		err = l.waitUntilFor(ctx, wait, func(s loopState) bool { return s.inflight <= 0 || s.final >= sent })
		if err != nil && (ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded)) {
			return 0, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.first, l.markFrom = -1, l.sent
	var least int64
	for _, r := range l.rttNs[:l.sent] {
		if r > 0 && (least == 0 || r < least) {
			least = r
		}
	}
	if least == 0 {
		return 0, errors.New("no round trip measured: every probe was lost")
	}
	return time.Duration(least), nil
}

// finish ends the session and completes the record with the server's
// exact fates (feedback lost on the way is made up here).
func (l *loop) finish(ctx context.Context, api *apiclient.Client, rep *mbmwire.SessionReply, verdict model.MBMVerdict, reason string) (mbmwire.Report, error) {
	l.mu.Lock()
	sent := l.sent
	l.mu.Unlock()
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var final mbmwire.Report
	err := api.Call(endCtx, http.MethodPost, mbmwire.PathSessions+"/"+rep.ID+"/end",
		mbmwire.EndRequest{Sent: sent, From: 0, Verdict: verdict, Reason: reason}, &final)
	l.uc.Close()
	if err == nil && (final.Sent != sent || final.From != 0) {
		err = fmt.Errorf("the server's report covers %d packets from %d, want %d from 0", final.Sent, final.From, sent)
	}
	if err != nil {
		return final, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for seq := int64(0); seq < sent; seq++ {
		if l.fate[seq] != fateUnknown {
			continue
		}
		arrived, ce, ok := final.Fate(seq)
		if !ok {
			break
		}
		l.setFate(seq, arrived, ce)
	}
	l.final = sent
	return final, nil
}
