package tcprun

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/model"
)

// WindowedStreams opens 8.1.2's connections: a TCP session of the
// server's MBM sink (docs/mbm-protocol.md, "TCP sessions") whose receive
// buffer the server sets before the handshake. *Session implements it.
type WindowedStreams interface {
	OpenWindowed(ctx context.Context, req WindowRequest) (*WindowedStream, error)
}

// WindowRequest asks for a windowed connection.
type WindowRequest struct {
	// Test is the RFC 8337 section, for the server's record.
	Test string
	// RateBps, TargetRTT and MTU are the target, recorded by the server.
	RateBps   float64
	TargetRTT time.Duration
	MTU       int
	// Duration is the session's planned length.
	Duration time.Duration
	// WindowBytes is the window the receiver should advertise at most
	// (W × MSS); BufferBytes the SO_RCVBUF for it (0: the server's rule,
	// mbmwire.ReceiveBufferFor).
	WindowBytes, BufferBytes int
}

// WindowedStream is a windowed connection (the token already written),
// with its grant; End ends the session and returns the server's
// readback.
type WindowedStream struct {
	net.Conn
	Reply mbmwire.SessionReply
	end   func(ctx context.Context, verdict model.MBMVerdict, reason string) (mbmwire.Report, error)
}

// End closes the connection (if still open) and ends the session with
// the client's verdict, returning the server's report.
func (w *WindowedStream) End(ctx context.Context, verdict model.MBMVerdict, reason string) (mbmwire.Report, error) {
	_ = w.Conn.Close()
	return w.end(ctx, verdict, reason)
}

// SyscallConn reaches the TCP socket (its options and TCP_INFO).
func (w *WindowedStream) SyscallConn() (syscall.RawConn, error) {
	sc, ok := w.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("windowed stream: a %T is not a socket", w.Conn)
	}
	return sc.SyscallConn()
}

// ErrNoTCPMBM says the server runs no MBM over TCP.
var ErrNoTCPMBM = errors.New("the server does not run MBM over TCP (an older sonde serve?); 8.1.2 over TCP needs a server with TCP MBM sessions")

// OpenWindowed opens a TCP MBM session and its connection. Errors are one
// line.
func (s *Session) OpenWindowed(ctx context.Context, wr WindowRequest) (*WindowedStream, error) {
	req := mbmwire.SessionRequest{Client: s.srv.Software, Test: wr.Test, Transport: mbmwire.TransportTCP, RateBps: wr.RateBps,
		TargetRTTMs: float64(wr.TargetRTT) / 1e6, TargetMTU: wr.MTU, DurationS: max(wr.Duration.Seconds(), 0.001),
		ReceiveWindowBytes: wr.WindowBytes, ReceiveBufferBytes: wr.BufferBytes}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("windowed session: %w", err)
	}
	var rep mbmwire.SessionReply
	if err := s.api.Call(ctx, http.MethodPost, mbmwire.PathSessions, req, &rep); err != nil {
		return nil, explainMBM(s.api.Base.Host, err)
	}
	if rep.TCPPort == 0 {
		// A server that took the request for a UDP one: end that session
		// at once rather than leave it to expire.
		if rep.ID != "" && len(rep.ID) <= mbmwire.MaxTextLen && !strings.ContainsAny(rep.ID, "/?#") {
			ectx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_ = s.api.Call(ectx, http.MethodPost, mbmwire.PathSessions+"/"+rep.ID+"/end", mbmwire.EndRequest{Verdict: model.MBMError, Reason: "the client wanted a TCP session"}, nil)
			cancel()
		}
		return nil, fmt.Errorf("%s: %w", s.api.Base.Host, ErrNoTCPMBM)
	}
	if rep.TCPPort < 1 || rep.TCPPort > 65535 || rep.ID == "" || len(rep.ID) > mbmwire.MaxTextLen || !(rep.DurationS > 0) {
		return nil, fmt.Errorf("%s granted port %d, session %.40q for %g s: not a valid grant", s.api.Base.Host, rep.TCPPort, rep.ID, rep.DurationS)
	}
	end := func(ctx context.Context, verdict model.MBMVerdict, reason string) (mbmwire.Report, error) {
		var r mbmwire.Report
		if len(reason) > mbmwire.MaxTextLen {
			reason = reason[:mbmwire.MaxTextLen-3] + "..."
		}
		err := s.api.Call(ctx, http.MethodPost, mbmwire.PathSessions+"/"+rep.ID+"/end", mbmwire.EndRequest{Verdict: verdict, Reason: reason}, &r)
		if err == nil && r.TCP == nil {
			err = fmt.Errorf("%s: the end reply has no TCP readback", s.api.Base.Host)
		}
		return r, err
	}
	addr := net.JoinHostPort(s.api.Base.Hostname(), strconv.Itoa(rep.TCPPort))
	c, err := s.srv.DialContext(ctx, "tcp", addr)
	if err != nil {
		ectx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, _ = end(ectx, model.MBMError, "the client could not connect")
		return nil, fmt.Errorf("windowed session: connect to %s: %w", addr, err)
	}
	var tok [mbmwire.TCPTokenLen]byte
	binary.BigEndian.PutUint64(tok[:], rep.Token)
	if _, err := c.Write(tok[:]); err != nil {
		c.Close()
		return nil, fmt.Errorf("windowed session: writing the token to %s: %w", addr, err)
	}
	return &WindowedStream{Conn: c, Reply: rep, end: end}, nil
}

// explainMBM turns an MBM open's failure into one line: a server without
// MBM (404), or one that checked the request as a UDP one (it asked for
// the UDP sink's fields).
func explainMBM(host string, err error) error {
	var se *apiclient.StatusError
	if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
		return fmt.Errorf("%s: server does not support MBM", host)
	}
	var re *apiclient.RefusedError
	if errors.As(err, &re) && re.Status == http.StatusBadRequest && strings.Contains(re.Reason, "packet_bytes") {
		return fmt.Errorf("%s: %w", host, ErrNoTCPMBM)
	}
	return fmt.Errorf("windowed session: %w", err)
}
