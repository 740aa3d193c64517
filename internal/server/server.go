// Package server implements `sonde serve`: one HTTP(S) process that serves
// sonde's own test protocol (docs/protocol.md), the ndt7 protocol, /healthz
// and /metrics, under configurable limits. It measures the server's side of
// every flow (TCP_INFO series, bytes received) and hands it to the client,
// which builds the report.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/sonde-project/sonde/internal/httpload"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sonde-project/sonde/internal/librespeed"
	"github.com/sonde-project/sonde/internal/mbmsink"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/rtcquality"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/stream"
)

// Config holds every limit and option of a server. Zero values take the
// defaults documented on each field.
type Config struct {
	// Addr is the main listen address (default ":8080").
	Addr string
	// Servers are the other sonde servers the page offers to test
	// against, in LibreSpeed's server-list format
	// (librespeed.ParseServerList), served at PathServers.
	Servers []librespeed.Server
	// CORSOrigins are the origins ("*" for any) whose pages may run tests
	// against this server: other sonde servers that list this one.
	CORSOrigins []string
	// ExtraAddrs are further listen addresses serving the same handler,
	// e.g. for QoS classes on different ports.
	ExtraAddrs []string
	// CertFile and KeyFile enable HTTPS on every listener.
	CertFile, KeyFile string
	// Token, if set, is the bearer token a client needs to start a test.
	Token string
	// MaxConcurrent bounds running tests, sonde and ndt7 together (default 8).
	MaxConcurrent int
	// MaxDuration bounds one test session from start to end (default 120 s).
	MaxDuration time.Duration
	// MaxBytes bounds the payload one test may move, all its streams and
	// both directions together (0: unlimited).
	MaxBytes int64
	// SessionIdle ends a test session that has no stream open for this
	// long, from its creation or its last stream's close, and frees its
	// slot (default 10 s, negative: never).
	SessionIdle time.Duration
	// PerIPPerMinute bounds test starts per client IP (default 60, -1: none).
	PerIPPerMinute int
	// MaxStreams bounds the streams of one session (default 64).
	MaxStreams int
	// Software names this server in replies.
	Software string
	// Logger receives one line per notable event (default: discard).
	Logger *slog.Logger
	// UDPAddr is the STAMP reflector's address (docs/udp.md): "" for port
	// 862 on Addr's host (an ephemeral port there if 862 is taken or needs
	// privileges), "off" for none, else exactly this address. The socket
	// opens on the first UDP session, or at once with StartUDP.
	UDPAddr string
	// MBMAddr is the MBM sink's UDP address (docs/mbm-protocol.md): "" for
	// an ephemeral port on Addr's host (clients learn it from the session
	// reply), "off" for none, else exactly this address. The socket opens
	// on the first MBM session, or at once with StartMBM.
	MBMAddr string
	// UDPMaxRate bounds one UDP session's probes per second (default
	// 20000), UDPMaxBitrate its probe rate × size in bit/s (default 200e6).
	UDPMaxRate    float64
	UDPMaxBitrate float64
	// WebRTCPort is the UDP port of the page's WebRTC quality test
	// (docs/browser.md): 0 an ephemeral port per test, > 0 this port for
	// all tests, < 0 no WebRTC test.
	WebRTCPort int
	// Iperf3Addr is where iperf3 clients are answered (docs/iperf3.md),
	// TCP and UDP on the same port: "" or "off" for nowhere (sonde serve's
	// --iperf3-port gives port 5201 on Addr's host by default).
	// Iperf3Open admits iperf3 clients on a server with a Token, which
	// iperf3 has no way to send.
	Iperf3Addr string
	Iperf3Open bool
	// NoServerRecords turns off the server's own record of every test it
	// serves (sonde sessions, ndt7, STAMP sessions, MBM runs) in the
	// store beside the page's results (docs/store.md).
	NoServerRecords bool
	// HistoryDB is the store that keeps past results for the page
	// (internal/store): a SQLite file or a postgres:// URL; "" or
	// store.Memory keeps them in memory only. HistoryKeep bounds how many
	// are kept (0: store.DefaultKeep).
	HistoryDB   string
	HistoryKeep int

	// Connection limits, for slow and idle clients (docs/protocol.md,
	// Limits). None of them applies to a test's streams once upgraded:
	// those live as long as their session.
	//
	// HeaderTimeout bounds reading a request's headers (default 10 s),
	// BodyTimeout its body (default 30 s), WriteTimeout writing its reply
	// (default 30 s, at least 5 s: /report may wait 3 s first), the last
	// two from the end of the headers. IdleTimeout bounds how long a
	// keep-alive connection waits for its next request (default 30 s).
	HeaderTimeout, BodyTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConnsPerIP bounds the idle and unadmitted HTTP connections one
	// client IP holds open (default 64); past it, the connections of the
	// IP's admitted tests are still taken, bounded per test (conns.go). MaxConns bounds them all (default 4096, lowered to fit
	// the file descriptor limit); it must leave room below that limit for
	// MaxConcurrent × MaxStreams streams and fdReserve other files.
	MaxConnsPerIP, MaxConns int
	// TokenFailRate (per second, default 1) and TokenFailBurst (default 10)
	// bound the failed token attempts of one client IP; beyond them every
	// attempt from that IP, right or wrong, gets 429 until the bucket refills.
	TokenFailRate  float64
	TokenFailBurst int
}

// Defaults and bounds of the connection limits.
const (
	defaultHeaderTimeout = 10 * time.Second
	defaultBodyTimeout   = 30 * time.Second
	defaultWriteTimeout  = 30 * time.Second
	defaultIdleTimeout   = 30 * time.Second
	defaultMaxConnsPerIP = 64
	defaultMaxConns      = 4096
	// minWriteTimeout leaves /report its wait of up to 3 s for streams
	// the client just closed, and time to send the reply.
	minWriteTimeout = 5 * time.Second
	// minTimeout is the least header, body or idle timeout that makes sense.
	minTimeout = 100 * time.Millisecond
	// fdReserve is the file descriptors kept for everything but HTTP
	// connections and streams: listeners, SQLite, UDP and WebRTC sockets.
	fdReserve = 256
)

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = ":8080"
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = 8
	}
	if c.MaxDuration == 0 {
		c.MaxDuration = 120 * time.Second
	}
	if c.PerIPPerMinute == 0 {
		c.PerIPPerMinute = 60
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = 64
	}
	if c.SessionIdle == 0 {
		c.SessionIdle = 10 * time.Second
	}
	if c.Software == "" {
		c.Software = "sonde"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&c.HeaderTimeout, defaultHeaderTimeout}, {&c.BodyTimeout, defaultBodyTimeout},
		{&c.WriteTimeout, defaultWriteTimeout}, {&c.IdleTimeout, defaultIdleTimeout}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = defaultMaxConnsPerIP
	}
	if c.MaxConns == 0 {
		c.MaxConns = defaultMaxConns
		if room, ok := c.connRoom(); ok && room < c.MaxConns {
			c.MaxConns = max(room, 1) // Validate explains when room < 1
		}
	}
	if c.TokenFailRate == 0 {
		c.TokenFailRate = 1
	}
	if c.TokenFailBurst == 0 {
		c.TokenFailBurst = 10
	}
}

// connRoom is how many HTTP connections the file descriptor limit leaves
// after the streams the test limits allow and fdReserve; ok is false when
// the limit is unknown.
func (c *Config) connRoom() (room int, ok bool) {
	lim, ok := fdLimit()
	if !ok {
		return 0, false
	}
	streams := int64(max(c.MaxConcurrent, 0)) * int64(max(c.MaxStreams, 0))
	return int(max(min(int64(lim)-fdReserve-streams, math.MaxInt32), math.MinInt32)), true
}

// Validate reports configuration errors in one line each.
func (c *Config) Validate() error {
	switch {
	case c.MaxConcurrent < 0:
		return fmt.Errorf("max concurrent tests must be ≥ 0, got %d", c.MaxConcurrent)
	case c.MaxDuration < 0:
		return fmt.Errorf("max test duration must be positive, got %v", c.MaxDuration)
	case c.MaxBytes < 0:
		return fmt.Errorf("max bytes per test must be ≥ 0, got %d", c.MaxBytes)
	case c.MaxStreams < 0:
		return fmt.Errorf("max streams must be ≥ 0, got %d", c.MaxStreams)
	case c.WebRTCPort > 65535:
		return fmt.Errorf("WebRTC port must be -1–65535, got %d", c.WebRTCPort)
	case c.HistoryKeep < 0:
		return fmt.Errorf("past results to keep must be ≥ 0, got %d", c.HistoryKeep)
	case (c.CertFile == "") != (c.KeyFile == ""):
		return errors.New("--cert and --key go together")
	case len(c.Servers) > librespeed.MaxServers:
		return fmt.Errorf("server list: more than %d servers", librespeed.MaxServers)
	}
	if err := checkCORSOrigins(c.CORSOrigins); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"header", c.HeaderTimeout}, {"body", c.BodyTimeout}, {"idle", c.IdleTimeout}} {
		if d.v != 0 && d.v < minTimeout {
			return fmt.Errorf("%s timeout must be at least %v, got %v", d.name, minTimeout, d.v)
		}
	}
	switch {
	case c.WriteTimeout != 0 && c.WriteTimeout < minWriteTimeout:
		return fmt.Errorf("write timeout must be at least %v (a report may wait 3 s), got %v", minWriteTimeout, c.WriteTimeout)
	case c.MaxConnsPerIP < 0:
		return fmt.Errorf("max connections per IP must be ≥ 1, got %d", c.MaxConnsPerIP)
	case c.MaxConns < 0:
		return fmt.Errorf("max connections must be ≥ 1, got %d", c.MaxConns)
	case c.TokenFailRate < 0 || math.IsNaN(c.TokenFailRate) || math.IsInf(c.TokenFailRate, 0):
		return fmt.Errorf("failed token attempts per second must be a positive number, got %v", c.TokenFailRate)
	case c.TokenFailBurst < 0:
		return fmt.Errorf("failed token attempts burst must be ≥ 1, got %d", c.TokenFailBurst)
	}
	if room, ok := c.connRoom(); ok && c.MaxConns > 0 && c.MaxConns > room {
		lim, _ := fdLimit()
		return fmt.Errorf("max connections %d do not fit the file descriptor limit %d (room for %d after %d test streams and %d other files): raise ulimit -n or lower the limits",
			c.MaxConns, lim, max(room, 0), max(c.MaxConcurrent, 0)*max(c.MaxStreams, 0), fdReserve)
	}
	return nil
}

// Server is a sonde server. Create it with New; it is safe for concurrent use.
type Server struct {
	cfg      Config
	adm      *admission
	conns    *connLimiter
	sessions *registry
	loads    []*httpload.Registry // RPM's and LibreSpeed's tests (hasTest)
	metrics  *counters
	payload  stream.Payload
	mux      *routeMux
	handler  http.Handler // mux under per-request deadlines
	csp      string       // the pages' Content-Security-Policy
	udp      *udpService
	mbm      *mbmsink.Sink
	rtc      *rtcquality.Service
	history  store.Store
	archive  *archive
	iperf3   iperf3Service

	mu       sync.Mutex
	servers  []*http.Server
	addrs    []net.Addr
	wg       sync.WaitGroup
	shutdown bool
}

// New builds a server from cfg.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	payload, err := stream.NewPayload()
	if err != nil {
		return nil, err
	}
	perIP := cfg.PerIPPerMinute
	if perIP < 0 {
		perIP = 0
	}
	s := &Server{
		cfg:      cfg,
		adm:      newAdmission(cfg.Token, cfg.MaxConcurrent, perIP, cfg.TokenFailRate, cfg.TokenFailBurst),
		conns:    newConnLimiter(cfg.MaxConnsPerIP, cfg.MaxConns, cfg.Logger),
		sessions: newRegistry(),
		payload:  payload,
	}
	if s.history, err = openHistory(cfg.HistoryDB, cfg.HistoryKeep); err != nil {
		return nil, err
	}
	s.metrics = newCounters(s.adm, s.conns)
	s.mux = newRouteMux(s.adm, s.reject)
	s.archive = newArchive(s.history, s.metrics.reg, &s.cfg)
	s.udp = newUDPService(s)
	s.rtc = rtcquality.New(rtcquality.Config{Port: cfg.WebRTCPort, MaxDirection: min(30*time.Second, cfg.MaxDuration), Logger: cfg.Logger})
	s.routes()
	if err := s.mountMBM(); err != nil {
		return nil, err
	}
	if err := s.mountNDT7(); err != nil {
		return nil, err
	}
	if err := s.mountRPM(); err != nil {
		return nil, err
	}
	if err := s.mountLibreSpeed(); err != nil {
		return nil, err
	}
	s.conns.room = s.connRoom
	s.csp = pageCSP(connectSources(cfg.Servers))
	s.handler = deadlines(s.connGate(s.cors(s.mux)), cfg.BodyTimeout, cfg.WriteTimeout)
	return s, nil
}

// Handler returns the HTTP handler (for tests and embedding), with the
// per-request body and write deadlines; the header and idle timeouts and
// the connection caps belong to Serve's listeners.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() {
	s.mux.handleFunc("POST "+protocol.PathSessions, policyAdmit, s.handleCreate)
	s.mux.handleFunc("DELETE "+protocol.PathSessions+"/{id}", policySession, s.handleDelete)
	s.mux.handleFunc("GET "+protocol.PathSessions+"/{id}/report", policySession, s.handleReport)
	s.mux.handleFunc("GET "+protocol.PathSessions+"/{id}/live", policySession, s.handleLive)
	s.mux.handleFunc("GET "+protocol.PathSessions+"/{id}/{kind}", policySession, s.handleStream)
	s.mux.handleFunc("GET "+protocol.PathPing, policyProbe, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Cache-Control", "no-store")
		// A foreign probe's connection serves one request: a browser's
		// next probe must open (and time) a new one, not reuse this.
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "pong\n")
	})
	s.mux.handleFunc("GET /healthz", policyPublic, s.handleHealth)
	s.mux.handle("GET /metrics", policyPublic, promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	s.udpRoutes()
	s.rtcRoutes()
	s.webRoutes()
	s.serversRoutes()
}

// ListenAndServe listens on every configured address and serves until ctx
// ends, then shuts down gracefully. ready, if not nil, receives the bound
// listeners' addresses once all are listening.
func (s *Server) ListenAndServe(ctx context.Context, ready func([]net.Addr)) error {
	var lns []net.Listener
	for _, a := range append([]string{s.cfg.Addr}, s.cfg.ExtraAddrs...) {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("listen on %s: %w", a, err)
		}
		lns = append(lns, ln)
	}
	return s.Serve(ctx, lns, ready)
}

// Serve serves on the given listeners until ctx ends.
func (s *Server) Serve(ctx context.Context, lns []net.Listener, ready func([]net.Addr)) error {
	var tlsCfg *tls.Config
	if s.cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.CertFile, s.cfg.KeyFile)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		// h2 for the responsiveness test's clients (draft §7 needs
		// HTTP/2), http/1.1 for everything else: sonde's load and probe
		// streams are HTTP upgrades, which HTTP/2 does not have, so its
		// client offers http/1.1 only; browsers open WebSockets over
		// HTTP/1.1 (net/http's HTTP/2 has no extended CONNECT).
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	}
	errc := make(chan error, len(lns))
	var addrs []net.Addr
	s.mu.Lock()
	for _, ln := range lns {
		if tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		ln = s.conns.listener(ln)
		// No ReadTimeout or WriteTimeout: those would also cut streams
		// and long handlers; deadlines sets them per request instead.
		hs := &http.Server{
			Handler:           s.handler,
			ReadHeaderTimeout: s.cfg.HeaderTimeout,
			IdleTimeout:       s.cfg.IdleTimeout,
			MaxHeaderBytes:    16 << 10,
			ConnState:         s.conns.track,
			ConnContext:       withConn,
			ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
		}
		s.servers = append(s.servers, hs)
		addrs = append(addrs, ln.Addr())
		s.addrs = append(s.addrs, ln.Addr())
		s.wg.Add(1)
		go func(ln net.Listener) {
			defer s.wg.Done()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}(ln)
	}
	s.mu.Unlock()
	if ready != nil {
		ready(addrs)
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	s.Close()
	return err
}

// Close stops the listeners, ends every session's streams, and waits for
// the serving goroutines. Hijacked stream connections end with their
// sessions.
func (s *Server) Close() {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return
	}
	s.shutdown = true
	servers := s.servers
	s.mu.Unlock()
	for _, ses := range s.sessions.all() {
		ses.cancel()
	}
	s.udp.close()
	s.mbm.Close()
	s.iperf3.close()
	s.rtc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, hs := range servers {
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
	}
	s.wg.Wait()
	s.archive.close()
	_ = s.history.Close() // after the handlers and records that write to it
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var req protocol.SessionRequest
	if !s.decodeBody(w, r, 64<<10, "session request", &req) {
		return
	}
	if err := validSessionRequest(req); err != nil {
		s.writeError(w, http.StatusBadRequest, "invalid session request: "+err.Error())
		return
	}
	release, err := s.adm.admit(r, time.Now())
	if err != nil {
		s.reject(w, err)
		return
	}
	interval := time.Duration(req.TCPInfoIntervalMs * float64(time.Millisecond))
	interval = min(max(interval, 5*time.Millisecond), time.Second)
	if req.TCPInfoIntervalMs == 0 {
		interval = 50 * time.Millisecond
	}
	now := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(s.cfg.MaxDuration))
	ses := &session{
		id: newID(), start: now, expires: now.Add(s.cfg.MaxDuration), interval: interval,
		maxBytes: s.cfg.MaxBytes, ctx: ctx, cancel: cancel, release: release,
		client: clientIP(r), software: clip(req.Client),
	}
	s.sessions.add(ses)
	ses.watch(max(s.cfg.SessionIdle, 0))
	s.metrics.tests.WithLabelValues("sonde", "session").Inc()
	// When the session ends (expiry or DELETE), free its slot at once but
	// keep its report for a grace period.
	context.AfterFunc(ctx, func() {
		release()
		s.archive.tcpSession(ses, s.cfg.MaxDuration)
		time.AfterFunc(reportGrace, func() { s.sessions.remove(ses.id) })
	})
	s.cfg.Logger.Info("session", "id", ses.id, "client", clientIP(r), "software", req.Client)
	writeJSON(w, http.StatusOK, protocol.SessionReply{
		ID: ses.id, Server: s.cfg.Software, MaxDurationS: s.cfg.MaxDuration.Seconds(),
		MaxStreams: s.cfg.MaxStreams, MaxBytes: s.cfg.MaxBytes, ExpiresS: s.cfg.MaxDuration.Seconds(),
		ExtraPorts: s.extraPorts(),
	})
}

// reportGrace is how long a finished session's report stays available.
const reportGrace = 60 * time.Second

// extraPorts lists the ports of every listener after the first, as bound
// (so ":0" in the configuration reports the port the kernel chose).
func (s *Server) extraPorts() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ports []int
	for _, a := range s.addrs[min(1, len(s.addrs)):] {
		if ta, ok := a.(*net.TCPAddr); ok {
			ports = append(ports, ta.Port)
		}
	}
	return ports
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *session {
	ses := s.sessions.get(r.PathValue("id"))
	if ses == nil {
		s.writeError(w, http.StatusNotFound, "unknown or expired test session")
	}
	return ses
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	if ses := s.lookup(w, r); ses != nil {
		ses.cancel()
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	ses := s.lookup(w, r)
	if ses == nil {
		return
	}
	// The client asks right after closing its load streams; give the server
	// a moment to see the closes and finish the flows' records. The probe
	// stream stays open across phases, so it is waited for only when the
	// client asks (wait=all, after it closed the probe stream too).
	waitAll := r.URL.Query().Get("wait") == "all"
	wait := time.NewTimer(3 * time.Second)
	defer wait.Stop()
	rep := protocol.Report{ID: ses.id, Flows: []protocol.FlowReport{}}
	for _, f := range ses.flowList() {
		if f.kind == protocol.KindProbe && !waitAll {
			select {
			case <-f.done:
				rep.Flows = append(rep.Flows, f.report)
			default:
				rep.Flows = append(rep.Flows, protocol.FlowReport{ID: f.id, Kind: f.kind, Tag: f.tag, Error: "still running"})
			}
			continue
		}
		select {
		case <-f.done:
			rep.Flows = append(rep.Flows, f.report)
		case <-wait.C:
			rep.Flows = append(rep.Flows, protocol.FlowReport{ID: f.id, Kind: f.kind, Tag: f.tag, Error: "still running"})
		case <-r.Context().Done():
			return
		}
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	ses := s.lookup(w, r)
	if ses == nil {
		return
	}
	live := protocol.Live{TS: ses.since(time.Now()), Flows: []protocol.LiveFlow{}}
	for _, f := range ses.flowList() {
		if lf, ok := f.live(); ok {
			live.Flows = append(live.Flows, lf)
		}
	}
	writeJSON(w, http.StatusOK, live)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "software": s.cfg.Software, "active_tests": s.adm.activeCount(),
		"max_concurrent": s.cfg.MaxConcurrent, "max_duration_s": s.cfg.MaxDuration.Seconds(),
		"max_bytes": s.cfg.MaxBytes, "token_required": s.cfg.Token != "",
	})
}

func (s *Server) reject(w http.ResponseWriter, err error) {
	var rej *rejection
	if errors.As(err, &rej) {
		s.metrics.rejected.WithLabelValues(fmt.Sprint(rej.status)).Inc()
		if rej.retryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(int64(roundUp(rej.retryAfter)/time.Second)))
		}
		s.writeError(w, rej.status, rej.reason)
		return
	}
	s.writeError(w, http.StatusInternalServerError, err.Error())
}

// decodeBody is protocol.DecodeBody: every control route reads its body
// the same way.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, limit int64, what string, v any) bool {
	return protocol.DecodeBody(w, r, limit, what, v)
}

func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	protocol.WriteError(w, status, msg)
}

func writeJSON(w http.ResponseWriter, status int, v any) { protocol.WriteJSON(w, status, v) }
