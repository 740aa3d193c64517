package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/sonde-project/sonde/internal/librespeed"
)

// The page can run its test against other sonde servers (docs/browser.md,
// "Servers"): this server offers a list of them in LibreSpeed's
// server-list format at PathServers (Config.Servers, `serve --servers`),
// the page's Content-Security-Policy lets it connect to them, and a server
// that lets other servers' pages test against it names their origins
// (Config.CORSOrigins, `serve --cors-origins`). Its API then answers those
// origins' requests and preflights. No credential ever crosses origins:
// the page sends no token and no cookie, so a private server (--token)
// refuses a listed page's test as it refuses any client without the token,
// and says so in its 401.

// PathServers lists the sonde servers the page offers (GET).
const PathServers = "/sonde/v1/servers"

// apiPrefix is the part of the URL space other origins may call.
const apiPrefix = "/sonde/v1/"

// checkCORSOrigins refuses an origin that is not "*" or scheme://host[:port].
func checkCORSOrigins(origins []string) error {
	for _, o := range origins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("CORS origin %q: want * or scheme://host[:port], as a browser sends it", o)
		}
	}
	return nil
}

// serversRoutes mounts the server list.
func (s *Server) serversRoutes() {
	s.mux.handleFunc("GET "+PathServers, policyPublic, func(w http.ResponseWriter, r *http.Request) {
		list := s.cfg.Servers
		if list == nil {
			list = []librespeed.Server{}
		}
		w.Header().Set("Cache-Control", "no-cache")
		writeJSON(w, http.StatusOK, list)
	})
}

// allowOrigin tells whether a page from origin may call this server's API.
func (s *Server) allowOrigin(origin string) bool {
	return origin != "" && (slices.Contains(s.cfg.CORSOrigins, "*") || slices.Contains(s.cfg.CORSOrigins, origin))
}

// cors lets the pages of the configured origins call the API: their
// requests get Access-Control-Allow-Origin (and Timing-Allow-Origin, so
// the page's foreign probes can read the ping's connection timings), and
// their preflights (DELETE of a session) are answered here. A preflight
// starts nothing; the request it clears goes through the route table and
// its admission as any other. Credentials are never allowed.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.cfg.CORSOrigins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if !strings.HasPrefix(r.URL.Path, apiPrefix) || !s.allowOrigin(origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Timing-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			h.Set("Access-Control-Allow-Headers", "Content-Type")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// connectSources are the page's CSP connect-src beyond 'self': the listed
// servers' origins, for fetch and WebSocket (a scheme-relative entry takes
// both schemes of each).
func connectSources(list []librespeed.Server) string {
	var out []string
	add := func(v string) {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, e := range list {
		o, err := librespeed.ServerOrigin(e.Server)
		if err != nil {
			continue // ParseServerList refused it already
		}
		host := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(o, "//"), "http://"), "https://")
		switch {
		case strings.HasPrefix(o, "https://"):
			add("https://" + host)
			add("wss://" + host)
		case strings.HasPrefix(o, "http://"):
			add("http://" + host)
			add("ws://" + host)
		default:
			for _, sch := range []string{"http://", "https://", "ws://", "wss://"} {
				add(sch + host)
			}
		}
	}
	return strings.Join(out, " ")
}
