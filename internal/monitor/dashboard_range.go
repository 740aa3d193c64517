package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/query"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/units"
)

// Bounds of the dashboard's /range (a browser supplies the query).
const (
	maxRangeQuery = 512
	// MaxDashboardRangeNs is the longest range the dashboard reads (400
	// days): past it, `monitor report`.
	MaxDashboardRangeNs = int64(400 * 24 * 3600e9)
	// Points per stream the page may ask for, and the default.
	minRangePoints     = 10
	defaultRangePoints = 600
	// rangeTimeout bounds one range's read, under the daemon's HTTP
	// write timeout (30 s).
	rangeTimeout = 25 * time.Second
	rangeWait    = 3 * time.Second
	// rangeExact bounds the raw RTTs kept per stream for exact
	// percentiles (past it they come from the 2 % bins): a month of raw
	// probes must not hold the daemon's memory.
	rangeExact = 1 << 17
	// rangeEvents bounds the events /range lists (the newest are kept).
	rangeEvents = 2000
	// rangeRawNs: a range reads raw probes for its last day at most, the
	// per-minute rollups before (query.Request.RawFromNs).
	rangeRawNs = int64(24 * time.Hour)
)

// RangeQuery is what /range asks: [FromNs, ToNs) and at most Points
// buckets per stream.
type RangeQuery struct {
	FromNs, ToNs int64
	Points       int
}

// ParseRangeQuery reads /range's query string: span (a duration up to 400
// days ending at now: "1h", "24h", "7d") or from and to (RFC 3339 or Unix
// seconds; to defaults to now), and points (10 to 1500, default 600).
// Anything else is an error of one line.
func ParseRangeQuery(raw string, now time.Time) (RangeQuery, error) {
	if len(raw) > maxRangeQuery {
		return RangeQuery{}, fmt.Errorf("a query of %d bytes: at most %d", len(raw), maxRangeQuery)
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return RangeQuery{}, errors.New("the query string is malformed")
	}
	one := map[string]string{}
	for k, vs := range v {
		switch k {
		case "span", "from", "to", "points":
		default:
			return RangeQuery{}, fmt.Errorf("unknown parameter %.40q: want span, from, to and points", k)
		}
		if len(vs) != 1 {
			return RangeQuery{}, fmt.Errorf("%s given %d times", k, len(vs))
		}
		one[k] = vs[0]
	}
	q := RangeQuery{ToNs: now.UnixNano(), Points: defaultRangePoints}
	if s, ok := one["points"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < minRangePoints || n > query.MaxSeriesPoints {
			return RangeQuery{}, fmt.Errorf("points %.20q: want %d to %d", s, minRangePoints, query.MaxSeriesPoints)
		}
		q.Points = n
	}
	span, hasSpan := one["span"]
	_, hasFrom := one["from"]
	_, hasTo := one["to"]
	switch {
	case hasTo && !hasFrom:
		return RangeQuery{}, errors.New("to needs from")
	case hasSpan && hasFrom:
		return RangeQuery{}, errors.New("give span, or from and to, not both")
	case hasSpan:
		d, err := units.ParseDuration(span, time.Duration(MaxDashboardRangeNs))
		if err != nil {
			return RangeQuery{}, fmt.Errorf("span: %w", err)
		}
		if d < time.Minute {
			return RangeQuery{}, fmt.Errorf("span %.20q: at least a minute", span)
		}
		q.FromNs = q.ToNs - int64(d)
	case hasFrom:
		if q.FromNs, err = parseInstant(one["from"]); err != nil {
			return RangeQuery{}, fmt.Errorf("from: %w", err)
		}
		if s, ok := one["to"]; ok {
			if q.ToNs, err = parseInstant(s); err != nil {
				return RangeQuery{}, fmt.Errorf("to: %w", err)
			}
		}
	default:
		q.FromNs = q.ToNs - int64(time.Hour)
	}
	switch {
	case q.ToNs-q.FromNs < int64(time.Minute):
		return RangeQuery{}, errors.New("the range must span at least a minute (to after from)")
	case q.ToNs-q.FromNs > MaxDashboardRangeNs:
		return RangeQuery{}, errors.New("the range spans more than 400 days: use sonde monitor report")
	case q.ToNs > now.UnixNano()+int64(time.Hour):
		return RangeQuery{}, errors.New("the range ends in the future")
	}
	return q, nil
}

// parseInstant reads RFC 3339 or whole Unix seconds within years 2000 to
// 2200 (so the ns arithmetic cannot overflow).
func parseInstant(s string) (int64, error) {
	const lo, hi = 946684800, 7258118400 // 2000-01-01, 2200-01-01
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < lo || n > hi {
			return 0, fmt.Errorf("%d: want Unix seconds between 2000 and 2200", n)
		}
		return n * 1e9, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.Unix() < lo || t.Unix() > hi {
		return 0, fmt.Errorf("%.40q: want RFC 3339 (2026-01-02T15:04:05Z) or Unix seconds", s)
	}
	return t.UnixNano(), nil
}

// DashboardRange is what /range answers: the report of `monitor report`
// over the range (rollups where retention removed the raw probes), with
// the dashboard's detail in its series and without its distributions.
type DashboardRange struct {
	NowNs  int64                `json:"now_ns"`
	Report *model.MonitorReport `json:"report"`
	// Empty: the monitor has no probe in the range (Report is nil).
	Empty bool `json:"empty,omitempty"`
}

// rangeHandler serves /range: one read at a time (another request
// meanwhile gets 503), each at most rangeTimeout.
func (c *core) rangeHandler(now func() time.Time) http.HandlerFunc {
	busy := make(chan struct{}, 1)
	return func(rw http.ResponseWriter, r *http.Request) {
		t := now()
		q, err := ParseRangeQuery(r.URL.RawQuery, t)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		// A read already running: wait a little for it (a page asks for one
		// range at a time), then refuse.
		wait := time.NewTimer(rangeWait)
		defer wait.Stop()
		select {
		case busy <- struct{}{}:
			defer func() { <-busy }()
		case <-wait.C:
			http.Error(rw, "a range is being read: try again shortly", http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), rangeTimeout)
		defer cancel()
		out := DashboardRange{NowNs: t.UnixNano()}
		rep, err := query.Run(ctx, c.st, query.Request{Name: c.plan.Name, FromNs: q.FromNs, ToNs: q.ToNs,
			Config: c.rangeConfig(), Points: q.Points, Detail: true, RawFromNs: q.ToNs - rangeRawNs})
		switch {
		case errors.Is(err, query.ErrNoData):
			out.Empty = true
		case err != nil:
			http.Error(rw, "the range could not be read: "+err.Error(), http.StatusInternalServerError)
			return
		default:
			rep.CDFs = nil
			if n := len(rep.Events) - rangeEvents; n > 0 {
				rep.Events = rep.Events[n:]
				rep.Notes = append(rep.Notes, fmt.Sprintf("%d older events not listed", n))
			}
			out.Report = rep
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(rw).Encode(out)
	}
}

// rangeConfig is the analysis of a range: the daemon's profiles, its
// probe interval, its given capacities (recorded ones are read from the
// store per span), and a bound on the raw RTTs kept.
func (c *core) rangeConfig() reliability.Config {
	rc := reliability.Config{Profiles: c.plan.Profiles, ExactLimit: rangeExact}
	rc.ProbeIntervalNs = int64(float64(time.Second) / c.plan.Rate)
	rc.Loaded.UpBps, rc.Loaded.DownBps = c.plan.UpBps, c.plan.DownBps
	return rc
}
