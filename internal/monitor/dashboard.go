package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/alert"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/web"
)

// The dashboard's series: per stream, the last hour of whole minutes and
// the current one, and R(L) over the last 10 minutes.
const (
	seriesMinutes = 60
	r10Minutes    = 10
	// maxMinuteRTTs bounds the RTTs a minute keeps for its percentiles
	// (100 probes/s for a minute); beyond, they are counted only.
	maxMinuteRTTs = 6000
)

// DashboardSeries is what /series answers.
type DashboardSeries struct {
	NowNs int64 `json:"now_ns"` // probes sent before it are final
	// ThresholdsMs are the L of each stream's R10.
	ThresholdsMs []float64         `json:"thresholds_ms"`
	Streams      []DashboardStream `json:"streams"`
}

// DashboardStream is one stream's recent minutes.
type DashboardStream struct {
	Name   string           `json:"name"`
	Points []DashboardPoint `json:"points"` // oldest first; the last may be partial
	// R10 is R(L) per threshold over the last 10 minutes (whole minutes
	// and the current one) with its 95 % interval.
	R10 []model.Reliability `json:"r10"`
}

// DashboardPoint is one minute of a stream.
type DashboardPoint struct {
	StartNs int64   `json:"start_ns"`
	Sent    uint32  `json:"sent"`
	Lost    uint32  `json:"lost"`
	P50Ms   float64 `json:"p50_ms"` // -1: none answered
	P99Ms   float64 `json:"p99_ms"`
	Partial bool    `json:"partial,omitempty"` // the current minute
	within  []uint32
}

// liveSeries accumulates final probes per stream and minute.
type liveSeries struct {
	th    []int64
	mu    sync.Mutex
	nowNs int64
	ss    []streamSeries
}

type streamSeries struct {
	name string
	pts  []DashboardPoint // closed minutes, at most seriesMinutes
	cur  DashboardPoint
	rtts []int64
	open bool
}

func newLiveSeries(streams []model.MonitorStream) *liveSeries {
	l := &liveSeries{th: reliability.Defaults().ThresholdsNs}
	for _, s := range streams {
		l.ss = append(l.ss, streamSeries{name: s.Name})
	}
	return l
}

// add takes final probes in send order; cut: every probe before it is final.
func (l *liveSeries) add(ss []model.ProbeSample, cut int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range ss {
		if s.Stream < 0 || int(s.Stream) >= len(l.ss) {
			continue
		}
		st := &l.ss[s.Stream]
		m := minuteStart(s.SentNs)
		if st.open && m < st.cur.StartNs {
			continue // older than the open minute
		}
		if st.open && m > st.cur.StartNs {
			l.close(st)
		}
		if !st.open {
			st.cur, st.rtts, st.open = DashboardPoint{StartNs: m, within: make([]uint32, len(l.th))}, st.rtts[:0], true
		}
		st.cur.Sent++
		if s.Lost || s.Late || s.RTTNs < 0 {
			st.cur.Lost++
			continue
		}
		if len(st.rtts) < maxMinuteRTTs {
			st.rtts = append(st.rtts, s.RTTNs)
		}
		for i, t := range l.th {
			if s.RTTNs <= t {
				st.cur.within[i]++
			}
		}
	}
	for i := range l.ss {
		if st := &l.ss[i]; st.open && st.cur.StartNs+reliability.MinuteNs <= cut {
			l.close(st)
		}
	}
	l.nowNs = cut
}

func (l *liveSeries) close(st *streamSeries) {
	st.pts = append(st.pts, st.point())
	if n := len(st.pts) - seriesMinutes; n > 0 {
		st.pts = append(st.pts[:0], st.pts[n:]...)
	}
	st.open = false
}

// point is the open minute with its percentiles.
func (st *streamSeries) point() DashboardPoint {
	p := st.cur
	p.within = slices.Clone(p.within)
	p.P50Ms, p.P99Ms = -1, -1
	if len(st.rtts) > 0 {
		v := slices.Clone(st.rtts)
		slices.Sort(v)
		rank := func(q float64) float64 { return float64(v[min(len(v)-1, int(q*float64(len(v))))]) / 1e6 }
		p.P50Ms, p.P99Ms = rank(0.5), rank(0.99)
	}
	return p
}

func (l *liveSeries) view() DashboardSeries {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := DashboardSeries{NowNs: l.nowNs, Streams: make([]DashboardStream, 0, len(l.ss))}
	for _, t := range l.th {
		v.ThresholdsMs = append(v.ThresholdsMs, float64(t)/1e6)
	}
	from := minuteStart(l.nowNs) - (r10Minutes-1)*reliability.MinuteNs
	for i := range l.ss {
		st := &l.ss[i]
		ds := DashboardStream{Name: st.name, Points: slices.Clone(st.pts)}
		if st.open {
			p := st.point()
			p.Partial = true
			ds.Points = append(ds.Points, p)
		}
		var sent uint64
		ok := make([]uint64, len(l.th))
		for _, p := range ds.Points {
			if p.StartNs < from {
				continue
			}
			sent += uint64(p.Sent)
			for j, n := range p.within {
				ok[j] += uint64(n)
			}
		}
		for j, t := range l.th {
			r := model.Reliability{LNs: t, Sent: sent, OK: ok[j]}
			if sent > 0 {
				r.R = float64(ok[j]) / float64(sent)
				r.Lower, r.Upper = reliability.Bounds(ok[j], sent)
			}
			ds.R10 = append(ds.R10, r)
		}
		v.Streams = append(v.Streams, ds)
	}
	return v
}

// dashboardCSP keeps the page to its own origin: no inline script, no
// external resource.
const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// handler serves the dashboard (/ and its assets), /series, /alerts and
// /range (a stored range, as monitor report reads it)
// in front of the core's /metrics, /status and /healthz.
func (w *watcher) handler(c *core, rules []alert.Rule) http.Handler {
	mux := http.NewServeMux()
	assets := web.Assets()
	file := func(name, ctype string) http.HandlerFunc {
		return func(rw http.ResponseWriter, r *http.Request) {
			b, err := fs.ReadFile(assets, name)
			if err != nil {
				http.Error(rw, "dashboard not built: "+name+" missing (make web)", http.StatusNotFound)
				return
			}
			h := rw.Header()
			h.Set("Content-Type", ctype)
			h.Set("Content-Security-Policy", dashboardCSP)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-cache")
			_, _ = rw.Write(b)
		}
	}
	mux.HandleFunc("GET /{$}", file("monitor.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /monitor.js", file("monitor.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /monitor.css", file("monitor.css", "text/css; charset=utf-8"))
	writeJSON := func(rw http.ResponseWriter, v any) {
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(rw).Encode(v)
	}
	mux.HandleFunc("GET /series", func(rw http.ResponseWriter, r *http.Request) { writeJSON(rw, w.series.view()) })
	mux.HandleFunc("GET /alerts", func(rw http.ResponseWriter, r *http.Request) { writeJSON(rw, w.view(rules)) })
	mux.HandleFunc("GET /range", c.rangeHandler(time.Now))
	mux.Handle("/", c.handler(w.clock.reg))
	return mux
}

// Bounds of the series read back at a start.
const (
	// seedRawMax bounds the raw probes read for the minutes of the last
	// hour that have no rollup yet (a kill -9 leaves up to the late
	// horizon's and the open minute's unrolled).
	seedRawMax = 400_000
	seedChunk  = 4096 // probes fed to the series at once
)

// seedSeries fills the dashboard's series at a start from the store: the
// rollups of the last hour's minutes, then the raw probes sent after the
// newest of them (at most seedRawMax), so a restart does not blank the
// dashboard. Probes of this run come after now and are fed by the passes.
func (w *watcher) seedSeries(ctx context.Context, c *core, now int64) error {
	ids, err := c.st.ListStreams(ctx, c.mid)
	if err != nil {
		return fmt.Errorf("dashboard: read the streams: %w", err)
	}
	index := map[int32]int32{}
	for id, s := range ids {
		for i, ps := range c.plan.Streams {
			if ps.Name == s.Name {
				index[id] = int32(i)
			}
		}
	}
	from := minuteStart(now) - seriesMinutes*reliability.MinuteNs
	pts := make([][]DashboardPoint, len(c.plan.Streams))
	rolled := from // raw probes are read from the minute after the newest rollup
	err = c.st.Rollups(ctx, c.mid, from, now, func(r store.Rollup) error {
		i, ok := index[r.Stream]
		if !ok {
			return nil
		}
		m, err := r.Model()
		if err != nil {
			return err
		}
		pts[i] = append(pts[i], w.series.pointOf(m))
		rolled = max(rolled, m.MinuteNs+reliability.MinuteNs)
		return nil
	})
	if err != nil {
		return fmt.Errorf("dashboard: read the rollups: %w", err)
	}
	w.series.seed(pts)
	// The store gives the probes by stream, then send time: the order
	// the series takes per stream, so they go in small chunks (a minute
	// closes when a stream's next minute begins, or at the end).
	buf := make([]model.ProbeSample, 0, seedChunk)
	n, newest := 0, int64(0)
	errFull := errors.New("full")
	err = c.st.Probes(ctx, c.mid, rolled, now, func(p model.ProbeSample) error {
		i, ok := index[p.Stream]
		if !ok {
			return nil
		}
		if n >= seedRawMax {
			return errFull
		}
		n++
		p.Stream, newest = i, max(newest, p.SentNs)
		if buf = append(buf, p); len(buf) == seedChunk {
			w.series.add(buf, rolled)
			buf = buf[:0]
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return fmt.Errorf("dashboard: read the recent probes: %w", err)
	}
	if n > 0 {
		w.series.add(buf, newest+1)
	}
	return nil
}

// pointOf is a stored minute as a dashboard point: percentiles from its
// histogram (nearest rank, the bin's geometric middle clamped to the
// exact extremes), counts within each threshold exact where the rollup
// counted that threshold, else from the bins below it.
func (l *liveSeries) pointOf(m model.MonitorRollup) DashboardPoint {
	p := DashboardPoint{StartNs: m.MinuteNs, Sent: m.Sent, Lost: m.Lost, P50Ms: -1, P99Ms: -1, within: make([]uint32, len(l.th))}
	bins := slices.Clone(m.Bins)
	slices.SortFunc(bins, func(a, b model.RollupBin) int { return int(a.Bin) - int(b.Bin) })
	var n uint64
	for _, b := range bins {
		n += uint64(b.N)
	}
	if n > 0 {
		rank := func(q float64) float64 {
			want := min(n, uint64(q*float64(n))+1)
			var cum uint64
			for _, b := range bins {
				if cum += uint64(b.N); cum >= want {
					lo, hi := float64(reliability.BinUpperNs(int(b.Bin)-1)), float64(reliability.BinUpperNs(int(b.Bin)))
					v := math.Sqrt(lo * hi)
					switch {
					case b.Bin == 0: // below the first edge
						v = float64(m.MinNs)
					case hi >= math.MaxInt64: // above the last
						v = float64(m.MaxNs)
					}
					return min(max(v, float64(m.MinNs)), float64(m.MaxNs)) / 1e6
				}
			}
			return float64(m.MaxNs) / 1e6
		}
		p.P50Ms, p.P99Ms = rank(0.5), rank(0.99)
	}
	for j, t := range l.th {
		if k := slices.Index(m.ThresholdsNs, t); k >= 0 && k < len(m.Within) {
			p.within[j] = m.Within[k]
			continue
		}
		for _, b := range bins {
			if reliability.BinUpperNs(int(b.Bin)) <= t {
				p.within[j] += b.N
			}
		}
	}
	return p
}

// seed sets each stream's closed minutes (oldest first), before any probe
// of this run is added.
func (l *liveSeries) seed(pts [][]DashboardPoint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.ss {
		if i >= len(pts) || len(pts[i]) == 0 {
			continue
		}
		p := pts[i]
		slices.SortFunc(p, func(a, b DashboardPoint) int { return int(min(max(a.StartNs-b.StartNs, -1), 1)) })
		if n := len(p) - seriesMinutes; n > 0 {
			p = p[n:]
		}
		l.ss[i].pts = p
		l.nowNs = max(l.nowNs, p[len(p)-1].StartNs+reliability.MinuteNs)
	}
}
