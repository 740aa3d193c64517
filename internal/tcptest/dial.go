package tcptest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/dscpmark"
	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
)

// endpoint is a parsed server address and how to reach it: control calls
// through api, streams and probes on connections of their own.
type endpoint struct {
	api      *apiclient.Client
	base     *url.URL // scheme://host:port
	tls      *tls.Config
	software string
	// lossBased asks for a loss-based congestion control on load streams.
	lossBased bool
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
		return nil, apiclient.ExplainTLS(e.base, err)
	}
	return tc, nil
}

// dialTCP opens the TCP connection only.
func (e *endpoint) dialTCP(ctx context.Context, port, mark int) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if mark >= 0 {
		d.Control = func(network, _ string, c syscall.RawConn) error {
			return dscpmark.Raw(c.Control, strings.HasSuffix(network, "6"), mark)
		}
	}
	addr := e.hostPort(port)
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// Name the address dialled: a QoS class may use another port.
		u := *e.base
		u.Host = addr
		return nil, apiclient.ExplainDial(&u, err)
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
	if e.lossBased && kind != protocol.KindProbe {
		q.Set("cc", protocol.CCLossBased)
		httpload.LossBased(c) // the sender of an upload
	}
	path := protocol.PathSessions + "/" + id + "/" + kind
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	br, err := e.api.Upgrade(c, kind, path)
	if err != nil {
		return nil, err
	}
	return stream.NewBufferedConn(c, br, br.Buffered()), nil
}
