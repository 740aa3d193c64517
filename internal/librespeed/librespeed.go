// Package librespeed serves LibreSpeed's backend (librespeed/speedtest's PHP
// backend and librespeed/speedtest-go), so LibreSpeed's page, its worker
// and librespeed-cli can measure against `sonde serve`:
//
//	garbage   GET: ckSize MiB (default 4, at most 1024) of incompressible bytes
//	empty     GET/HEAD: 200, empty (ping and pingURL); POST: 200, empty,
//	          once the whole body is read (upload)
//	getIP     {"processedString": ..., "rawIspInfo": ""}: the client's
//	          address, labelled when private, loopback, link-local or CGNAT;
//	          nothing is looked up on the network
//
// each under /, /backend/, and with .php, as speedtest-go mounts them, with
// its CORS (any origin; GET, POST, OPTIONS, HEAD), and
// /.well-known/librespeed: a server list naming this server, which
// librespeed-cli fetches when its list URL does not answer a list.
// garbage and a non-empty empty POST are load: they run under
// internal/httpload, one admitted test per client IP under the server's
// limits. docs/interop.md says how each client is pointed here.
package librespeed

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"

	"github.com/sonde-project/sonde/internal/httpload"
)

// WellKnownPath is where the server list naming this server is served.
const WellKnownPath = "/.well-known/librespeed"

// Garbage sizes, in MiB chunks as LibreSpeed counts them.
const (
	chunkBytes       = 1 << 20
	defaultChunks    = 4
	maxChunks        = 1024
	paramBytesLimit  = 32 // longest ckSize value parsed
	serverListIDThis = 1
)

// Server is one entry of LibreSpeed's server-list format; the URLs are
// relative to Server.
type Server struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Server      string `json:"server"`
	DlURL       string `json:"dlURL"`
	UlURL       string `json:"ulURL"`
	PingURL     string `json:"pingURL"`
	GetIPURL    string `json:"getIpURL"`
	SponsorName string `json:"sponsorName"`
	SponsorURL  string `json:"sponsorURL"`
}

// IPReply is getIP's answer.
type IPReply struct {
	ProcessedString string `json:"processedString"`
	// RawISPInfo is "" as the PHP backend answers without ISP lookup.
	RawISPInfo string `json:"rawIspInfo"`
}

// Handler serves the backend.
type Handler struct {
	load *httpload.Registry
	name string
}

// NewHandler returns a handler whose load runs under load; name is this
// server's name in the server list.
func NewHandler(load *httpload.Registry, name string) (*Handler, error) {
	if load == nil {
		return nil, errors.New("librespeed: no load registry")
	}
	if name == "" {
		name = "sonde"
	}
	return &Handler{load: load, name: name}, nil
}

// Paths lists every path an endpoint is served at: speedtest-go's and
// the PHP backend's, at the root and under backend/.
func Paths(endpoint string) []string {
	var ps []string
	for _, dir := range []string{"/", "/backend/"} {
		for _, ext := range []string{"", ".php"} {
			ps = append(ps, dir+endpoint+ext)
		}
	}
	return ps
}

// Routes are the endpoints under every path LibreSpeed's clients use;
// garbage and empty start work (they move the test's bytes), getIP and
// the server list do not (they answer GET and HEAD, and the CORS preflight).
func (h *Handler) Routes() []httpload.Route {
	var rs []httpload.Route
	for _, e := range []struct {
		name string
		work bool
		fn   http.HandlerFunc
	}{{"garbage", true, h.serveGarbage}, {"empty", true, h.serveEmpty}, {"getIP", false, h.serveIP}} {
		for _, p := range Paths(e.name) {
			rs = append(rs, httpload.Route{Pattern: p, StartsWork: e.work, Handler: cors(e.fn)})
		}
	}
	return append(rs, httpload.Route{Pattern: WellKnownPath, Handler: cors(h.serveList)})
}

// Register mounts the endpoints on a plain mux (no admission).
func (h *Handler) Register(mux *http.ServeMux) { httpload.Register(mux, h.Routes()) }

// cors answers as speedtest-go's go-chi/cors setup does: any origin; GET,
// POST, OPTIONS and HEAD; any request header. A preflight is answered
// here; the PHP backend's cors=true parameter gets the same headers.
func cors(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		if r.Header.Get("Origin") != "" || r.URL.Query().Has("cors") {
			hd.Set("Access-Control-Allow-Origin", "*")
			hd.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			hd.Set("Access-Control-Allow-Origin", "*")
			hd.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS, HEAD")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				hd.Set("Access-Control-Allow-Headers", req)
			}
			hd.Add("Vary", "Access-Control-Request-Method")
			hd.Add("Vary", "Access-Control-Request-Headers")
			w.WriteHeader(http.StatusOK)
			return
		}
		hd.Set("Cache-Control", "no-store, no-cache, must-revalidate, max-age=0, s-maxage=0")
		hd.Set("Pragma", "no-cache")
		next(w, r)
	}
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

// Chunks is the garbage size ckSize asks for, as the PHP backend reads
// it: absent, empty, 0 or not a number is the default 4; negative is none;
// above 1024 is 1024.
func Chunks(ckSize string) int {
	if len(ckSize) > paramBytesLimit {
		return maxChunks // only a huge number (or junk) is this long
	}
	n, err := strconv.ParseInt(ckSize, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		err = nil // n is the int64 bound on the number's side
	}
	switch {
	case err != nil || n == 0:
		return defaultChunks
	case n < 0:
		return 0
	default:
		return int(min(n, maxChunks))
	}
}

func (h *Handler) serveGarbage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	hd := w.Header()
	hd.Set("Content-Description", "File Transfer")
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Disposition", "attachment; filename=random.dat")
	hd.Set("Content-Transfer-Encoding", "binary")
	if r.Method == http.MethodHead {
		return
	}
	h.load.Download(w, r, int64(Chunks(r.URL.Query().Get("ckSize")))*chunkBytes)
}

func (h *Handler) serveEmpty(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		// The ping and pingURL: 200 with an empty body, no test.
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodPost:
	default:
		methodNotAllowed(w, "GET, HEAD, POST")
		return
	}
	if r.ContentLength == 0 {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return
	}
	// The reply waits for the whole body: a server that answers first lets
	// the client count bytes that never arrived (librespeed/speedtest#819).
	if !h.load.Upload(w, r) {
		return
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

func (h *Handler) serveIP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	writeJSON(w, IPReply{ProcessedString: Describe(httpload.ClientIP(r))})
}

// Describe is getIP's processedString for a client address: the address,
// and for a special one the label LibreSpeed's backends give it. CGNAT is
// all of 100.64.0.0/10 (speedtest-go's pattern misses part of it).
func Describe(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	s := ip.String()
	switch {
	case ip.IsLoopback() && ip.Is6():
		return s + " - localhost IPv6 access"
	case ip.IsLoopback():
		return s + " - localhost IPv4 access"
	case ip.IsLinkLocalUnicast() && ip.Is6():
		return s + " - link-local IPv6 access"
	case ip.IsLinkLocalUnicast():
		return s + " - link-local IPv4 access"
	case ip.IsPrivate() && ip.Is6():
		return s + " - private IPv6 access"
	case ip.IsPrivate():
		return s + " - private IPv4 access"
	case cgnat.Contains(ip):
		return s + " - CGNAT IPv4 access"
	}
	return s
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func (h *Handler) serveList(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	if _, err := url.Parse("http://" + r.Host + "/"); err != nil || r.Host == "" {
		http.Error(w, "bad Host header", http.StatusBadRequest)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	writeJSON(w, []Server{ServerFor(h.name, url.URL{Scheme: scheme, Host: r.Host, Path: "/"})})
}

// ServerFor is the server-list entry of a server reached at base.
func ServerFor(name string, base url.URL) Server {
	return Server{ID: serverListIDThis, Name: name, Server: base.String(),
		DlURL: "backend/garbage.php", UlURL: "backend/empty.php", PingURL: "backend/empty.php",
		GetIPURL: "backend/getIP.php"}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
