package tcprun

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/protocol"
)

// Streams opens the upload streams a test sends on. Each call is a new
// TCP connection to a sink that reads and discards what it gets.
type Streams interface {
	OpenUpload(ctx context.Context, tag string) (net.Conn, error)
}

// Server says how to reach a `sonde serve` for Dial.
type Server struct {
	// URL is the server (protocol.ParseServer: host[:port] or a URL) and
	// Token its bearer token, if it has one.
	URL, Token string
	// TLS configures https (nil: the defaults).
	TLS *tls.Config
	// Software names the client to the server.
	Software string
	// DurationS is the session length asked for; the server may grant
	// less (Session.Deadline).
	DurationS float64
	// MSS, if positive, clamps the upload streams' MSS (TCP_MAXSEG
	// before the handshake) to the target's packet payload (MTU − header
	// overhead), so that the delivered segments TCP_INFO counts are the
	// target's packets even where the path's MTU is larger (loopback).
	MSS int
	// DialContext, if set, makes every connection (control and streams),
	// e.g. from another network namespace; nil: a net.Dialer. It must
	// apply MSS itself (ClampMSS as the dialer's Control).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ClampMSS returns a net.Dialer Control function that clamps the
// segments' payload to mss before the connection is made (nil for mss ≤
// 0). TCP_MAXSEG clamps the MSS before TCP options, which Linux then
// subtracts: the clamp is mss + 12, the timestamp option Linux negotiates
// by default (and the default header overhead counts). Without
// timestamps the payload is 12 bytes more, which Run accepts (1 %).
func ClampMSS(mss int) func(network, address string, c syscall.RawConn) error {
	if mss <= 0 {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error { return setMaxSeg(c, mss+tcpTimestampOption) }
}

// tcpTimestampOption is the TCP timestamp option's bytes, padded.
const tcpTimestampOption = 12

// Session is a test session on a `sonde serve`; its upload streams are
// the tests' sinks. The server needs no MBM support: it counts and
// discards the upload's bytes as for `sonde test`.
type Session struct {
	srv      Server
	api      *apiclient.Client
	reply    protocol.SessionReply
	deadline time.Time
}

// Dial creates a session. Errors are one line (apiclient's).
func Dial(ctx context.Context, srv Server) (*Session, error) {
	if !(srv.DurationS >= 0 && srv.DurationS <= 86400) {
		return nil, fmt.Errorf("session duration %g s: want 0 to 86400", srv.DurationS)
	}
	if srv.Software == "" {
		srv.Software = "sonde-mbm"
	}
	if srv.MSS < 0 || srv.MSS > 65535-tcpTimestampOption {
		return nil, fmt.Errorf("MSS %d: want 0 (the path's) to %d bytes", srv.MSS, 65535-tcpTimestampOption)
	}
	if srv.DialContext == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, Control: ClampMSS(srv.MSS)}
		srv.DialContext = d.DialContext
	}
	api, err := apiclient.New(srv.URL, srv.Token, srv.Software, srv.TLS)
	if err != nil {
		return nil, err
	}
	if tr, ok := api.HTTP.Transport.(*http.Transport); ok {
		tr.DialContext = srv.DialContext
	}
	s := &Session{srv: srv, api: api}
	start := time.Now()
	req := protocol.SessionRequest{Client: srv.Software, DurationS: srv.DurationS}
	if err := api.Call(ctx, http.MethodPost, protocol.PathSessions, req, &s.reply); err != nil {
		api.Close()
		return nil, err
	}
	if s.reply.ID == "" {
		api.Close()
		return nil, fmt.Errorf("%s is not a sonde server (no session ID in its reply)", api.Base.Host)
	}
	s.deadline = start.Add(time.Duration(s.reply.MaxDurationS * float64(time.Second)))
	return s, nil
}

// Deadline is when the server ends the session (and its streams): a run
// should use a context that ends no later.
func (s *Session) Deadline() time.Time { return s.deadline }

// Reply is the server's grant.
func (s *Session) Reply() protocol.SessionReply { return s.reply }

// OpenUpload dials and upgrades an upload stream (docs/protocol.md). The
// connection returned is the TCP (or TLS) connection itself, so that its
// socket options and TCP_INFO are reachable.
func (s *Session) OpenUpload(ctx context.Context, tag string) (net.Conn, error) {
	c, err := s.srv.DialContext(ctx, "tcp", s.api.Base.Host)
	if err != nil {
		return nil, apiclient.ExplainDial(s.api.Base, err)
	}
	if s.api.Base.Scheme == "https" {
		cfg := &tls.Config{}
		if s.srv.TLS != nil {
			cfg = s.srv.TLS.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = s.api.Base.Hostname()
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, apiclient.ExplainTLS(s.api.Base, err)
		}
		c = tc
	}
	path := protocol.PathSessions + "/" + s.reply.ID + "/" + protocol.KindUpload + "?tag=" + tag
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nUser-Agent: %s\r\n\r\n",
		path, s.api.Base.Host, protocol.StreamUpgrade, s.srv.Software)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("open upload stream: %w", err)
	}
	// The server sends nothing after its 101 on an upload stream (no
	// probes are sent on it), so nothing read ahead is lost with br.
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("open upload stream: %s did not answer like a sonde server: %w", s.api.Base.Host, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("open upload stream: %w", apiclient.ErrorFromReply(resp))
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// Close ends the session on the server (best effort).
func (s *Session) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = s.api.Call(ctx, http.MethodDelete, protocol.PathSessions+"/"+s.reply.ID, nil, nil)
	s.api.Close()
}
