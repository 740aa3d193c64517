package udptest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
)

// control talks to a sonde server's UDP control endpoints.
type control struct {
	base     *url.URL
	hc       *http.Client
	token    string
	software string
}

func newControl(server, token, software string, insecure bool) (*control, error) {
	u, err := protocol.ParseServer(server)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --insecure asks for it
	}
	return &control{base: u, hc: &http.Client{Transport: tr, Timeout: 15 * time.Second}, token: token, software: software}, nil
}

// reflectorAddr is the reflector's UDP address: the server's host with the
// port of the session reply.
func (c *control) reflectorAddr(port int) string {
	return net.JoinHostPort(c.base.Hostname(), fmt.Sprint(port))
}

func (c *control) open(ctx context.Context, req stamp.SessionRequest) (stamp.SessionReply, error) {
	var rep stamp.SessionReply
	err := c.call(ctx, http.MethodPost, stamp.PathSessions, req, &rep)
	return rep, err
}

func (c *control) close(ctx context.Context, id string) (*stamp.SessionReport, error) {
	var rep stamp.SessionReport
	if err := c.call(ctx, http.MethodDelete, stamp.PathSessions+"/"+id, nil, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

func (c *control) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", c.software)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("cannot reach sonde server at %s: connection refused (is `sonde serve` running?)", c.base.Host)
		}
		return fmt.Errorf("cannot reach sonde server at %s: %w", c.base.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var er struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &er) == nil && er.Error != "" {
			return fmt.Errorf("server refused: %s", er.Error)
		}
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return fmt.Errorf("%s has no UDP reflector (not a sonde server, or an older one): %s", c.base.Host, resp.Status)
		}
		return fmt.Errorf("%s answered %s", c.base.Host, resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
		return fmt.Errorf("invalid reply from %s to %s %s: %v", c.base.Host, method, path, err)
	}
	return nil
}
