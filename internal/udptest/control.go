package udptest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/stamp"
)

// control talks to a sonde server's UDP control endpoints.
type control struct {
	api *apiclient.Client
}

func newControl(server, token, software string, insecure bool) (*control, error) {
	var tlsCfg *tls.Config
	if insecure {
		tlsCfg = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --insecure asks for it
	}
	api, err := apiclient.New(server, token, software, tlsCfg)
	if err != nil {
		return nil, err
	}
	return &control{api: api}, nil
}

// reflectorAddr is the reflector's UDP address: the server's host with the
// port of the session reply.
func (c *control) reflectorAddr(port int) string {
	return net.JoinHostPort(c.api.Base.Hostname(), fmt.Sprint(port))
}

func (c *control) open(ctx context.Context, req stamp.SessionRequest) (stamp.SessionReply, error) {
	var rep stamp.SessionReply
	err := c.api.Call(ctx, http.MethodPost, stamp.PathSessions, req, &rep)
	var se *apiclient.StatusError
	if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
		return rep, fmt.Errorf("%s has no UDP reflector (not a sonde server, or an older one): %d", c.api.Base.Host, se.Status)
	}
	return rep, err
}

func (c *control) close(ctx context.Context, id string) (*stamp.SessionReport, error) {
	var rep stamp.SessionReport
	if err := c.api.Call(ctx, http.MethodDelete, stamp.PathSessions+"/"+id, nil, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
