// Package rpm serves the responsiveness test of
// draft-ietf-ippm-responsiveness-09 (§7, §8.1), so that Apple's
// networkQuality, network-quality/goresponsiveness, Cloudflare's
// networkquality-rs and `sonde rpm` can measure against `sonde serve`:
//
//	GET  /.well-known/nq   the configuration: version 1 and the three URLs
//	                       under both spellings clients read
//	GET  /rpm/small        1 byte: the probes' object
//	GET  /rpm/large        incompressible bytes until the client stops
//	                       (or the test's time or byte limit)
//	POST /rpm/upload       discarded; 200 once the whole body is read
//
// (PUT is accepted on the upload too.) Nothing is compressed or redirected.
// The large object and the upload are load: they run under
// internal/httpload, one admitted test per client IP sharing the server's
// limits, and a refusal is 429 with Retry-After (§7). The config and the
// small object start no work and are not admitted. The protocol as the
// clients speak it, and what each does, is in docs/interop.md.
package rpm

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/sonde-project/sonde/internal/httpload"
)

// Paths of the endpoints.
const (
	ConfigPath = "/.well-known/nq"
	SmallPath  = "/rpm/small"
	LargePath  = "/rpm/large"
	UploadPath = "/rpm/upload"
)

// Config is the document at ConfigPath (§8.1). URLs carries the draft's
// names and the https_ names of Apple's samples, goresponsiveness and
// networkquality-rs, with the same URLs.
type Config struct {
	Version      int    `json:"version"`
	URLs         URLs   `json:"urls"`
	TestEndpoint string `json:"test_endpoint,omitempty"`
}

// URLs are the configuration's endpoints.
type URLs struct {
	SmallDownload      string `json:"small_download_url"`
	LargeDownload      string `json:"large_download_url"`
	Upload             string `json:"upload_url"`
	SmallHTTPSDownload string `json:"small_https_download_url"`
	LargeHTTPSDownload string `json:"large_https_download_url"`
	HTTPSUpload        string `json:"https_upload_url"`
}

// Handler serves the endpoints.
type Handler struct {
	load *httpload.Registry
}

// NewHandler returns a handler whose load requests run under load.
func NewHandler(load *httpload.Registry) (*Handler, error) {
	if load == nil {
		return nil, errors.New("rpm: no load registry")
	}
	return &Handler{load: load}, nil
}

// Routes are the endpoints; the large object and the upload start work.
func (h *Handler) Routes() []httpload.Route {
	up := http.HandlerFunc(h.serveUpload)
	return []httpload.Route{
		{Pattern: "GET " + ConfigPath, Handler: http.HandlerFunc(h.serveConfig)},
		{Pattern: "GET " + SmallPath, Handler: http.HandlerFunc(h.serveSmall)},
		{Pattern: "GET " + LargePath, StartsWork: true, Handler: http.HandlerFunc(h.serveLarge)},
		{Pattern: "POST " + UploadPath, StartsWork: true, Handler: up},
		{Pattern: "PUT " + UploadPath, StartsWork: true, Handler: up},
	}
}

// Register mounts the endpoints on a plain mux (no admission).
func (h *Handler) Register(mux *http.ServeMux) { httpload.Register(mux, h.Routes()) }

// ConfigFor is the configuration a client that reached the server as
// base (scheme and host) is given: every URL on that same host.
func ConfigFor(base url.URL) Config {
	u := func(p string) string {
		v := base
		v.Path, v.RawQuery, v.Fragment = p, "", ""
		return v.String()
	}
	small, large, up := u(SmallPath), u(LargePath), u(UploadPath)
	return Config{Version: 1, URLs: URLs{
		SmallDownload: small, LargeDownload: large, Upload: up,
		SmallHTTPSDownload: small, LargeHTTPSDownload: large, HTTPSUpload: up,
	}}
}

// requestBase is the scheme and host r reached: the Host it named (as
// bounded by the server's header limit), https when it came over TLS.
func requestBase(r *http.Request) url.URL {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return url.URL{Scheme: scheme, Host: r.Host}
}

func noStore(w http.ResponseWriter, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
}

func (h *Handler) serveConfig(w http.ResponseWriter, r *http.Request) {
	if _, err := url.Parse("https://" + r.Host + "/"); err != nil || r.Host == "" {
		http.Error(w, "bad Host header", http.StatusBadRequest)
		return
	}
	body, err := json.Marshal(ConfigFor(requestBase(r)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	noStore(w, "application/json")
	_, _ = w.Write(body)
}

func (h *Handler) serveSmall(w http.ResponseWriter, r *http.Request) {
	noStore(w, "application/octet-stream")
	w.Header().Set("Content-Length", "1")
	_, _ = w.Write([]byte{'x'})
}

func (h *Handler) serveLarge(w http.ResponseWriter, r *http.Request) {
	// No Content-Length: the object is as large as the test allows, and a
	// client that stops reading it ends it (§7: at least 8 GB).
	noStore(w, "application/octet-stream")
	h.load.Download(w, r, -1)
}

func (h *Handler) serveUpload(w http.ResponseWriter, r *http.Request) {
	if !h.load.Upload(w, r) {
		return
	}
	noStore(w, "text/plain")
	w.WriteHeader(http.StatusOK)
}
