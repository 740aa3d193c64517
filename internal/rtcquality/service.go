// Package rtcquality is the server side of the browser page's WebRTC
// quality test (docs/browser.md): it answers a page's SDP offer with a pion
// peer connection whose only ICE candidate is a host candidate on the
// address the page reached the server on, runs the UDP-like test over an
// unordered data channel without retransmissions (messages sent as fast as
// SCTP lets them out, driven by the buffered-amount-low event), and turns
// the arrival records of both directions into a model.WebRTCResult with the
// formulas of internal/metrics, the same ones `sonde udp` uses.
package rtcquality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/logging"
	"github.com/pion/webrtc/v4"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

// Config holds the test's limits. Zero values take the documented defaults.
type Config struct {
	// Port is the server's UDP port for WebRTC: 0 (default) an ephemeral
	// port per peer connection; > 0 this one port for all of them (one
	// socket per server address, demultiplexed by ICE username), for
	// firewalls; < 0 disables the test (offers get 503).
	Port int
	// MaxDirection bounds the sending time of one direction (default 30 s).
	MaxDirection time.Duration
	// MaxBitrate bounds the server's own sending rate in bit/s (default
	// 1 Gbit/s).
	MaxBitrate float64
	// MaxRecords bounds the arrivals kept per direction (default 4 Mi,
	// 96 MiB of records).
	MaxRecords int
	// Logger receives one line per notable event (default: discard).
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxDirection <= 0 {
		c.MaxDirection = 30 * time.Second
	}
	if c.MaxBitrate <= 0 {
		c.MaxBitrate = 1e9
	}
	if c.MaxRecords <= 0 {
		c.MaxRecords = 4 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Message sizes a test may use: at least a header, at most what fits one
// SCTP DATA chunk of Chromium's (1191-byte packets) and pion's SCTP.
const (
	MinMessage     = headerLen
	MaxMessage     = 1150
	DefaultMessage = 1100
)

// resultGrace is how long a finished test's result stays after its session
// ended (the page posts its result right after the test).
const resultGrace = 60 * time.Second

// Service runs the WebRTC tests of one server. Create it with New; it is
// safe for concurrent use.
type Service struct {
	cfg Config

	mu     sync.Mutex
	peers  map[string]*peer // by test session ID
	muxes  map[netip.Addr]ice.UDPMux
	closed bool
}

// New builds a service from cfg.
func New(cfg Config) *Service {
	cfg.setDefaults()
	return &Service{cfg: cfg, peers: map[string]*peer{}, muxes: map[netip.Addr]ice.UDPMux{}}
}

// Session is what the caller knows of the test session a request belongs
// to: its ID (the capability the request was authenticated with) and its
// context, which ends when the session does.
type Session struct {
	ID  string
	Ctx context.Context
}

// Close ends every peer connection and closes the shared sockets.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	peers := make([]*peer, 0, len(s.peers))
	for _, p := range s.peers {
		peers = append(peers, p)
	}
	muxes := s.muxes
	s.muxes = map[netip.Addr]ice.UDPMux{}
	s.mu.Unlock()
	for _, p := range peers {
		p.close()
	}
	for _, m := range muxes {
		_ = m.Close()
	}
}

// Result returns the session's test result so far, or nil if it measured
// nothing.
func (s *Service) Result(id string) *model.WebRTCResult {
	s.mu.Lock()
	p := s.peers[id]
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	// A test that never connected measured nothing; the page reports why.
	if r := p.result(); r.Upload != nil || r.Download != nil || len(r.Errors) > 0 {
		return r
	}
	return nil
}

// Description is an SDP offer or answer as the browser's
// RTCSessionDescription serialises it.
type Description struct {
	Type string `json:"type"`
	SDP  string `json:"sdp"`
}

// HandleOffer answers POST …/sessions/{id}/webrtc: body Description (the
// page's offer, all candidates gathered), reply Description (the answer,
// likewise complete: no trickle).
func (s *Service) HandleOffer(w http.ResponseWriter, r *http.Request, ses Session) {
	if s.cfg.Port < 0 {
		writeError(w, http.StatusServiceUnavailable, "the WebRTC test is disabled on this server")
		return
	}
	var offer Description
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&offer); err != nil {
		writeError(w, http.StatusBadRequest, "invalid offer: "+err.Error())
		return
	}
	if offer.Type != "offer" || offer.SDP == "" {
		writeError(w, http.StatusBadRequest, `invalid offer: want {"type":"offer","sdp":"…"}`)
		return
	}
	local, err := localAddr(r)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	p, status, err := s.newPeer(ses, local)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	answer, status, err := p.answer(r.Context(), offer.SDP)
	if err != nil {
		p.close()
		writeError(w, status, err.Error())
		return
	}
	s.cfg.Logger.Info("webrtc", "session", ses.ID, "local", local)
	writeJSON(w, http.StatusOK, Description{Type: "answer", SDP: answer})
}

// HandleRecords takes POST …/sessions/{id}/webrtc/records[?datagrams=N]:
// the page's arrival records of the download direction (recordLen bytes
// each) and the datagrams its ICE candidate pair received meanwhile, and
// replies with the complete model.WebRTCResult. The session's state is
// checked before the body is read, and the body is bounded by what the
// download could have produced (recordsLimit).
func (s *Service) HandleRecords(w http.ResponseWriter, r *http.Request, ses Session) {
	s.mu.Lock()
	p := s.peers[ses.ID]
	s.mu.Unlock()
	if p == nil {
		writeError(w, http.StatusNotFound, "no WebRTC test in this session")
		return
	}
	datagrams := -1
	if v := r.URL.Query().Get("datagrams"); v != "" {
		var err error
		if datagrams, err = strconv.Atoi(v); err != nil || datagrams < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("datagrams %.20q: want a count", v))
			return
		}
	}
	limit, err := p.recordsLimit()
	if err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	maxBody := int64(limit) * recordLen
	if r.ContentLength > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("records: %d bytes, at most %d records (%d bytes) for this download", r.ContentLength, limit, maxBody))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("records: more than %d records (%d bytes) for this download", limit, maxBody))
			return
		}
		writeError(w, http.StatusBadRequest, "records: "+err.Error())
		return
	}
	recs, err := DecodeRecords(body, limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := p.setDownload(recs, datagrams); err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, p.result())
}

// newPeer registers the session's peer connection, restricted to a host
// candidate on local.
func (s *Service) newPeer(ses Session, local netip.Addr) (*peer, int, error) {
	se := webrtc.SettingEngine{}
	// pion's log is discarded, but for the drops of its own queues.
	drops := &stackDrops{}
	se.LoggerFactory = drops
	// Only a host candidate on the address the page reached: no STUN, no
	// mDNS, no other interface of the server is revealed or used.
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	if local.Is4() {
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	} else {
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP6})
	}
	se.SetIPFilter(func(ip net.IP) bool {
		a, ok := netip.AddrFromSlice(ip)
		return ok && a.Unmap() == local
	})
	se.SetIncludeLoopbackCandidate(local.IsLoopback())
	se.SetICETimeouts(5*time.Second, 10*time.Second, 2*time.Second)
	// The SCTP receive window bounds what the page has in flight, and so
	// what can pile up in pion's fixed 1 MB queues in front of SCTP
	// (stackDrops) while the server is busy for a moment. pion's SCTP
	// never shrinks its congestion window for the test's messages (sent
	// without retransmissions), so only this window stops the page from
	// overrunning those queues: with 8 MiB the server dropped 0.02-0.3 %
	// of the upload's datagrams on loopback, after its socket, and
	// reported them as path loss. sctpReceiveWindow fits the queue.
	se.SetSCTPMaxReceiveBufferSize(sctpReceiveWindow)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, http.StatusServiceUnavailable, errors.New("server is shutting down")
	}
	if old := s.peers[ses.ID]; old != nil && !old.finished() {
		return nil, http.StatusConflict, errors.New("a WebRTC test is already running in this session")
	}
	// Every peer connection reads a socket of ours, so its receive buffer
	// can be raised: the kernel's default (~200 KiB) overflows in bursts
	// at a few hundred Mbit/s, which would read as path loss.
	var mux ice.UDPMux
	var own io.Closer // the peer's own socket (Port 0)
	if s.cfg.Port > 0 {
		m, err := s.muxFor(local)
		if err != nil {
			return nil, http.StatusServiceUnavailable, err
		}
		mux = m
	} else {
		m, err := openMux(local, 0)
		if err != nil {
			return nil, http.StatusServiceUnavailable, err
		}
		mux, own = m, m
	}
	se.SetICEUDPMux(mux)
	api := webrtc.NewAPI(webrtc.WithSettingEngine(se))
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		if own != nil {
			_ = own.Close()
		}
		return nil, http.StatusInternalServerError, fmt.Errorf("peer connection: %w", err)
	}
	// The whole test, both directions and the page's set-up, fits well in
	// this; the session's end ends it earlier.
	ctx, cancel := context.WithTimeout(ses.Ctx, 2*s.cfg.MaxDirection+30*time.Second)
	p := newPeer(s, ses.ID, pc, ctx, cancel)
	p.drops = drops
	if own != nil {
		context.AfterFunc(ctx, func() { _ = own.Close() })
	}
	s.peers[ses.ID] = p
	// Keep the result for the page's result request, then forget it.
	context.AfterFunc(ses.Ctx, func() {
		time.AfterFunc(resultGrace, func() {
			s.mu.Lock()
			if s.peers[ses.ID] == p {
				delete(s.peers, ses.ID)
			}
			s.mu.Unlock()
		})
	})
	return p, 0, nil
}

// muxFor returns the shared socket on local:Port, opening it on first use.
// s.mu is held.
func (s *Service) muxFor(local netip.Addr) (ice.UDPMux, error) {
	if m := s.muxes[local]; m != nil {
		return m, nil
	}
	m, err := openMux(local, s.cfg.Port)
	if err != nil {
		return nil, err
	}
	s.muxes[local] = m
	return m, nil
}

// sctpReceiveWindow is the server's SCTP receive window: 768 KiB of
// messages, about 815 KB of datagrams with 1100-byte messages (SCTP, DTLS
// and pion's 2-byte framing add 6 %), within pion's 1 MB ICE and DTLS
// queues with room for the control channel. It caps the upload at
// 6.3 Mbit / RTT (126 Mbit/s at 50 ms); pion's queues cannot be enlarged.
const sctpReceiveWindow = 768 << 10

// udpReadBuffer is the receive buffer asked for each WebRTC socket (the
// kernel caps it at net.core.rmem_max).
const udpReadBuffer = 8 << 20

// setBuffers asks for n-byte socket buffers; with CAP_NET_ADMIN past
// net.core.rmem_max/wmem_max (SO_RCVBUFFORCE), whose default (~200 KiB) a
// data channel at 100 Mbit/s overflows whenever the server is busy for a
// few milliseconds.
func setBuffers(conn *net.UDPConn, n int) {
	_ = conn.SetReadBuffer(n)
	_ = conn.SetWriteBuffer(n)
	forceBuffers(conn, n)
}

// openMux opens a UDP socket on local:port (0: ephemeral) for ICE.
func openMux(local netip.Addr, port int) (ice.UDPMux, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, uint16(port))))
	if err != nil {
		return nil, fmt.Errorf("WebRTC port: %w", err)
	}
	setBuffers(conn, udpReadBuffer)
	lf := logging.NewDefaultLoggerFactory()
	lf.DefaultLogLevel = logging.LogLevelDisabled
	return webrtc.NewICEUDPMux(lf.NewLogger("ice"), conn), nil
}

// localAddr is the server address the request arrived on.
func localAddr(r *http.Request) (netip.Addr, error) {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return netip.Addr{}, errors.New("cannot tell the server address of this request")
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, fmt.Errorf("server address %q: %w", a, err)
	}
	return ap.Addr().Unmap().WithZone(""), nil
}

func writeError(w http.ResponseWriter, status int, msg string) { protocol.WriteError(w, status, msg) }

func writeJSON(w http.ResponseWriter, status int, v any) { protocol.WriteJSON(w, status, v) }
