package probe

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/stamp"
)

// SessionOpener opens and closes monitor sessions on a sonde server: the
// boundary between the prober and the server's control API, so tests can
// count or fail the calls.
type SessionOpener interface {
	// Open asks for a session and returns the reply with the reflector's
	// UDP address.
	Open(ctx context.Context, req stamp.SessionRequest) (stamp.SessionReply, netip.AddrPort, error)
	Close(ctx context.Context, id string) error
}

// HTTPSessions opens monitor sessions through a sonde server's control API
// (server as `sonde test` takes it: host:port or a URL).
func HTTPSessions(server, token string, tlsCfg *tls.Config) (SessionOpener, error) {
	api, err := apiclient.New(server, token, "sonde-monitor", tlsCfg)
	if err != nil {
		return nil, err
	}
	return &httpSessions{api: api}, nil
}

type httpSessions struct{ api *apiclient.Client }

func (h *httpSessions) Open(ctx context.Context, req stamp.SessionRequest) (stamp.SessionReply, netip.AddrPort, error) {
	var rep stamp.SessionReply
	if err := h.api.Call(ctx, http.MethodPost, stamp.PathSessions, req, &rep); err != nil {
		return rep, netip.AddrPort{}, fmt.Errorf("open monitor session: %w", err)
	}
	if rep.SSID == 0 || rep.Port <= 0 || rep.Port > 65535 {
		return rep, netip.AddrPort{}, fmt.Errorf("open monitor session: %s replied without a usable SSID and port", h.api.Base.Host)
	}
	host := h.api.Base.Hostname()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return rep, netip.AddrPort{}, fmt.Errorf("open monitor session: resolve %s: %w", host, err)
	}
	return rep, netip.AddrPortFrom(ips[0].Unmap(), uint16(rep.Port)), nil
}

func (h *httpSessions) Close(ctx context.Context, id string) error {
	if err := h.api.Call(ctx, http.MethodDelete, stamp.PathSessions+"/"+id, nil, nil); err != nil {
		return fmt.Errorf("close monitor session: %w", err)
	}
	return nil
}

// resolve turns host[:port] into an address, with defPort when the port
// is omitted.
func resolve(ctx context.Context, target string, defPort int) (netip.AddrPort, error) {
	host, port := target, strconv.Itoa(defPort)
	if h, p, err := net.SplitHostPort(target); err == nil {
		host, port = h, p
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port %q", port)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: no address", host)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(pn)), nil
}
