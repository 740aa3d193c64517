package server

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/stamp"
	"github.com/sonde-project/sonde/internal/units"
)

// UDP reflector defaults (docs/udp.md).
const (
	// STAMPPort is the reflector's default port (RFC 8762).
	STAMPPort = 862
	// udpSlack is how long a UDP session outlives its planned duration, so
	// the last probes' replies (and stragglers up to the client's loss
	// timeout) are still reflected.
	udpSlack = 5 * time.Second
	// maxUDPIntervalUs bounds a session's probe interval: one minute.
	maxUDPIntervalUs = 60e6
	// reflectorBuffer is the reflector socket's receive and send buffer
	// (without CAP_NET_ADMIN the kernel clamps it to net.core.rmem_max
	// and wmem_max).
	reflectorBuffer = 32 << 20
)

// udpService owns a server's STAMP reflector and its sessions: the socket
// opens on first use (or StartUDP), sessions open and close through the
// control endpoints, and each ends by itself at its expiry.
type udpService struct {
	s *Server

	mu      sync.Mutex
	conn    *stamp.Conn
	refl    *stamp.Reflector
	done    chan struct{}
	open    map[string]*udpSession
	reports map[string]stamp.SessionReport // finished, kept for reportGrace
	closed  bool
	// monitors counts open monitor sessions per client address, under
	// its own lock: sessions are released with mu held (close).
	monMu    sync.Mutex
	monitors map[netip.Addr]int
}

type udpSession struct {
	release func()
	timer   *time.Timer
	info    udpInfo // for the session's record
}

func newUDPService(s *Server) *udpService {
	return &udpService{s: s, open: map[string]*udpSession{}, reports: map[string]stamp.SessionReport{}, monitors: map[netip.Addr]int{}}
}

func (s *Server) udpRoutes() {
	s.mux.handleFunc("POST "+stamp.PathSessions, policyAdmit, s.udp.handleOpen)
	s.mux.handleFunc("DELETE "+stamp.PathSessions+"/{id}", policySession, s.udp.handleClose)
}

// StartUDP opens the reflector socket now instead of on the first UDP
// session, so that `sonde serve` reports a bind error at start. It returns
// the bound address; calling it again returns the same.
func (s *Server) StartUDP() (netip.AddrPort, error) {
	refl, err := s.udp.reflector()
	if err != nil {
		return netip.AddrPort{}, err
	}
	return refl.Addr(), nil
}

// reflector returns the running reflector, starting it if needed.
func (u *udpService) reflector() (*stamp.Reflector, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	// Closed first: a session opened during shutdown would be granted a
	// reflector that is about to stop.
	if u.closed {
		return nil, errors.New("server is shutting down")
	}
	if u.refl != nil {
		return u.refl, nil
	}
	addr := u.s.cfg.UDPAddr
	if addr == "off" {
		return nil, errors.New("this server runs no UDP reflector (--udp-addr off)")
	}
	conn, err := u.s.listenUDP(addr, STAMPPort)
	if err != nil {
		return nil, fmt.Errorf("UDP reflector: %w", err)
	}
	// One reader serves every session: 100 sessions at 50 probes/s
	// overflowed 4 MiB (about 1,800 loopback datagrams) while the reader
	// was starved of CPU under load, and the drops showed as forward loss.
	conn.SetBuffers(reflectorBuffer)
	u.conn = conn
	u.refl = stamp.NewReflector(conn, stamp.NewClock())
	u.done = make(chan struct{})
	go func() {
		defer close(u.done)
		if err := u.refl.Serve(); err != nil {
			u.s.cfg.Logger.Error("UDP reflector stopped", "err", err)
		}
	}()
	return u.refl, nil
}

// listenUDP binds one of the server's UDP sockets (the STAMP reflector,
// the MBM sink): addr "" binds port dflt on the main listener's host, or
// an ephemeral port there when dflt is 0, taken or needs privileges (ports
// below 1024 need root or CAP_NET_BIND_SERVICE; sonde clients learn the
// port from the session reply, so only third-party senders need a fixed
// one); any other addr is bound exactly. "off" is the caller's to refuse.
func (s *Server) listenUDP(addr string, dflt int) (*stamp.Conn, error) {
	if addr != "" {
		return stamp.Listen("udp", addr)
	}
	host, _, err := net.SplitHostPort(s.cfg.Addr)
	if err != nil {
		host = ""
	}
	want := net.JoinHostPort(host, strconv.Itoa(dflt))
	conn, err := stamp.Listen("udp", want)
	if dflt == 0 || err == nil || !(errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EADDRINUSE)) {
		return conn, err
	}
	s.cfg.Logger.Warn("UDP port unavailable; using an ephemeral port", "wanted", want, "err", err, "uid", os.Geteuid())
	return stamp.Listen("udp", net.JoinHostPort(host, "0"))
}

// close stops the reflector and ends every UDP session.
func (u *udpService) close() {
	u.mu.Lock()
	u.closed = true
	for id, us := range u.open {
		us.timer.Stop()
		us.release()
		delete(u.open, id)
	}
	conn, done := u.conn, u.done
	u.mu.Unlock()
	if conn != nil {
		conn.Close()
		<-done
	}
}

// limits returns the per-session rate and bit-rate caps.
func (u *udpService) limits() (pps, bps float64) {
	pps, bps = u.s.cfg.UDPMaxRate, u.s.cfg.UDPMaxBitrate
	if pps <= 0 {
		pps = 20000
	}
	if bps <= 0 {
		bps = 200e6
	}
	return pps, bps
}

func (u *udpService) handleOpen(w http.ResponseWriter, r *http.Request) {
	s := u.s
	var req stamp.SessionRequest
	if !s.decodeBody(w, r, 64<<10, "UDP session request", &req) {
		return
	}
	maxPPS, maxBps := u.limits()
	// Every number is checked finite and in range before it becomes a
	// rate or a time.Duration (1e10 s would overflow one).
	switch {
	case !finiteIn(req.DurationS, 0, maxSessionDurationS) || req.DurationS == 0:
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("UDP session: duration_s must be in (0, %d] seconds, got %g", maxSessionDurationS, req.DurationS))
		return
	case !finiteIn(req.IntervalUs, 100, maxUDPIntervalUs):
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("UDP session: interval_us must be in [100, %g] µs, got %g", float64(maxUDPIntervalUs), req.IntervalUs))
		return
	}
	rate := 1e6 / req.IntervalUs
	switch {
	case req.PacketBytes < stamp.BaseLen || req.PacketBytes > stamp.MaxPacketLen:
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("UDP session: packet_bytes must be %d-%d", stamp.BaseLen, stamp.MaxPacketLen))
		return
	case req.DSCP < 0 || req.DSCP > 63 || req.ECN < 0 || req.ECN > 3:
		s.writeError(w, http.StatusBadRequest, "UDP session: dscp must be 0-63 and ecn 0-3")
		return
	case rate > maxPPS:
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("UDP session: %.0f probes/s exceeds this server's limit of %.0f (interval ≥ %.0f µs)", rate, maxPPS, 1e6/maxPPS))
		return
	case rate*float64(req.PacketBytes)*8 > maxBps:
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("UDP session: %s exceeds this server's limit of %s", units.FormatRate(rate*float64(req.PacketBytes)*8), units.FormatRate(maxBps)))
		return
	}
	ip, err := netip.ParseAddr(clientIP(r))
	if err != nil {
		s.writeError(w, http.StatusBadRequest, "UDP session: cannot tell the client's address")
		return
	}
	if req.Monitor {
		u.openMonitor(w, r, req, ip, rate)
		return
	}
	now := time.Now()
	// The grant: what was asked, or the server's limit if lower. The
	// reply says so, so a client sends for the granted time only instead
	// of counting the unreflected rest as loss.
	grant := min(time.Duration(req.DurationS*float64(time.Second)), s.cfg.MaxDuration)
	expires := now.Add(grant + udpSlack)
	release := func() {}
	if req.TestSession != "" {
		// Probes beside a running test: the test's admission covers them,
		// and they end with it.
		ses := s.sessions.get(req.TestSession)
		if ses == nil || ses.ctx.Err() != nil {
			s.writeError(w, http.StatusNotFound, "unknown or expired test session")
			return
		}
		if ses.expires.Before(expires) {
			expires = ses.expires
			grant = min(grant, max(time.Until(expires), 0))
		}
	} else {
		release, err = s.adm.admit(r, now)
		if err != nil {
			s.reject(w, err)
			return
		}
	}
	maxPackets := int(math.Ceil(time.Until(expires).Seconds()*rate)) + 16
	// The burst is one second of probes: a sender starved of CPU catches
	// up on its missed deadlines in one burst, which is not a reason to
	// count them lost. Replies are never larger than probes, so the burst
	// amplifies nothing, and the rate still bounds the session.
	u.grant(w, "udp session", req, grant, release, ip.String(), stamp.SessionSpec{
		Client: ip, RatePPS: rate*1.1 + 10, Burst: max(50, int(min(rate, maxPPS))),
		Expires: expires, MaxPackets: maxPackets, DSCP: req.DSCP, ECN: req.ECN,
	})
}

// grant opens spec on the reflector, ends it at spec.Expires, and replies
// with the session granted for grant. release frees what admitted the
// session: when it ends, or now if it cannot open.
func (u *udpService) grant(w http.ResponseWriter, kind string, req stamp.SessionRequest, grant time.Duration, release func(), client string, spec stamp.SessionSpec) {
	s := u.s
	refl, err := u.reflector()
	if err != nil {
		release()
		s.writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	ses, err := refl.Open(spec)
	if err != nil {
		release()
		s.writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	req.Client = clip(req.Client) // kept for the session's life
	us := &udpSession{release: release, info: udpInfo{start: time.Now(), req: req, grant: grant, client: client,
		testSession: req.TestSession, monitor: req.Monitor}}
	u.mu.Lock()
	if u.closed {
		// close ran between reflector() and here: it has ended the
		// sessions it knew; this one must not outlive it.
		u.mu.Unlock()
		release()
		s.writeError(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	u.open[ses.ID] = us
	us.timer = time.AfterFunc(time.Until(spec.Expires), func() { u.finish(ses.ID, "expired") })
	u.mu.Unlock()
	s.cfg.Logger.Info(kind, "id", ses.ID, "client", spec.Client, "rate_pps", 1e6/req.IntervalUs, "bytes", req.PacketBytes, "grant", grant, "software", req.Client)
	writeJSON(w, http.StatusOK, stamp.SessionReply{
		ID: ses.ID, SSID: ses.SSID, Port: int(refl.Addr().Port()), ExpiresS: time.Until(spec.Expires).Seconds(),
		DurationS: grant.Seconds(), MaxRatePPS: spec.RatePPS, MaxPackets: spec.MaxPackets, Clock: refl.ClockInfo(),
	})
}

// finish ends a session (expiry or close, why), keeps its report for a
// grace period, records it, and returns it.
func (u *udpService) finish(id, why string) (stamp.SessionReport, bool) {
	u.mu.Lock()
	us, open := u.open[id]
	delete(u.open, id)
	refl := u.refl
	u.mu.Unlock()
	if !open || refl == nil {
		u.mu.Lock()
		rep, ok := u.reports[id]
		u.mu.Unlock()
		return rep, ok
	}
	us.timer.Stop()
	us.release()
	rep, ok := refl.Close(id)
	if !ok {
		return rep, false
	}
	u.mu.Lock()
	u.reports[id] = rep
	u.mu.Unlock()
	u.s.archive.udpSession(id, us.info, rep, why)
	time.AfterFunc(reportGrace, func() {
		u.mu.Lock()
		delete(u.reports, id)
		u.mu.Unlock()
	})
	return rep, true
}

func (u *udpService) handleClose(w http.ResponseWriter, r *http.Request) {
	rep, ok := u.finish(r.PathValue("id"), "closed by the client")
	if !ok {
		u.s.writeError(w, http.StatusNotFound, "unknown or expired UDP session")
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// Monitor sessions (stamp.SessionRequest.Monitor): long-lived, cheap, and
// outside the test admission, so they have their own caps: a monitor with
// 8 targets and a few DSCP classes holds one session per STAMP stream, two
// while it renews one.
const (
	maxMonitorSessions      = 256
	maxMonitorSessionsPerIP = 32
	// monitorBitmapPackets bounds the report's bitmap of a monitor session
	// (a day at 100/s would need 1 MB); later probes are only counted.
	monitorBitmapPackets = 1 << 16
)

// openMonitor grants a monitor session: the request is already checked
// against the server's own UDP limits; the admission (token and start
// rate, no test slot) and the monitor caps come on top, before anything
// is held.
func (u *udpService) openMonitor(w http.ResponseWriter, r *http.Request, req stamp.SessionRequest, ip netip.Addr, rate float64) {
	s := u.s
	switch {
	case req.TestSession != "":
		s.writeError(w, http.StatusBadRequest, "UDP session: a monitor session cannot belong to a test session")
		return
	case rate > stamp.MonitorMaxRatePPS:
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("UDP monitor session: %.0f probes/s exceeds the monitor limit of %d", rate, stamp.MonitorMaxRatePPS))
		return
	case req.PacketBytes > stamp.MonitorMaxPacketBytes:
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("UDP monitor session: packet_bytes %d exceeds the monitor limit of %d", req.PacketBytes, stamp.MonitorMaxPacketBytes))
		return
	case req.DurationS > stamp.MonitorMaxDurationS:
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("UDP monitor session: duration_s must be at most %d", stamp.MonitorMaxDurationS))
		return
	}
	if err := s.adm.admitMonitor(r, time.Now()); err != nil {
		s.reject(w, err)
		return
	}
	ip = ip.Unmap()
	u.monMu.Lock()
	total := 0
	for _, n := range u.monitors {
		total += n
	}
	if total >= maxMonitorSessions || u.monitors[ip] >= maxMonitorSessionsPerIP {
		u.monMu.Unlock()
		s.reject(w, &rejection{status: http.StatusServiceUnavailable, retryAfter: busyRetry,
			reason: fmt.Sprintf("UDP monitor session: too many monitor sessions (limit %d per client, %d in all)", maxMonitorSessionsPerIP, maxMonitorSessions)})
		return
	}
	u.monitors[ip]++
	u.monMu.Unlock()
	var once sync.Once
	release := func() {
		once.Do(func() {
			u.monMu.Lock()
			if u.monitors[ip]--; u.monitors[ip] <= 0 {
				delete(u.monitors, ip)
			}
			u.monMu.Unlock()
		})
	}
	grant := time.Duration(req.DurationS * float64(time.Second))
	u.grant(w, "udp monitor session", req, grant, release, ip.String(), stamp.SessionSpec{
		Client: ip, RatePPS: rate*1.1 + 10, Burst: 20, Expires: time.Now().Add(grant + udpSlack),
		MaxPackets: monitorBitmapPackets, DSCP: req.DSCP, ECN: req.ECN,
	})
}
