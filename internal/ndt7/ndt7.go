// Package ndt7 serves the M-Lab ndt7 protocol (m-lab/ndt-server
// spec/ndt7-protocol.md) so that unmodified ndt7 clients can measure against
// sonde. It owns the two WebSocket endpoints, /ndt/v7/download and
// /ndt/v7/upload: the checks made before the upgrade, the random payload and
// its message-size scaling, the measurement messages carrying TCP_INFO, and
// the deadlines that bound every test in time.
//
// A test is one WebSocket connection. The server sends (download) or accepts
// (upload) load for Options.Duration, then sends a last measurement and a
// Close frame. Everything, including a client that never answers the Close,
// is over Duration+3 s after the upgrade: the spec lets a server drop a test
// that has run for thirteen seconds. A server's own limits shorten that
// (Options.MaxTime) and bound the bytes of a test (Options.MaxBytes).
package ndt7

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Protocol constants from the ndt7 specification and from m-lab/ndt-server,
// its reference implementation.
const (
	// Subprotocol is the WebSocket subprotocol a client must offer.
	Subprotocol = "net.measurementlab.ndt.v7"
	// DownloadPath and UploadPath select the test.
	DownloadPath = "/ndt/v7/download"
	UploadPath   = "/ndt/v7/upload"

	// DefaultDuration is how long a test carries load. The spec says a test
	// lasts "up to ten seconds", and clients give up soon after (ndt7-js
	// kills its worker at 12 s), so it is also the longest Duration allowed.
	DefaultDuration = 10 * time.Second

	// MaxMessageSize is the default read limit for one client message. The
	// spec forbids a limit below this, because clients scale their upload
	// messages up to it.
	MaxMessageSize = 1 << 24
	// MinMessageSize is the smallest binary message the spec allows.
	MinMessageSize = 1 << 10
	// InitialMessageSize is the first download message size the spec asks for.
	InitialMessageSize = 1 << 13
	// DefaultMaxScaledMessageSize caps download message growth. ndt-server
	// uses 1<<20 as "a good compromise between Go and JavaScript" clients.
	DefaultMaxScaledMessageSize = 1 << 20

	// maxQueryLen is the spec's limit on the upgrade URL's query string.
	maxQueryLen = 4096
	// defaultGrace is added to Duration to give the hard end of a test.
	defaultGrace = 3 * time.Second
	// handshakeTimeout bounds writing the 101 response.
	handshakeTimeout = 5 * time.Second
	// readBufferSize is the per-connection read buffer; uploads read through
	// it, so it is larger than gorilla's 4 KiB default.
	readBufferSize = 64 << 10
)

// Kind names a test.
type Kind string

// The two tests.
const (
	Download Kind = "download"
	Upload   Kind = "upload"
)

// ErrBusy is the error an Admit function wraps to refuse a test for lack of
// capacity; the client gets 429 Too Many Requests. Any other Admit error
// yields 403 Forbidden.
var ErrBusy = errors.New("ndt7: server busy")

// RejectError is an Admit error that sets the reply itself: its HTTP status
// (e.g. 401 for a wrong token, 429 for a rate limit) and, if positive, the
// Retry-After the client is told to wait, so ndt7 clients get the same
// answers as the embedding server's other tests.
type RejectError struct {
	Status     int
	Reason     string
	RetryAfter time.Duration
}

func (e *RejectError) Error() string { return e.Reason }

// Observer is told about every test, e.g. to feed counters. Its methods are
// called from the request's goroutine and must not block.
type Observer interface {
	// TestStarted is called after a successful WebSocket upgrade.
	TestStarted(kind Kind)
	// TestEnded is called once for every started test with the
	// application-level bytes the server sent (download) or received
	// (upload), and why the test failed: nil if it ran to its end or the
	// client closed it normally.
	TestEnded(kind Kind, bytes int64, err error)
	// Rejected is called when a request is refused before the upgrade, with
	// the HTTP status it got.
	Rejected(kind Kind, status int)
}

// Options configures a Handler. The zero value is the spec's behaviour.
type Options struct {
	// Duration is how long the server sends (download) or accepts (upload)
	// load before it closes the test. Zero means DefaultDuration; more than
	// DefaultDuration is refused.
	Duration time.Duration
	// MaxMessageSize is the read limit for one client message, in bytes.
	// Zero means MaxMessageSize (1<<24). The spec requires at least 1<<24;
	// smaller values (down to MinMessageSize) break conforming clients and
	// exist for tests only.
	MaxMessageSize int64
	// MaxScaledMessageSize caps the download's binary message size. Zero
	// means DefaultMaxScaledMessageSize. It must be a power of two between
	// InitialMessageSize and MaxMessageSize.
	MaxScaledMessageSize int
	// Admit, if set, is called before the upgrade. An error rejects the
	// test (a *RejectError's status, 429 if it wraps ErrBusy, else 403)
	// with the error's text as a one-line plain-text reason. Otherwise
	// release, if not nil, is called once when the test is over.
	Admit func(r *http.Request) (release func(), err error)
	// Observer, if set, is told about every test.
	Observer Observer
	// Done, if set, is called once for every started test, after it
	// ended, with what the server measured of it, so that the embedding
	// server can keep a record. It is called from the request's
	// goroutine and must not block.
	Done func(r *http.Request, res Result)
	// Logf, if set, receives warnings about tests that ended abnormally.
	Logf func(format string, args ...any)
	// MaxTime, if set, bounds a test from the upgrade to its hard end.
	// When it is shorter than Duration plus the 3 s grace, both shrink to
	// fit: the grace to a fifth of MaxTime (at most 3 s), the load to the
	// rest.
	MaxTime time.Duration
	// MaxBytes, if set, bounds the payload of a test: a download stops
	// sending, an upload stops reading, when it is reached, and the test
	// ends early with its last measurement and a Close frame.
	MaxBytes int64
}

// Handler serves ndt7 downloads and uploads. Create one per process: it
// holds the random payload, generated once. It is safe for concurrent use.
type Handler struct {
	duration  time.Duration
	grace     time.Duration
	maxBytes  int64
	readLimit int64
	// messages[i] is a binary message of InitialMessageSize<<i random bytes.
	messages []*websocket.PreparedMessage
	admit    func(r *http.Request) (release func(), err error)
	observer Observer
	done     func(r *http.Request, res Result)
	logf     func(format string, args ...any)
	upgrader websocket.Upgrader
}

// NewHandler checks opts and generates the download payload.
func NewHandler(opts Options) (*Handler, error) {
	h := &Handler{
		duration:  opts.Duration,
		grace:     defaultGrace,
		maxBytes:  opts.MaxBytes,
		readLimit: opts.MaxMessageSize,
		admit:     opts.Admit,
		observer:  opts.Observer,
		done:      opts.Done,
		logf:      opts.Logf,
		upgrader: websocket.Upgrader{
			HandshakeTimeout: handshakeTimeout,
			ReadBufferSize:   readBufferSize,
			Subprotocols:     []string{Subprotocol},
			// Browser clients are served from other origins (M-Lab does
			// the same); the endpoints carry no credentials.
			CheckOrigin: func(*http.Request) bool { return true },
			// Compression is never negotiated: it would measure the
			// compressor, not the path.
			EnableCompression: false,
		},
	}
	switch {
	case h.duration == 0:
		h.duration = DefaultDuration
	case h.duration < 0 || h.duration > DefaultDuration:
		return nil, fmt.Errorf("ndt7: duration %v outside (0, %v]", h.duration, DefaultDuration)
	}
	switch {
	case opts.MaxTime < 0 || opts.MaxBytes < 0:
		return nil, fmt.Errorf("ndt7: negative limit (max time %v, max bytes %d)", opts.MaxTime, opts.MaxBytes)
	case opts.MaxTime > 0 && opts.MaxTime < h.duration+h.grace:
		h.grace = min(defaultGrace, opts.MaxTime/5)
		h.duration = opts.MaxTime - h.grace
	}
	switch {
	case h.readLimit == 0:
		h.readLimit = MaxMessageSize
	case h.readLimit < MinMessageSize:
		return nil, fmt.Errorf("ndt7: max message size %d below %d", h.readLimit, MinMessageSize)
	}
	if h.observer == nil {
		h.observer = nopObserver{}
	}
	if h.logf == nil {
		h.logf = func(string, ...any) {}
	}
	maxScaled := opts.MaxScaledMessageSize
	if maxScaled == 0 {
		maxScaled = DefaultMaxScaledMessageSize
	}
	msgs, err := prepareMessages(maxScaled)
	if err != nil {
		return nil, err
	}
	h.messages = msgs
	return h, nil
}

// prepareMessages returns binary messages of InitialMessageSize, twice that,
// and so on up to max bytes. They are prefixes of one random buffer: random
// so nothing on the path can compress them, shared so the memory cost is
// the largest message (plus gorilla's cached frames).
func prepareMessages(max int) ([]*websocket.PreparedMessage, error) {
	if max < InitialMessageSize || max > MaxMessageSize || max&(max-1) != 0 {
		return nil, fmt.Errorf("ndt7: max scaled message size %d is not a power of two in [%d, %d]",
			max, InitialMessageSize, MaxMessageSize)
	}
	payload := make([]byte, max)
	if _, err := rand.Read(payload); err != nil {
		return nil, fmt.Errorf("ndt7: generating payload: %w", err)
	}
	var msgs []*websocket.PreparedMessage
	for size := InitialMessageSize; size <= max; size <<= 1 {
		pm, err := websocket.NewPreparedMessage(websocket.BinaryMessage, payload[:size])
		if err != nil {
			return nil, fmt.Errorf("ndt7: preparing %d-byte message: %w", size, err)
		}
		msgs = append(msgs, pm)
	}
	return msgs, nil
}

// Register mounts the handler's endpoints on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc(DownloadPath, h.ServeDownload)
	mux.HandleFunc(UploadPath, h.ServeUpload)
}

// ServeDownload runs a download test on the request's connection.
func (h *Handler) ServeDownload(w http.ResponseWriter, r *http.Request) {
	h.serve(Download, w, r)
}

// ServeUpload runs an upload test on the request's connection.
func (h *Handler) ServeUpload(w http.ResponseWriter, r *http.Request) {
	h.serve(Upload, w, r)
}

func (h *Handler) serve(kind Kind, w http.ResponseWriter, r *http.Request) {
	if status, reason := checkRequest(r); status != 0 {
		h.reject(kind, w, status, reason)
		return
	}
	if h.admit != nil {
		release, err := h.admit(r)
		if err != nil {
			status := http.StatusForbidden
			var rej *RejectError
			switch {
			case errors.As(err, &rej) && rej.Status >= 400 && rej.Status <= 599:
				status = rej.Status
				if rej.RetryAfter > 0 {
					// Whole seconds, rounded up: a client never retries early.
					w.Header().Set("Retry-After", strconv.FormatInt(int64((rej.RetryAfter+time.Second-1)/time.Second), 10))
				}
			case errors.Is(err, ErrBusy):
				status = http.StatusTooManyRequests
			}
			h.reject(kind, w, status, err.Error())
			return
		}
		if release != nil {
			defer release()
		}
	}
	conn, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		// The upgrader has already answered with an HTTP error.
		h.logf("ndt7: %s from %s: upgrade: %v", kind, r.RemoteAddr, err)
		h.observer.Rejected(kind, http.StatusBadRequest)
		return
	}
	h.observer.TestStarted(kind)
	s := newSession(h, kind, conn)
	err = s.run()
	if err != nil {
		h.logf("ndt7: %s with %s: %v", kind, r.RemoteAddr, err)
	}
	h.observer.TestEnded(kind, s.bytes(), err)
	if h.done != nil {
		h.done(r, s.result(err))
	}
}

// checkRequest applies the spec's rules for the upgrade request. It returns
// a zero status if the request is acceptable.
func checkRequest(r *http.Request) (status int, reason string) {
	if r.Method != http.MethodGet {
		return http.StatusMethodNotAllowed, "ndt7: method " + r.Method + " not allowed, use GET"
	}
	if !websocket.IsWebSocketUpgrade(r) {
		return http.StatusBadRequest, "ndt7: not a WebSocket upgrade request"
	}
	if !slices.Contains(websocket.Subprotocols(r), Subprotocol) {
		return http.StatusBadRequest, "ndt7: Sec-WebSocket-Protocol must offer " + Subprotocol
	}
	if len(r.URL.RawQuery) > maxQueryLen {
		return http.StatusBadRequest, fmt.Sprintf("ndt7: query string longer than %d bytes", maxQueryLen)
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return http.StatusBadRequest, "ndt7: unparseable query string"
	}
	for k, vs := range q {
		if !utf8.ValidString(k) || !allValidUTF8(vs) {
			return http.StatusBadRequest, "ndt7: query string is not valid UTF-8"
		}
	}
	return 0, ""
}

func allValidUTF8(vs []string) bool {
	for _, v := range vs {
		if !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// reject answers with status and a one-line plain-text reason.
func (h *Handler) reject(kind Kind, w http.ResponseWriter, status int, reason string) {
	reason = strings.Join(strings.Fields(reason), " ")
	w.Header().Set("Connection", "close")
	http.Error(w, reason, status)
	h.observer.Rejected(kind, status)
}

type nopObserver struct{}

func (nopObserver) TestStarted(Kind)             {}
func (nopObserver) TestEnded(Kind, int64, error) {}
func (nopObserver) Rejected(Kind, int)           {}
