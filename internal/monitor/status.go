package monitor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/metrictext"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/ship"
)

// Status is what /status answers (JSON) and `sonde monitor status` prints.
type Status struct {
	Name      string         `json:"name"`
	StartedNs int64          `json:"started_ns"`
	NowNs     int64          `json:"now_ns"`
	Streams   []StreamStatus `json:"streams"`
	Load      *LoadStatus    `json:"load,omitempty"` // only with --interface
	Store     StoreStatus    `json:"store"`
	Ship      *ship.Status   `json:"ship,omitempty"` // only with --ship
	// LastEvents are the newest events written (at most 20), oldest first.
	LastEvents []model.MonitorEvent `json:"last_events"`
	// Clock counts the wall clock's steps since the start (clockstep.go).
	Clock ClockStatus `json:"clock"`
}

// StreamStatus is one stream's state.
type StreamStatus struct {
	Name     string          `json:"name"`
	Target   string          `json:"target"`
	Kind     model.ProbeKind `json:"kind"`
	DSCP     int             `json:"dscp"`
	Sent     uint64          `json:"sent"`
	Answered uint64          `json:"answered"`
	Lost     uint64          `json:"lost"`
	Late     uint64          `json:"late"`
	// LastRTTMs is the newest answered probe's RTT (-1: none yet).
	LastRTTMs float64 `json:"last_rtt_ms"`
	// LossLastMinute is the lost fraction of the probes of the last
	// minute whose timeout has passed (-1: none).
	LossLastMinute float64 `json:"loss_last_minute"`
	// Problem names what is wrong with the target in words, e.g. that
	// its replies parse as no reflector's.
	Problem string `json:"problem,omitempty"`
}

// LoadStatus is the access interface's state.
type LoadStatus struct {
	Interface    string  `json:"interface"`
	State        string  `json:"state"`
	Up           string  `json:"up"`     // the uplink's part: idle, loaded, saturated, unknown
	Down         string  `json:"down"`   // the downlink's
	UpBps        float64 `json:"up_bps"` // capacity in use (0: unknown)
	DownBps      float64 `json:"down_bps"`
	UpLearnt     bool    `json:"up_learnt"`
	DownLearnt   bool    `json:"down_learnt"`
	UpRateBps    float64 `json:"up_rate_bps"`
	DownRateBps  float64 `json:"down_rate_bps"`
	Stale        bool    `json:"stale"` // the driver refreshes its counters slower than they are read
	ResolutionMs float64 `json:"resolution_ms"`
	Samples      int     `json:"samples"`
}

// StoreStatus is the store's health.
type StoreStatus struct {
	Location    string `json:"location"`
	Healthy     bool   `json:"healthy"`
	BacklogRows int    `json:"backlog_rows"` // held in memory while the store fails
	DroppedRows uint64 `json:"dropped_rows"` // lost because the backlog was full
	LastError   string `json:"last_error,omitempty"`
}

const maxLastEvents = 20

func appendEvents(dst, evs []model.MonitorEvent) []model.MonitorEvent {
	dst = append(dst, evs...)
	if n := len(dst) - maxLastEvents; n > 0 {
		dst = append(dst[:0], dst[n:]...)
	}
	return dst
}

// updateStatus refreshes what /status shows, once per loop pass.
func (c *core) updateStatus(now int64, evs []model.MonitorEvent) {
	var stats []StreamStatusCounts
	if c.stats != nil {
		for _, s := range c.stats() {
			stats = append(stats, StreamStatusCounts{s.Sent, s.Answered, s.Lost, s.Late, s.Unmatched})
		}
	}
	// Loss over the last minute of final probes: a backward scan of the
	// window's tail.
	to := now - c.timeoutNs
	from := to - int64(time.Minute)
	sent := make([]int, len(c.plan.Streams))
	lost := make([]int, len(c.plan.Streams))
	lastRTT := make([]float64, len(c.plan.Streams))
	for i := range lastRTT {
		lastRTT[i] = -1
	}
	for i := c.recent.Len() - 1; i >= 0; i-- {
		s := c.recent.At(i)
		if s.SentNs < from {
			break
		}
		if int(s.Stream) >= len(sent) {
			continue
		}
		if lastRTT[s.Stream] < 0 && !s.Lost && s.RTTNs >= 0 {
			lastRTT[s.Stream] = float64(s.RTTNs) / 1e6
		}
		if s.SentNs >= to {
			continue
		}
		sent[s.Stream]++
		if s.Lost {
			lost[s.Stream]++
		}
	}
	var load *LoadStatus
	if c.tracker != nil {
		t := c.tracker.Status()
		load = &LoadStatus{Interface: c.plan.LoadSource(), State: t.State.String(), Up: t.Up.String(), Down: t.Down.String(), UpBps: t.UpBps, DownBps: t.DownBps,
			UpLearnt: t.UpLearnt, DownLearnt: t.DownLearnt, Stale: t.Stale, ResolutionMs: float64(t.Resolution) / 1e6, Samples: t.Samples}
		if t.RatesOK {
			load.UpRateBps, load.DownRateBps = t.UpRate, t.DownRate
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.NowNs = now
	c.status.Load = load
	for i := range c.status.Streams {
		ss := &c.status.Streams[i]
		if lastRTT[i] >= 0 {
			ss.LastRTTMs = lastRTT[i]
		}
		ss.LossLastMinute = -1
		if sent[i] > 0 {
			ss.LossLastMinute = float64(lost[i]) / float64(sent[i])
		}
		if i < len(stats) {
			st := stats[i]
			ss.Sent, ss.Answered, ss.Lost, ss.Late = st.Sent, st.Answered, st.Lost, st.Late
			problem := ""
			switch {
			case st.Answered == 0 && st.Unmatched > 0:
				problem = fmt.Sprintf("%d replies came but none matches a probe: %s is not a %s reflector?", st.Unmatched, ss.Target, ss.Kind)
			case st.Answered == 0 && st.Sent >= 10:
				problem = fmt.Sprintf("no reply to %d probes: %s unreachable or filtered", st.Sent, ss.Target)
			}
			if problem != "" && ss.Problem == "" {
				c.log.Printf("stream %s: %s", ss.Name, problem)
			}
			ss.Problem = problem
		}
	}
	c.status.LastEvents = appendEvents(c.status.LastEvents, evs)
}

// StreamStatusCounts are the prober's counters a status shows.
type StreamStatusCounts struct {
	Sent, Answered, Lost, Late, Unmatched uint64
}

// snapshot copies the status for a reader.
func (c *core) snapshot() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.status
	s.Streams = append([]StreamStatus(nil), s.Streams...)
	s.LastEvents = append([]model.MonitorEvent{}, s.LastEvents...)
	if s.Load != nil {
		l := *s.Load
		s.Load = &l
	}
	if c.shipStatus != nil {
		sh := c.shipStatus()
		s.Ship = &sh
	}
	return s
}

// handler serves /metrics (the core's registry and extra ones, e.g. the
// clock watch's), /status and /healthz.
func (c *core) handler(extra ...*metrictext.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrictext.Handler(4, append([]*metrictext.Registry{c.metrics.reg}, extra...)...))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(c.snapshot())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		s := c.snapshot()
		if !s.Store.Healthy {
			http.Error(w, "store failing: "+s.Store.LastError, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// oneLine keeps an error to its first line.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
