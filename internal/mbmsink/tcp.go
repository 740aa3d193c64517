package mbmsink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/tcpinfo"
	"github.com/sonde-project/sonde/internal/units"
)

// MBM over TCP (docs/mbm-protocol.md, "TCP sessions"): for 8.1.2 the
// window must be the receiver's, bounded before the handshake
// (mbm-notes.md fact 4: TCP_WINDOW_CLAMP is not inherited from a listener
// and set after accept does not bring the window down; SO_RCVBUF on the
// listener before listen() does). So each TCP session has its own
// listener, with SO_RCVBUF set in its Control function, that accepts one
// connection (the client's address, the session token first) and is
// closed at once; the server reads and discards, samples its own
// TCP_INFO for the window it advertised, and reports both in the end
// reply.
const (
	// mbmAcceptTimeout is how long a TCP session waits for its
	// connection; then its listener closes and its slots are released.
	mbmAcceptTimeout = 5 * time.Second
	// mbmTokenTimeout bounds the wait for a connection's token: a silent
	// connection holds the single accept loop no longer.
	mbmTokenTimeout = time.Second
	// mbmTCPReadSlack is how long the connection may outlive the granted
	// duration.
	mbmTCPReadSlack = 2 * time.Second
	// mbmEOFWait is how long an end call waits for the client's EOF (its
	// last bytes in flight) before the server closes the connection.
	mbmEOFWait = 2 * time.Second
	// mbmWindowSample is the least interval between two readings of the
	// server's TCP_INFO while it reads.
	mbmWindowSample = 5 * time.Millisecond
)

// mbmTCP is a TCP session's connection. Its fields but done are guarded
// by Sink.mu.
type mbmTCP struct {
	ln      net.Listener
	conn    net.Conn
	stopped bool
	done    chan struct{} // closed when serveTCP returns
	rep     mbmwire.TCPReport
	first   time.Time
	last    time.Time
}

// stop closes the listener and the connection (m.mu held): serveTCP then
// returns soon.
func (t *mbmTCP) stop() {
	t.stopped = true
	_ = t.ln.Close()
	if t.conn != nil {
		_ = t.conn.Close()
	}
}

// ListenVia makes the listeners of TCP sessions through via, e.g. in a
// lab's server namespace (netns.Do), as Start makes the MBM socket in the
// caller's: made on demand, a listener would otherwise be made in the
// namespace of whatever thread asked.
func (m *Sink) ListenVia(via func(fn func() error) error) {
	m.mu.Lock()
	m.listenVia = via
	m.mu.Unlock()
}

// openTCP opens a TCP session for a validated request from ip.
func (m *Sink) openTCP(w http.ResponseWriter, r *http.Request, req mbmwire.SessionRequest, ip netip.Addr) {
	_, maxBps := m.opt.Host.Limits()
	if req.RateBps > maxBps {
		protocol.WriteError(w, http.StatusBadRequest, fmt.Sprintf("MBM session: %s exceeds this server's limit of %s", units.FormatRate(req.RateBps), units.FormatRate(maxBps)))
		return
	}
	conn, err := m.socket() // the MBM address, and a server that runs MBM at all
	if err != nil {
		protocol.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	grant := min(time.Duration(req.DurationS*float64(time.Second)), m.opt.MaxTime)
	release, ok := m.admitSlot(w, r, ip)
	if !ok {
		return
	}
	set := req.ReceiveBufferBytes
	if set == 0 {
		set = mbmwire.ReceiveBufferFor(req.ReceiveWindowBytes)
	}
	var (
		ln   net.Listener
		held int
	)
	listen := func() (err error) {
		ln, held, err = listenRcvbuf(netip.AddrPortFrom(conn.LocalAddr().Addr(), 0), set)
		return err
	}
	m.mu.Lock()
	via := m.listenVia
	m.mu.Unlock()
	if via != nil {
		err = via(listen)
	} else {
		err = listen()
	}
	if err == nil && held < 2*set {
		ln.Close()
		err = fmt.Errorf("SO_RCVBUF %d reads back %d, not doubled: this server's kernel caps it (net.core.rmem_max), ask for a smaller window", set, held)
	}
	if err != nil {
		m.unslot(ip, release)
		protocol.WriteError(w, http.StatusServiceUnavailable, "MBM TCP session: "+err.Error())
		return
	}
	now := time.Now()
	tc := &mbmTCP{ln: ln, done: make(chan struct{}),
		rep: mbmwire.TCPReport{ReceiveWindowBytes: req.ReceiveWindowBytes, ReceiveBufferSetBytes: set, ReceiveBufferBytes: held}}
	ses := &mbmSession{id: newID(), token: newToken(), client: ip, req: req, start: now, release: release, tcp: tc}
	ses.rep.ID = ses.id
	expires := grant + mbmSlack
	m.mu.Lock()
	if m.closed { // shut down since the socket was checked: close waits for no goroutine of ours
		m.mu.Unlock()
		ln.Close()
		m.unslot(ip, release)
		protocol.WriteError(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	for m.byToken[ses.token] != nil {
		ses.token = newToken()
	}
	m.open[ses.id], m.byToken[ses.token] = ses, ses
	ses.timer = time.AfterFunc(expires, func() { m.expire(ses.id) })
	m.tcpWG.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.tcpWG.Done()
		m.serveTCP(ses, now.Add(grant+mbmTCPReadSlack))
	}()
	m.opt.Started()
	m.opt.Logger.Info("mbm tcp session", "id", ses.id, "client", ip, "test", req.Test, "rate_bps", req.RateBps,
		"window", req.ReceiveWindowBytes, "rcvbuf", set, "rcvbuf_held", held, "grant", grant, "software", req.Client)
	protocol.WriteJSON(w, http.StatusOK, mbmwire.SessionReply{
		ID: ses.id, Token: ses.token, TCPPort: ln.Addr().(*net.TCPAddr).Port, ReceiveBufferBytes: held,
		DurationS: grant.Seconds(), ExpiresS: expires.Seconds(), MaxRateBps: maxBps,
	})
}

// serveTCP accepts the session's one connection and reads it until EOF,
// readUntil, the byte limit or stop.
func (m *Sink) serveTCP(ses *mbmSession, readUntil time.Time) {
	tc := ses.tcp
	defer close(tc.done)
	c := m.acceptTCP(ses)
	if c == nil {
		m.noConnect(ses)
		return
	}
	defer c.Close()
	m.mu.Lock()
	if tc.stopped { // ended or shut down while it arrived
		m.mu.Unlock()
		return
	}
	tc.conn = c
	tc.rep.Connected = true
	m.mu.Unlock()
	_ = c.SetReadDeadline(readUntil)
	rc, _ := tcpinfo.RawConn(c)
	limit := m.opt.MaxBytes
	buf := make([]byte, 64<<10)
	var (
		maxWnd     uint32
		lastSample time.Time
		total      int64
	)
	for {
		n, err := c.Read(buf)
		now := time.Now()
		total += int64(n)
		if rc != nil && now.Sub(lastSample) >= mbmWindowSample {
			if smp, err := tcpinfo.Read(rc, 0); err == nil {
				maxWnd = max(maxWnd, smp.RcvWnd)
			}
			lastSample = now
		}
		m.mu.Lock()
		if n > 0 {
			if tc.first.IsZero() {
				tc.first = now
			}
			tc.last = now
		}
		tc.rep.Bytes = total
		tc.rep.MaxRcvWndBytes = maxWnd
		m.mu.Unlock()
		if err != nil || (limit > 0 && total >= limit) {
			break
		}
	}
	// The receiver's readback, from the connection itself.
	var rcvSpace uint32
	var rcvbuf, clamp int
	if rc != nil {
		if smp, err := tcpinfo.Read(rc, 0); err == nil {
			maxWnd = max(maxWnd, smp.RcvWnd)
			rcvSpace = smp.RcvSpace
		}
		_, rcvbuf, _ = tcpinfo.Buffers(c)
		clamp = windowClamp(rc)
	}
	m.mu.Lock()
	tc.rep.MaxRcvWndBytes, tc.rep.RcvSpaceBytes, tc.rep.WindowClampBytes = maxWnd, rcvSpace, clamp
	if rcvbuf > 0 {
		tc.rep.ReceiveBufferBytes = rcvbuf
	}
	m.mu.Unlock()
}

// acceptTCP returns the session's connection: the first from the
// client's address that writes the session's token, within
// mbmAcceptTimeout. Others are closed. The listener is closed on return.
func (m *Sink) acceptTCP(ses *mbmSession) net.Conn {
	tc := ses.tcp
	defer tc.ln.Close()
	deadline := time.Now().Add(m.acceptTimeout)
	if l, ok := tc.ln.(*net.TCPListener); ok {
		_ = l.SetDeadline(deadline)
	}
	for {
		c, err := tc.ln.Accept()
		if err != nil {
			return nil // the deadline, or stop
		}
		tokenBy := time.Now().Add(mbmTokenTimeout)
		if deadline.Before(tokenBy) {
			tokenBy = deadline
		}
		if m.tokenOK(c, ses, tokenBy) {
			_ = c.SetReadDeadline(time.Time{})
			return c
		}
		c.Close()
		m.mu.Lock()
		tc.rep.Rejected++
		m.mu.Unlock()
	}
}

// tokenOK says whether c comes from the session's client and writes its
// token first, by deadline.
func (m *Sink) tokenOK(c net.Conn, ses *mbmSession, deadline time.Time) bool {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil || ap.Addr().Unmap() != ses.client {
		return false
	}
	var b [mbmwire.TCPTokenLen]byte
	_ = c.SetReadDeadline(deadline)
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return false
	}
	return binary.BigEndian.Uint64(b[:]) == ses.token
}

// noConnect ends a TCP session whose client never connected: its slots
// are released at once.
func (m *Sink) noConnect(ses *mbmSession) {
	m.mu.Lock()
	// Stopped: an end call, the expiry or shutdown has it.
	if ses.tcp.stopped || m.open[ses.id] != ses {
		m.mu.Unlock()
		return
	}
	ses.timer.Stop()
	rep := ses.report(0, 0)
	m.drop(ses)
	m.keep(ses.id, rep)
	m.mu.Unlock()
	m.opt.Logger.Info("mbm tcp session: no connection", "id", ses.id, "rejected", rep.TCP.Rejected)
	m.finished(ses.endpoint(), ses.result(rep, "", fmt.Sprintf("the client did not connect within %s", m.acceptTimeout)))
}

// finishTCP waits for the session's EOF (its last bytes), at most
// mbmEOFWait, then stops it and waits for serveTCP. It waits too when
// the connection is not accepted yet: a client that wrote its bytes and
// closed may call end before the accept loop took the connection from
// the kernel's backlog, and its bytes must still be counted.
func (m *Sink) finishTCP(tc *mbmTCP) {
	select {
	case <-tc.done:
		return
	case <-time.After(mbmEOFWait):
	}
	m.mu.Lock()
	tc.stop()
	m.mu.Unlock()
	<-tc.done
}

// report is a TCP session's readback for its report (m.mu held).
func (t *mbmTCP) report(r *mbmwire.Report) {
	rep := t.rep
	r.TCP = &rep
	r.Bytes = rep.Bytes
	if !t.first.IsZero() {
		r.FirstNs, r.LastNs = t.first.UnixNano(), t.last.UnixNano()
		if span := t.last.Sub(t.first); span > 0 {
			r.RateBps = float64(rep.Bytes) * 8 / span.Seconds()
		}
	}
}

var errTCPUnsupported = errors.New("MBM over TCP needs a Linux server (SO_RCVBUF before listen, TCP_INFO)")

// tcpResult is a TCP session's record: what bounded the window and what
// arrived (the sender's counts are the client's).
func (ses *mbmSession) tcpResult(rep mbmwire.Report, verdict model.MBMVerdict, reason string) *model.MBMResult {
	q := ses.req
	t := rep.TCP
	return &model.MBMResult{
		Schema: model.MBMSchemaVersion, ID: ses.id, Start: ses.start, End: time.Now(),
		Target: model.MBMTarget{RateBps: q.RateBps, RTTMs: q.TargetRTTMs, MTUBytes: q.TargetMTU},
		Tests: []model.MBMTest{{ID: q.Test, Transport: "tcp", Verdict: verdict, Reason: reason,
			TCP: &model.MBMTCP{ReceiveWindowBytes: t.ReceiveWindowBytes, ReceiveBufferSetBytes: t.ReceiveBufferSetBytes,
				ReceiveBufferBytes: t.ReceiveBufferBytes, ServerMaxRcvWndBytes: int64(t.MaxRcvWndBytes),
				ServerRcvSpaceBytes: int64(t.RcvSpaceBytes), ServerWindowClampBytes: int64(t.WindowClampBytes), ServerBytes: t.Bytes}}},
	}
}
