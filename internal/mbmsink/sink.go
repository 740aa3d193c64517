// Package mbmsink is the MBM sink (docs/mbm-protocol.md): the receiving
// end of `sonde mbm`. It owns the sink's UDP socket, its sessions (UDP and
// TCP), the per-packet feedback and the server's record of each run. The
// embedding server mounts its two handlers on its own routes and keeps
// admission: the sink asks its Host for a test slot and the rate limits,
// and hands every refusal back to the Host to answer.
package mbmsink

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
	"github.com/sonde-project/sonde/internal/units"
)

// A client opens a session over HTTP (token, admission and
// limits as every test), sends its pattern to one UDP socket shared by all
// sessions, and gets back, every mbmFeedbackEvery, the final fate of its
// packets, so that it runs the SPRT per packet and stops when it decides.
const (
	// mbmFeedbackEvery is the feedback interval: at 100 Mbit/s, 83 packets.
	mbmFeedbackEvery = 10 * time.Millisecond
	// mbmFeedbackRepeat resends an unchanged feedback, in case the last
	// one was lost.
	mbmFeedbackRepeat = 100 * time.Millisecond
	// mbmSlack is how long a session outlives its granted duration, for
	// the client's end call after its last packets.
	mbmSlack = 10 * time.Second
	// Caps on open MBM sessions, on top of the test admission.
	maxMBMSessions      = 16
	maxMBMSessionsPerIP = 4
	// mbmBin is the width of the received-rate bins; mbmMinWindow the
	// shortest sliding window the minimum received rate is taken over.
	mbmBin       = 10 * time.Millisecond
	mbmMinWindow = time.Second
	mbmBuffer    = 8 << 20
	// mbmArrivalWindow is the window of an arrival-clocked feedback: it
	// carries the counts that clock a windowed sender, and the timer's
	// feedback the fates of the last MaxFeedbackPackets.
	mbmArrivalWindow = 64
	// mbmIPUDPHeaders are the IPv4 and UDP headers of a datagram: rates
	// are of IP packets, as the target's (its MTU-sized packets).
	mbmIPUDPHeaders = 28
	// busyRetry is the Retry-After of a refusal for too many MBM sessions.
	busyRetry = 10 * time.Second
	// reportGrace is how long an ended session's report is kept for a
	// repeated end call.
	reportGrace = 60 * time.Second
)

// Host is the embedding server's side of the sink: its one admission
// path and its limits.
type Host interface {
	// Admit runs the server's admission for a new session: a release
	// (called exactly once) on success, a refusal to pass to Refuse if not.
	Admit(r *http.Request) (release func(), err error)
	// Refuse answers a refusal: an error of Admit, or a *RejectError of
	// the sink's own caps.
	Refuse(w http.ResponseWriter, err error)
	// Limits are the server's UDP test limits: packets and bits per second.
	Limits() (maxPPS, maxBps float64)
}

// RejectError is a refusal by the sink's own caps on open sessions: its
// status, the line the client is shown and the Retry-After.
type RejectError struct {
	Status     int
	Reason     string
	RetryAfter time.Duration
}

func (e *RejectError) Error() string { return e.Reason }

// Options configure a Sink.
type Options struct {
	// Addr is the sink's UDP address; "off" runs no sink.
	Addr string
	// Listen opens the UDP socket at Addr.
	Listen func(addr string) (*stamp.Conn, error)
	// MaxTime and MaxBytes bound one session (MaxBytes 0: no bound).
	MaxTime  time.Duration
	MaxBytes int64
	// Host admits sessions and answers refusals.
	Host Host
	// Started, if set, is called for every session opened.
	Started func()
	// Done, if set, takes every session's record when it ends.
	Done   func(client model.Endpoint, res *model.MBMResult)
	Logger *slog.Logger
}

// Sink owns the MBM socket and sessions.
type Sink struct {
	opt Options

	mu      sync.Mutex
	conn    *stamp.Conn
	done    chan struct{}
	open    map[string]*mbmSession
	byToken map[uint64]*mbmSession
	perIP   map[netip.Addr]int
	ended   map[string]mbmwire.Report // kept for reportGrace
	closed  bool
	// tcpWG counts the TCP sessions' goroutines (mbmtcp.go), which close
	// waits for; acceptTimeout is how long a TCP session waits for its
	// connection (mbmAcceptTimeout; shorter in tests).
	tcpWG         sync.WaitGroup
	acceptTimeout time.Duration
	// listenVia makes the TCP sessions' listeners (MBMListenVia; nil:
	// in this thread's namespace).
	listenVia func(fn func() error) error
	// Datagrams dropped before any session saw them, for the log.
	unknown, malformed int64
}

// mbmSession is one test's record. Its fields are guarded by
// Sink.mu: one reader and one feedback loop touch them.
type mbmSession struct {
	id      string
	token   uint64
	client  netip.Addr
	peer    netip.AddrPort // where feedback goes: the data's source
	req     mbmwire.SessionRequest
	granted int64
	start   time.Time
	release func()
	timer   *time.Timer

	arrived, ce []byte // one bit per granted packet
	next        int64  // highest sequence number seen + 1
	final       int64  // every packet below is final
	tol         int64
	lossTimeout time.Duration
	rep         mbmwire.Report
	first, last time.Time
	bins        []int64 // payload bytes per mbmBin from start, bounded by the grant
	sentFB      int64   // final at the last feedback
	sentFBAt    time.Time
	sentFBRecv  int64

	// tcp is a TCP session's connection (nil: a UDP session).
	tcp *mbmTCP
}

// New returns a sink; its socket opens on the first session or Start.
func New(opt Options) (*Sink, error) {
	switch {
	case opt.Host == nil:
		return nil, errors.New("mbmsink: no host")
	case opt.Listen == nil:
		return nil, errors.New("mbmsink: no listen function")
	case opt.MaxTime <= 0:
		return nil, errors.New("mbmsink: no maximum session duration")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Done == nil {
		opt.Done = func(model.Endpoint, *model.MBMResult) {}
	}
	if opt.Started == nil {
		opt.Started = func() {}
	}
	return &Sink{opt: opt, open: map[string]*mbmSession{}, byToken: map[uint64]*mbmSession{},
		perIP: map[netip.Addr]int{}, ended: map[string]mbmwire.Report{}, acceptTimeout: mbmAcceptTimeout}, nil
}

// Start opens the MBM socket now instead of on the first session, so that
// a bind error shows at start (and, in a test lab, the socket is made in
// the caller's network namespace). It returns the bound address; calling
// it again returns the same.
func (m *Sink) Start() (netip.AddrPort, error) {
	conn, err := m.socket()
	if err != nil {
		return netip.AddrPort{}, err
	}
	return conn.LocalAddr(), nil
}

// socket returns the MBM socket, opening it and its loops on first use.
func (m *Sink) socket() (*stamp.Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Closed first (as the reflector): a session opened during shutdown
	// would be granted a socket that is closed.
	if m.closed {
		return nil, errors.New("server is shutting down")
	}
	if m.conn != nil {
		return m.conn, nil
	}
	if m.opt.Addr == "off" {
		return nil, errors.New("this server runs no MBM sink (--mbm-addr off)")
	}
	conn, err := m.opt.Listen(m.opt.Addr)
	if err != nil {
		return nil, fmt.Errorf("MBM socket: %w", err)
	}
	conn.SetBuffers(mbmBuffer)
	m.conn = conn
	m.done = make(chan struct{})
	stop := make(chan struct{})
	go m.feedbackLoop(conn, stop)
	go func() {
		defer close(m.done)
		defer close(stop)
		m.readLoop(conn)
	}()
	return conn, nil
}

// Close ends every session and closes the socket.
func (m *Sink) Close() {
	m.mu.Lock()
	m.closed = true
	for _, ses := range m.open {
		ses.timer.Stop()
		m.drop(ses)
		if ses.tcp != nil {
			ses.tcp.stop()
		}
	}
	conn, done := m.conn, m.done
	m.mu.Unlock()
	m.tcpWG.Wait()
	if conn != nil {
		conn.Close()
		<-done
	}
}

// drop forgets an open session and frees its slots (m.mu held).
func (m *Sink) drop(ses *mbmSession) {
	delete(m.open, ses.id)
	delete(m.byToken, ses.token)
	if m.perIP[ses.client]--; m.perIP[ses.client] <= 0 {
		delete(m.perIP, ses.client)
	}
	ses.release()
}

// HandleOpen opens a session (POST mbmwire.PathSessions): a route that
// starts work, mounted behind the server's admission.
func (m *Sink) HandleOpen(w http.ResponseWriter, r *http.Request) {
	var req mbmwire.SessionRequest
	if !protocol.DecodeBody(w, r, 16<<10, "MBM session request", &req) {
		return
	}
	if err := req.Validate(); err != nil {
		protocol.WriteError(w, http.StatusBadRequest, "MBM session: "+err.Error())
		return
	}
	if req.Transport == mbmwire.TransportTCP {
		ip, err := netip.ParseAddr(httpload.ClientIP(r))
		if err != nil {
			protocol.WriteError(w, http.StatusBadRequest, "MBM session: cannot tell the client's address")
			return
		}
		m.openTCP(w, r, req, ip.Unmap())
		return
	}
	maxPPS, maxBps := m.opt.Host.Limits()
	pps := req.RateBps / (8 * float64(req.PacketBytes))
	switch {
	case req.RateBps > maxBps:
		protocol.WriteError(w, http.StatusBadRequest, fmt.Sprintf("MBM session: %s exceeds this server's limit of %s", units.FormatRate(req.RateBps), units.FormatRate(maxBps)))
		return
	case pps > maxPPS:
		protocol.WriteError(w, http.StatusBadRequest, fmt.Sprintf("MBM session: %.0f packets/s exceeds this server's limit of %.0f", pps, maxPPS))
		return
	}
	ip, err := netip.ParseAddr(httpload.ClientIP(r))
	if err != nil {
		protocol.WriteError(w, http.StatusBadRequest, "MBM session: cannot tell the client's address")
		return
	}
	ip = ip.Unmap()
	grant := min(time.Duration(req.DurationS*float64(time.Second)), m.opt.MaxTime)
	// The packets granted: what was asked, bounded by the duration at the
	// rate (with room for a sender catching up) and the byte limit. The
	// record is sized from this, never from a packet.
	packets := min(req.Packets, int64(math.Ceil(pps*grant.Seconds()*1.05))+64)
	if m.opt.MaxBytes > 0 {
		packets = min(packets, m.opt.MaxBytes/int64(req.PacketBytes))
	}
	if packets < 1 {
		protocol.WriteError(w, http.StatusBadRequest, fmt.Sprintf("MBM session: this server's byte limit (%d) allows no packet of %d bytes", m.opt.MaxBytes, req.PacketBytes))
		return
	}
	conn, err := m.socket()
	if err != nil {
		protocol.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	release, ok := m.admitSlot(w, r, ip)
	if !ok {
		return
	}
	now := time.Now()
	nb := (packets + 7) / 8
	ses := &mbmSession{
		id: newID(), token: newToken(), client: ip, req: req, granted: packets, start: now, release: release,
		arrived: make([]byte, nb), ce: make([]byte, nb), tol: int64(req.ReorderPackets),
		lossTimeout: time.Duration(req.LossTimeoutMs * float64(time.Millisecond)),
		bins:        make([]int64, int((grant+mbmSlack)/mbmBin)+1),
	}
	ses.rep.ID = ses.id
	expires := grant + mbmSlack
	m.mu.Lock()
	for m.byToken[ses.token] != nil { // 2^-64, but never two sessions on one token
		ses.token = newToken()
	}
	m.open[ses.id], m.byToken[ses.token] = ses, ses
	ses.timer = time.AfterFunc(expires, func() { m.expire(ses.id) })
	m.mu.Unlock()
	m.opt.Started()
	m.opt.Logger.Info("mbm session", "id", ses.id, "client", ip, "test", req.Test, "rate_bps", req.RateBps, "packets", packets, "grant", grant, "software", req.Client)
	protocol.WriteJSON(w, http.StatusOK, mbmwire.SessionReply{
		ID: ses.id, Token: ses.token, Port: int(conn.LocalAddr().Port()), Packets: packets,
		DurationS: grant.Seconds(), ExpiresS: expires.Seconds(), FeedbackMs: float64(mbmFeedbackEvery) / 1e6, MaxRateBps: maxBps,
	})
}

// admitSlot takes an MBM slot for ip (the caps per client and in all)
// and the test admission; on refusal it has answered w. A session that
// then fails before it opens gives both back with unslot.
func (m *Sink) admitSlot(w http.ResponseWriter, r *http.Request, ip netip.Addr) (release func(), ok bool) {
	m.mu.Lock()
	total := 0 // open and being admitted
	for _, n := range m.perIP {
		total += n
	}
	if total >= maxMBMSessions || m.perIP[ip] >= maxMBMSessionsPerIP {
		m.mu.Unlock()
		m.opt.Host.Refuse(w, &RejectError{Status: http.StatusServiceUnavailable, RetryAfter: busyRetry,
			Reason: fmt.Sprintf("MBM session: too many MBM sessions (limit %d per client, %d in all)", maxMBMSessionsPerIP, maxMBMSessions)})
		return nil, false
	}
	m.perIP[ip]++ // held while admitting, so two requests cannot both take the last slot
	m.mu.Unlock()
	release, err := m.opt.Host.Admit(r)
	if err != nil {
		m.unslot(ip, nil)
		m.opt.Host.Refuse(w, err)
		return nil, false
	}
	return release, true
}

// unslot gives back a slot admitSlot took, and the admission (release,
// if not nil).
func (m *Sink) unslot(ip netip.Addr, release func()) {
	m.mu.Lock()
	if m.perIP[ip]--; m.perIP[ip] <= 0 {
		delete(m.perIP, ip)
	}
	m.mu.Unlock()
	if release != nil {
		release()
	}
}

func newToken() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}

// readLoop records every data datagram until the socket closes.
func (m *Sink) readLoop(conn *stamp.Conn) {
	buf := make([]byte, 65536)
	oob := make([]byte, stamp.OOBLen())
	fbBuf := make([]byte, 0, mbmwire.FeedbackLen(mbmwire.MaxFeedbackPackets))
	for {
		n, info, err := conn.Read(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. an ICMP error queued on the socket
		}
		d, err := mbmwire.ParseData(buf[:n])
		m.mu.Lock()
		if err != nil {
			m.malformed++
			m.mu.Unlock()
			continue
		}
		ses := m.byToken[d.Token]
		if ses == nil || info.From.Addr().Unmap() != ses.client {
			m.unknown++
			m.mu.Unlock()
			continue
		}
		if !ses.peer.IsValid() {
			ses.peer = info.From
		}
		ses.record(int64(d.Seq), n, info.TOS >= 0 && info.TOS&3 == 3, info.At)
		var fb []byte
		if k := int64(ses.req.FeedbackPackets); k > 0 && ses.rep.Received-ses.sentFBRecv >= k {
			// An arrival-clocked feedback, for a windowed sender.
			ses.finalize(info.At)
			fb = ses.appendFeedback(fbBuf[:0], mbmArrivalWindow)
			ses.sentFB, ses.sentFBRecv, ses.sentFBAt = ses.final, ses.rep.Received, info.At
		}
		peer := ses.peer
		m.mu.Unlock()
		if fb != nil {
			_ = conn.WriteTo(fb, peer, -1)
		}
	}
}

// record counts one arrival (RFC 4737: an arrival below the highest
// sequence number seen is reordered; RFC 8337 §7.3 reports it).
func (ses *mbmSession) record(seq int64, n int, ce bool, at time.Time) {
	r := &ses.rep
	switch {
	case seq >= ses.granted:
		r.OutOfRange++
		return
	case bit(ses.arrived, seq):
		r.Duplicates++
		return
	case seq < ses.final:
		// Its fate was already reported lost: it stays lost (a TCP
		// sender would have retransmitted it by now).
		r.Late++
		r.Reordered++
		return
	}
	setBit(ses.arrived, seq)
	if ce {
		setBit(ses.ce, seq)
		r.CE++
	}
	r.Received++
	r.Bytes += int64(n)
	if seq < ses.next {
		r.Reordered++
	} else {
		ses.next = seq + 1
	}
	if ses.first.IsZero() {
		ses.first = at
	}
	ses.last = at
	if i := int(at.Sub(ses.start) / mbmBin); i >= 0 && i < len(ses.bins) {
		ses.bins[i] += int64(n + mbmIPUDPHeaders)
	}
}

func bit(b []byte, i int64) bool { return b[i/8]&(1<<(i%8)) != 0 }
func setBit(b []byte, i int64)   { b[i/8] |= 1 << (i % 8) }

// finalize advances the final cursor: a packet is final once one
// ReorderPackets later has arrived, or when nothing arrived for the loss
// timeout (then every packet up to the highest seen is).
func (ses *mbmSession) finalize(now time.Time) {
	f := ses.next - ses.tol
	if !ses.last.IsZero() && now.Sub(ses.last) >= ses.lossTimeout {
		f = ses.next
	}
	ses.final = max(ses.final, min(f, ses.granted))
}

// feedbackLoop sends each session's new final fates every mbmFeedbackEvery.
func (m *Sink) feedbackLoop(conn *stamp.Conn, stop <-chan struct{}) {
	t := time.NewTicker(mbmFeedbackEvery)
	defer t.Stop()
	var out []byte
	type send struct {
		to netip.AddrPort
		b  []byte
	}
	var sends []send
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			m.mu.Lock()
			sends = sends[:0]
			out = out[:0]
			for _, ses := range m.open {
				if !ses.peer.IsValid() {
					continue
				}
				ses.finalize(now)
				if ses.final == ses.sentFB && ses.rep.Received == ses.sentFBRecv && now.Sub(ses.sentFBAt) < mbmFeedbackRepeat {
					continue
				}
				start := len(out)
				out = ses.appendFeedback(out, mbmwire.MaxFeedbackPackets)
				ses.sentFB, ses.sentFBRecv, ses.sentFBAt = ses.final, ses.rep.Received, now
				sends = append(sends, send{ses.peer, out[start:]})
			}
			m.mu.Unlock()
			for _, sd := range sends {
				_ = conn.WriteTo(sd.b, sd.to, -1) // a lost feedback is resent or made up at the end
			}
		}
	}
}

// appendFeedback appends the feedback datagram for the last window
// (≤ MaxFeedbackPackets) final packets.
func (ses *mbmSession) appendFeedback(b []byte, window int64) []byte {
	first := max(0, ses.final-window)
	count := ses.final - first
	r := &ses.rep
	f := mbmwire.Feedback{Token: ses.token, First: uint64(first), Count: uint32(count), Next: uint64(ses.next),
		Received: uint64(r.Received), CE: uint64(r.CE), Duplicates: uint64(r.Duplicates), Reordered: uint64(r.Reordered), Late: uint64(r.Late),
		Arrived: bitRange(ses.arrived, first, count), CEMarks: bitRange(ses.ce, first, count)}
	b, _ = mbmwire.AppendFeedback(b, &f) // count ≤ MaxFeedbackPackets by construction
	return b
}

// bitRange copies bits from … from+n−1 of b into a new bitmap.
func bitRange(b []byte, from, n int64) []byte {
	out := make([]byte, (n+7)/8)
	if from%8 == 0 {
		copy(out, b[from/8:])
		if n%8 != 0 {
			out[len(out)-1] &= byte(1<<(n%8)) - 1
		}
		return out
	}
	for i := int64(0); i < n; i++ {
		if bit(b, from+i) {
			out[i/8] |= 1 << (i % 8)
		}
	}
	return out
}

// report is the session's record with the fates of From … Sent−1; every
// packet sent and never seen is lost (m.mu held).
func (ses *mbmSession) report(sent, from int64) mbmwire.Report {
	ses.final = max(ses.final, sent)
	r := ses.rep
	r.Sent, r.From = sent, from
	r.Arrived, r.CEMarks = bitRange(ses.arrived, from, sent-from), bitRange(ses.ce, from, sent-from)
	if !ses.first.IsZero() {
		r.FirstNs, r.LastNs = ses.first.UnixNano(), ses.last.UnixNano()
		if span := ses.last.Sub(ses.first); span > 0 {
			r.RateBps = float64(r.Bytes+r.Received*mbmIPUDPHeaders) * 8 / span.Seconds()
		}
		r.MinRateBps, r.WindowMs = ses.minRate(r.RateBps)
	}
	if ses.tcp != nil {
		ses.tcp.report(&r)
	}
	return r
}

// minRate is the least received rate over sliding windows within the
// arrivals' span: the receiver's side of the rate precondition.
func (ses *mbmSession) minRate(mean float64) (bps, windowMs float64) {
	win := max(mbmMinWindow, time.Duration(4*ses.req.TargetRTTMs*float64(time.Millisecond)))
	lo := int(ses.first.Sub(ses.start) / mbmBin)
	hi := min(int(ses.last.Sub(ses.start)/mbmBin)+1, len(ses.bins))
	least, ok := mbm.LeastWindow(ses.bins[min(lo, hi):hi], int(win/mbmBin))
	if !ok { // shorter than one window: the whole span
		return mean, float64(ses.last.Sub(ses.first)) / 1e6
	}
	return float64(least) * 8 / win.Seconds(), float64(win) / 1e6
}

// HandleEnd ends a session (POST mbmwire.PathSessions/{id}/end): a route
// inside the session its unguessable ID names.
func (m *Sink) HandleEnd(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req mbmwire.EndRequest
	if !protocol.DecodeBody(w, r, 16<<10, "MBM end request", &req) {
		return
	}
	m.mu.Lock()
	ses := m.open[id]
	if ses != nil && ses.tcp != nil {
		if err := req.Validate(ses.granted); err != nil {
			m.mu.Unlock()
			protocol.WriteError(w, http.StatusBadRequest, "MBM end: "+err.Error())
			return
		}
		m.mu.Unlock()
		m.finishTCP(ses.tcp) // its last bytes counted before the report
		m.mu.Lock()
		ses = m.open[id] // nil if it expired meanwhile
	}
	if ses == nil {
		rep, ok := m.ended[id]
		m.mu.Unlock()
		if !ok {
			protocol.WriteError(w, http.StatusNotFound, "unknown or expired MBM session")
			return
		}
		protocol.WriteJSON(w, http.StatusOK, rep) // a repeated end call
		return
	}
	if err := req.Validate(ses.granted); err != nil {
		m.mu.Unlock()
		protocol.WriteError(w, http.StatusBadRequest, "MBM end: "+err.Error())
		return
	}
	ses.timer.Stop()
	rep := ses.report(req.Sent, req.From)
	m.drop(ses)
	m.keep(id, rep)
	m.mu.Unlock()
	m.finished(ses.endpoint(), ses.result(rep, req.Verdict, req.Reason))
	protocol.WriteJSON(w, http.StatusOK, rep)
}

// keep holds an ended session's report (without its bitmaps) for a
// repeated end call (m.mu held).
func (m *Sink) keep(id string, rep mbmwire.Report) {
	rep.Arrived, rep.CEMarks = nil, nil
	m.ended[id] = rep
	time.AfterFunc(reportGrace, func() {
		m.mu.Lock()
		delete(m.ended, id)
		m.mu.Unlock()
	})
}

// expire ends a session whose client never ended it (it vanished).
func (m *Sink) expire(id string) {
	m.mu.Lock()
	ses := m.open[id]
	if ses == nil {
		m.mu.Unlock()
		return
	}
	rep := ses.report(ses.next, ses.next)
	m.drop(ses)
	if ses.tcp != nil {
		ses.tcp.stop()
	}
	m.keep(id, rep)
	m.mu.Unlock()
	m.opt.Logger.Info("mbm session expired", "id", id, "received", rep.Received)
	m.finished(ses.endpoint(), ses.result(rep, "", "the client did not end the session: what the server received"))
}

// result is the server's record of a session as a sonde.mbm/v1 result:
// its own counts over every packet sent (growth included), with the
// verdict the client sent.
func (ses *mbmSession) result(rep mbmwire.Report, verdict model.MBMVerdict, reason string) *model.MBMResult {
	q := ses.req
	if ses.tcp != nil {
		return ses.tcpResult(rep, verdict, reason)
	}
	lost := max(rep.Sent-rep.Received, 0)
	return &model.MBMResult{
		Schema: model.MBMSchemaVersion, ID: ses.id, Start: ses.start, End: time.Now(),
		Target: model.MBMTarget{RateBps: q.RateBps, RTTMs: q.TargetRTTMs, MTUBytes: q.TargetMTU},
		Tests: []model.MBMTest{{ID: q.Test, Transport: "udp", Verdict: verdict, Reason: reason,
			Packets: rep.Sent, Marks: lost + rep.CE, Losses: lost, CE: rep.CE,
			UDP: &model.MBMUDP{PacketsSent: rep.Sent, Reordered: rep.Reordered, Duplicates: rep.Duplicates, Late: rep.Late,
				ReceiverRateBps: rep.RateBps, ReceiverMinRateBps: rep.MinRateBps, RateWindowMs: rep.WindowMs}}},
	}
}

// endpoint names the session's client for the archive.
func (ses *mbmSession) endpoint() model.Endpoint {
	return model.Endpoint{Address: ses.client.String(), Software: ses.req.Client}
}

// finished is where a session ends, with what the sink measured and the
// verdict the client sent.
func (m *Sink) finished(client model.Endpoint, res *model.MBMResult) {
	m.opt.Logger.Info("mbm session ended", "id", res.ID, "tests", len(res.Tests))
	m.opt.Done(client, res)
}

// newID is a session's unguessable ID: it names the session on its end
// route, which the server admits by that name alone.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
