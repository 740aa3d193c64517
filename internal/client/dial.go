package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/dscp"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
)

// endpoint is a parsed server address and how to reach it.
type endpoint struct {
	base     *url.URL // scheme://host:port
	tls      *tls.Config
	token    string
	software string
}

// hostPort returns the address to dial, with port overridden if port > 0.
func (e *endpoint) hostPort(port int) string {
	if port > 0 {
		return net.JoinHostPort(e.base.Hostname(), fmt.Sprint(port))
	}
	return e.base.Host
}

// dial opens a TCP connection (marked with mark ≥ 0 before connecting, so
// the SYN carries it too) and, for https, completes the TLS handshake.
func (e *endpoint) dial(ctx context.Context, port, mark int) (net.Conn, error) {
	c, err := e.dialTCP(ctx, port, mark)
	if err != nil {
		return nil, err
	}
	if e.tls == nil {
		return c, nil
	}
	tc := tls.Client(c, e.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, explainTLS(e.base, err)
	}
	return tc, nil
}

// dialTCP opens the TCP connection only.
func (e *endpoint) dialTCP(ctx context.Context, port, mark int) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if mark >= 0 {
		d.Control = func(network, _ string, c syscall.RawConn) error {
			return dscp.MarkRaw(c.Control, strings.HasSuffix(network, "6"), mark)
		}
	}
	addr := e.hostPort(port)
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// Name the address dialled: a QoS class may use another port.
		u := *e.base
		u.Host = addr
		return nil, explainDial(&u, err)
	}
	return c, nil
}

// openStream dials and upgrades a stream of the given kind.
func (e *endpoint) openStream(ctx context.Context, id, kind string, spec flowSpec) (*stream.BufferedConn, error) {
	c, err := e.dial(ctx, spec.port, spec.mark)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if spec.tag != "" {
		q.Set("tag", spec.tag)
	}
	if spec.mark >= 0 {
		q.Set("dscp", fmt.Sprint(spec.mark))
	}
	path := protocol.PathSessions + "/" + id + "/" + kind
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nUser-Agent: %s\r\n\r\n",
		path, e.base.Host, protocol.StreamUpgrade, e.software)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("open %s stream: %w", kind, err)
	}
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("open %s stream: %s did not answer like a sonde server: %w", kind, e.base.Host, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("open %s stream: %w", kind, errorFromReply(resp))
	}
	_ = c.SetDeadline(time.Time{})
	return stream.NewBufferedConn(c, br, br.Buffered()), nil
}

// call does one control request and decodes a JSON reply into out.
func (e *endpoint) call(ctx context.Context, hc *http.Client, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, e.base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", e.software)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if isTLSError(err) {
			return explainTLS(e.base, err)
		}
		return explainDial(e.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return errorFromReply(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s is not a sonde server (invalid reply to %s %s: %v)", e.base.Host, method, path, err)
	}
	return nil
}

// errorFromReply turns a non-success reply into one line: the server's own
// reason when it is a sonde server, otherwise what was found instead.
func errorFromReply(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var er protocol.ErrorReply
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && json.Unmarshal(body, &er) == nil && er.Error != "" {
		return &RefusedError{Status: resp.StatusCode, Reason: er.Error}
	}
	if strings.Contains(string(body), "HTTP request to an HTTPS server") {
		return errors.New("the server speaks HTTPS: use https:// in the server address")
	}
	host := ""
	if resp.Request != nil {
		host = resp.Request.URL.Host + " "
	}
	return fmt.Errorf("not a sonde server: %sanswered %q", host, resp.Status)
}

// RefusedError is a sonde server's refusal, with its reason.
type RefusedError struct {
	Status int
	Reason string
}

func (e *RefusedError) Error() string { return "server refused the test: " + e.Reason }

func isTLSError(err error) bool {
	var re tls.RecordHeaderError
	var ce *tls.CertificateVerificationError
	return errors.As(err, &re) || errors.As(err, &ce) || strings.Contains(err.Error(), "tls:") ||
		strings.Contains(err.Error(), errPlainReply)
}

// errPlainReply is how net/http reports a plain HTTP answer to a TLS
// handshake; it keeps no tls.RecordHeaderError to match.
const errPlainReply = "server gave HTTP response to HTTPS client"

func explainTLS(u *url.URL, err error) error {
	var re tls.RecordHeaderError
	if errors.As(err, &re) || strings.Contains(err.Error(), errPlainReply) {
		return fmt.Errorf("TLS handshake with %s failed: the server does not speak TLS (use http://)", u.Host)
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return fmt.Errorf("TLS handshake with %s failed: certificate not trusted (%v); use --insecure for a self-signed test server", u.Host, ce.Err)
	}
	return fmt.Errorf("TLS handshake with %s failed: %v", u.Host, err)
}

func explainDial(u *url.URL, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach sonde server at %s: connection refused (is `sonde serve` running?)", u.Host)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("cannot reach sonde server at %s: no route to host", u.Host)
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return fmt.Errorf("cannot reach sonde server at %s: timed out", u.Host)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("%s closed the connection: not a sonde server, or TLS expected (try https://)", u.Host)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("cannot resolve %s: %v", u.Hostname(), dnsErr.Err)
	}
	return fmt.Errorf("cannot reach sonde server at %s: %v", u.Host, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
