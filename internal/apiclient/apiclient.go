// Package apiclient makes the JSON calls of sonde's control APIs (the test
// sessions of docs/protocol.md, the UDP sessions of docs/udp.md) and turns
// every way they fail into one line a user can act on: the server's own
// reason when it is a sonde server, otherwise what was found instead.
package apiclient

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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/sonde-project/sonde/internal/protocol"
)

// Client calls one sonde server.
type Client struct {
	Base     *url.URL // scheme://host:port
	HTTP     *http.Client
	Token    string
	Software string
}

// New parses the server address (protocol.ParseServer) and makes a client;
// tlsCfg is used for https (nil: the defaults).
func New(server, token, software string, tlsCfg *tls.Config) (*Client, error) {
	u, err := protocol.ParseServer(server)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	return &Client{Base: u, Token: token, Software: software, HTTP: &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: false, MaxIdleConns: 2,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return newAskFirstConn(c), nil
			}},
	}}, nil
}

// askFirstConn holds its first Read until its first Write (or Close). A
// server over its connection cap answers 503 as soon as it accepts, before
// the request is written; net/http's transport, reading the connection
// from the moment it is dialled, then takes the answer for an unsolicited
// one, logs it and fails the request with an internal message
// ("readLoopPeekFailLocked: %!w(<nil>)") that loses the server's reason.
// Held until the request is written, the answer is read as the reply to
// it, and the refusal's reason reaches the user.
type askFirstConn struct {
	net.Conn
	asked chan struct{}
	once  sync.Once
}

func newAskFirstConn(c net.Conn) *askFirstConn {
	return &askFirstConn{Conn: c, asked: make(chan struct{})}
}

func (c *askFirstConn) ask() { c.once.Do(func() { close(c.asked) }) }

func (c *askFirstConn) Read(p []byte) (int, error) {
	<-c.asked
	return c.Conn.Read(p)
}

func (c *askFirstConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.ask()
	return n, err
}

func (c *askFirstConn) Close() error {
	c.ask()
	return c.Conn.Close()
}

// Close drops idle connections.
func (c *Client) Close() { c.HTTP.CloseIdleConnections() }

// Call does one request to the control API, sending body (if not nil) as
// JSON and decoding a JSON reply into out (if not nil). Every failure comes
// back as one line a user can act on.
func (c *Client) Call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", c.Software)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if isTLSError(err) {
			return ExplainTLS(c.Base, err)
		}
		return ExplainDial(c.Base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return ErrorFromReply(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s is not a sonde server (invalid reply to %s %s: %v)", c.Base.Host, method, path, err)
	}
	return nil
}

// ErrorFromReply turns a non-success reply into one line: the server's own
// reason when it is a sonde server, otherwise what was found instead.
func ErrorFromReply(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var er protocol.ErrorReply
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && json.Unmarshal(body, &er) == nil && er.Error != "" {
		return &RefusedError{Status: resp.StatusCode, Reason: er.Error}
	}
	if strings.Contains(string(body), "HTTP request to an HTTPS server") {
		return errors.New("the server speaks HTTPS: use https:// in the server address")
	}
	if refusalStatus(resp.StatusCode) {
		// A refusal whose reason is plain text (the connection caps answer
		// before any handler runs) or missing is still a refusal.
		reason := plainReason(body)
		if reason == "" {
			reason = "answered " + strconv.Quote(resp.Status)
		}
		return &RefusedError{Status: resp.StatusCode, Reason: reason}
	}
	host := ""
	if resp.Request != nil {
		host = resp.Request.URL.Host + " "
	}
	return &StatusError{Status: resp.StatusCode, Msg: fmt.Sprintf("not a sonde server: %sanswered %q", host, resp.Status)}
}

// refusalStatus tells whether an HTTP status says "not you, not now":
// a missing or wrong token, a spent limit, a busy server.
func refusalStatus(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	}
	return false
}

// plainReason is the first line of a plain-text body, bounded and with
// anything unprintable dropped (the body is the server's, not ours), or
// "" when it holds none or looks like a page rather than a reason.
func plainReason(body []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "<") {
		return ""
	}
	line = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, line)
	if r := []rune(line); len(r) > 200 {
		line = string(r[:200]) + "…"
	}
	return line
}

// StatusError is a reply that is not from a sonde server (no JSON reason),
// with its status so a caller can say more (e.g. 404: an older server).
type StatusError struct {
	Status int
	Msg    string
}

func (e *StatusError) Error() string { return e.Msg }

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

func ExplainTLS(u *url.URL, err error) error {
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

func ExplainDial(u *url.URL, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach sonde server at %s: connection refused (is `sonde serve` running?)", u.Host)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("cannot reach sonde server at %s: no route to host", u.Host)
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return fmt.Errorf("cannot reach sonde server at %s: timed out", u.Host)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		// net/http's wordings when the close races with the request write,
		// or the server answered before it was asked: its internal names,
		// never to be shown.
		strings.Contains(err.Error(), "server closed idle connection"),
		strings.Contains(err.Error(), "readLoopPeekFailLocked"):
		return fmt.Errorf("%s closed the connection before answering: refused or overloaded (over its connection cap?), not a sonde server, or TLS expected (try https://)", u.Host)
	}
	if _, what, ok := strings.Cut(err.Error(), "malformed HTTP response "); ok {
		return fmt.Errorf("%s is not a sonde server: it answered %s, not HTTP", u.Host, what)
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

// Upgrade turns c, a fresh connection to the server (TLS already done for
// https), into a stream of the given kind (docs/protocol.md): it sends the
// upgrade request for path (the stream's path under the session, with its
// query) and reads the server's 101. The returned reader reads c; bytes
// the server sent after its 101 are already in it. On an error c is
// closed and the error is one line.
func (c *Client) Upgrade(conn net.Conn, kind, path string) (*bufio.Reader, error) {
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nUser-Agent: %s\r\n\r\n",
		path, c.Base.Host, protocol.StreamUpgrade, c.Software)
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open %s stream: %w", kind, err)
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open %s stream: %s did not answer like a sonde server: %w", kind, c.Base.Host, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		conn.Close()
		return nil, fmt.Errorf("open %s stream: %w", kind, ErrorFromReply(resp))
	}
	_ = conn.SetDeadline(time.Time{})
	return br, nil
}
