package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/monitor/query"
	monreport "github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// Bounds of the fleet view's query (a browser supplies it).
const (
	maxQueryBytes = 8 << 10
	// MaxViewRangeNs: the view reports at most 400 days back.
	MaxViewRangeNs = int64(400 * 24 * 3600e9)
	// ReportTimeout bounds one report the view runs.
	ReportTimeout = 2 * time.Minute
)

// ParseQuery reads the fleet view's query string: since (a whole number of
// hours or days, "36h", "7d"; default 7d, at most 400 days) and label
// (KEY=VALUE, repeated, as --label). The range ends at now.
func ParseQuery(raw string, now time.Time) (Request, error) {
	if len(raw) > maxQueryBytes {
		return Request{}, fmt.Errorf("a query of %d bytes: at most %d", len(raw), maxQueryBytes)
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return Request{}, errors.New("the query string is malformed")
	}
	for k := range v {
		if k != "since" && k != "label" {
			return Request{}, fmt.Errorf("unknown parameter %.40q: want since and label", k)
		}
	}
	since := "7d"
	if s := v["since"]; len(s) > 1 {
		return Request{}, errors.New("since given more than once")
	} else if len(s) == 1 {
		since = s[0]
	}
	d, err := parseSpan(since)
	if err != nil {
		return Request{}, err
	}
	f, err := ParseFilter(v["label"])
	if err != nil {
		return Request{}, err
	}
	to := now.UnixNano()
	return Request{FromNs: to - d, ToNs: to, Filter: f}, nil
}

// parseSpan reads the view's span: a duration (units.ParseDuration: "36h",
// "7d"), more than zero and at most MaxViewRangeNs.
func parseSpan(s string) (int64, error) {
	d, err := units.ParseDuration(s, time.Duration(MaxViewRangeNs))
	if err != nil {
		return 0, fmt.Errorf("since: %w", err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("since %.20q: want a positive duration", s)
	}
	return int64(d), nil
}

// ParseReportQuery reads the query of a monitor's own report (/report):
// monitor (its name, required) and since (as ParseQuery's; default 7d).
// It returns the monitor and the range ending at now.
func ParseReportQuery(raw string, now time.Time) (name string, fromNs, toNs int64, err error) {
	if len(raw) > maxQueryBytes {
		return "", 0, 0, fmt.Errorf("a query of %d bytes: at most %d", len(raw), maxQueryBytes)
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return "", 0, 0, errors.New("the query string is malformed")
	}
	for k, vs := range v {
		if k != "since" && k != "monitor" {
			return "", 0, 0, fmt.Errorf("unknown parameter %.40q: want monitor and since", k)
		}
		if len(vs) != 1 {
			return "", 0, 0, fmt.Errorf("%s given %d times", k, len(vs))
		}
	}
	name = v.Get("monitor")
	if name == "" || len(name) > store.MaxNameLen {
		return "", 0, 0, fmt.Errorf("monitor: give the monitor's name (at most %d bytes)", store.MaxNameLen)
	}
	since := "7d"
	if v.Has("since") {
		since = v.Get("since")
	}
	d, err := parseSpan(since)
	if err != nil {
		return "", 0, 0, err
	}
	toNs = now.UnixNano()
	return name, toNs - d, toNs, nil
}

// ViewStore is what the fleet view reads: the fleet report's rows, and
// one monitor's rows for its own report.
type ViewStore interface {
	store.FleetReader
	store.Monitors
}

// reportCSP is a monitor report's: self-contained HTML with its own
// inline stylesheet and SVG, no script.
const reportCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Handler serves the fleet view: the page (fleet.html, fleet.js and the
// monitor's stylesheet from assets), /fleet.json, the report of the
// query's range and filter over st, and /report, one monitor's own
// report (`sonde monitor report`'s HTML) over the same range. One report
// of either kind runs at a time (another request meanwhile gets 503),
// each at most ReportTimeout; now is the clock (time.Now).
func Handler(st ViewStore, assets fs.FS, now func() time.Time) http.Handler {
	busy := make(chan struct{}, 1)
	files := map[string]string{"/": "fleet.html", "/fleet.js": "fleet.js", "/monitor.css": "monitor.css"}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		name, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		b, err := fs.ReadFile(assets, name)
		if err != nil {
			http.Error(w, "the page is not built", http.StatusNotFound)
			return
		}
		switch {
		case strings.HasSuffix(name, ".html"):
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		case strings.HasSuffix(name, ".js"):
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		default:
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
		}
		_, _ = w.Write(b)
	})
	// report runs fn in the one report slot, at most ReportTimeout; a GET
	// only, and a 503 while another runs.
	report := func(fn func(ctx context.Context, w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			select {
			case busy <- struct{}{}:
				defer func() { <-busy }()
			default:
				http.Error(w, "a report is running: try again shortly", http.StatusServiceUnavailable)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), ReportTimeout)
			defer cancel()
			fn(ctx, w, r)
		}
	}
	mux.HandleFunc("/fleet.json", report(func(ctx context.Context, w http.ResponseWriter, r *http.Request) {
		req, err := ParseQuery(r.URL.RawQuery, now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rep, err := Report(ctx, st, req)
		if err != nil {
			http.Error(w, "the report failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	}))
	mux.HandleFunc("/report", report(func(ctx context.Context, w http.ResponseWriter, r *http.Request) {
		name, from, to, err := ParseReportQuery(r.URL.RawQuery, now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rep, err := query.Run(ctx, st, query.Request{Name: name, FromNs: from, ToNs: to})
		switch {
		case errors.Is(err, query.ErrNoData):
			http.Error(w, strings.TrimSuffix(err.Error(), ": "+query.ErrNoData.Error()), http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, "the report failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		var b bytes.Buffer
		if err := monreport.WriteMonitorHTML(&b, rep); err != nil {
			http.Error(w, "the report failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", reportCSP)
		_, _ = w.Write(b.Bytes())
	}))
	return secure(mux)
}

// secure adds the headers of a same-origin page without inline script.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// Serve serves the fleet view (Handler) on ln until ctx ends, then shuts
// down within 5 s. A slow client meets the header, read and idle
// timeouts; a reply may take as long as a report (ReportTimeout).
func Serve(ctx context.Context, ln net.Listener, st ViewStore, assets fs.FS) error {
	srv := &http.Server{Handler: Handler(st, assets, time.Now), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: ReportTimeout + 30*time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
