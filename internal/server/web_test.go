package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

func postResult(t *testing.T, addr, id, body string) (int, []byte) {
	t.Helper()
	r, err := http.Post("http://"+addr+protocol.PathSessions+"/"+id+"/result", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, b
}

// TestResultSpan is the regression test of the reported failure: one
// ~100-byte result whose counts span 1e9 s killed the server (a point per
// 0.1 s), one spanning 1e5 s gave a 55 MB reply and history row. Both are
// refused with one line, nothing is stored, and a run within the session
// still gets its result, of a size set by the session's span: the
// direction's throughput at 0.1 s steps (500 points over 50 s, ~20 KB),
// while the flow's own series, two counts, stays two points.
func TestResultSpan(t *testing.T) {
	s, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", MaxDuration: 20e9})
	for _, span := range []string{"1e9", "1e5", "51"} {
		_, rep := createSession(t, addr, nil)
		body := `{"download":{"start_s":0,"end_s":1,"tags":["d0"],"counts":{"d0":[{"t_s":0,"bytes":0},{"t_s":` + span + `,"bytes":1000000}]}}}`
		code, reply := postResult(t, addr, rep.ID, body)
		if code != http.StatusBadRequest || len(reply) > 512 || !strings.Contains(string(reply), "not within 0–50") {
			t.Errorf("span %s: %d, %d bytes: %s", span, code, len(reply), reply)
		}
		if _, err := s.history.GetResult(t.Context(), rep.ID); err == nil {
			t.Errorf("span %s: a refused result was stored", span)
		}
	}
	_, rep := createSession(t, addr, nil)
	body := `{"download":{"start_s":0,"end_s":50,"tags":["d0"],"counts":{"d0":[{"t_s":0,"bytes":0},{"t_s":50,"bytes":1000000}]}}}`
	code, reply := postResult(t, addr, rep.ID, body)
	if code != http.StatusOK || len(reply) > 64<<10 {
		t.Fatalf("span 50 s: %d, %d bytes: %.300s", code, len(reply), reply)
	}
	raw, err := s.history.GetResult(t.Context(), rep.ID)
	if err != nil || len(raw) > 64<<10 {
		t.Fatalf("stored: %d bytes, %v", len(raw), err)
	}
}

// TestBrowserRunCheck: each bound refuses what exceeds it and passes what
// a page sends.
func TestBrowserRunCheck(t *testing.T) {
	l := browserLimits{maxT: 150, maxStreams: 4}
	counts := func(ts ...float64) []model.ByteCount {
		var c []model.ByteCount
		for i, x := range ts {
			c = append(c, model.ByteCount{TS: x, Bytes: int64(i) * 1000})
		}
		return c
	}
	phase := func() *BrowserPhase {
		return &BrowserPhase{StartS: 1, EndS: 11, Tags: []string{"d0", "d1"},
			Counts:  map[string][]model.ByteCount{"d0": counts(1, 1.05, 11), "d1": counts(2, 11)},
			Latency: &BrowserProbes{Samples: []model.RTTSample{{TS: 2, RTTMs: 30, ServerMs: 0.01}, {TS: 3, RTTMs: -0.002}}, Lost: 1},
			SelfMs:  []float64{40, 41}, Foreign: &BrowserForeign{TCPMs: []float64{20}, HTTPMs: []float64{21}, Failed: 2}}
	}
	many := func(n int) []float64 { return make([]float64, n) }
	if err := l.check(&BrowserRun{Software: "sonde-web", OffsetS: 0.001, DurationS: 10, ProbeMs: 20, Download: phase(), Upload: phase(),
		Bidir: &BrowserBidir{Download: phase(), Upload: phase()}}); err != nil {
		t.Fatalf("a page's run refused: %v", err)
	}
	for name, mod := range map[string]func(r *BrowserRun){
		"offset past the session": func(r *BrowserRun) { r.OffsetS = 151 },
		"negative duration":       func(r *BrowserRun) { r.DurationS = -1 },
		"long user agent":         func(r *BrowserRun) { r.UserAgent = strings.Repeat("x", maxText+1) },
		"too many errors":         func(r *BrowserRun) { r.Errors = make([]string, maxLines+1) },
		"long note":               func(r *BrowserRun) { r.Notes = []string{strings.Repeat("x", maxText+1)} },
		"end before start":        func(r *BrowserRun) { r.Download.EndS = 0.5 },
		"end past the session":    func(r *BrowserRun) { r.Upload.EndS = 1e5 },
		"too many streams":        func(r *BrowserRun) { r.Download.Tags = []string{"a", "b", "c", "d", "e"} },
		"repeated tag":            func(r *BrowserRun) { r.Download.Tags = []string{"d0", "d0"} },
		"malformed tag":           func(r *BrowserRun) { r.Download.Tags = []string{"d 0"} },
		"counts of no tag":        func(r *BrowserRun) { r.Download.Counts["zz"] = counts(1, 2) },
		"count span 1e9 s":        func(r *BrowserRun) { r.Download.Counts["d0"] = counts(0, 1e9) },
		"count before zero":       func(r *BrowserRun) { r.Download.Counts["d0"] = counts(-5, 1) },
		"counts out of order":     func(r *BrowserRun) { r.Download.Counts["d0"] = counts(1, 3, 2) },
		"negative bytes":          func(r *BrowserRun) { r.Download.Counts["d0"][1].Bytes = -1 },
		"too many counts":         func(r *BrowserRun) { r.Download.Counts["d0"] = counts(many(l.samples(pageCountEvery) + 1)...) },
		"rtt far negative":        func(r *BrowserRun) { r.Download.Latency.Samples[0].RTTMs = -5 },
		"rtt past the session":    func(r *BrowserRun) { r.Download.Latency.Samples[0].RTTMs = 2e5 },
		"negative lost":           func(r *BrowserRun) { r.Download.Latency.Lost = -1 },
		"too many probes": func(r *BrowserRun) {
			r.Baseline = &BrowserProbes{Samples: make([]model.RTTSample, l.samples(pageProbeEvery)+1)}
		},
		"negative self probe":  func(r *BrowserRun) { r.Upload.SelfMs[0] = -1 },
		"too many self probes": func(r *BrowserRun) { r.Upload.SelfMs = many(2*l.samples(pageSelfEvery) + 1) },
		"too many foreign":     func(r *BrowserRun) { r.Upload.Foreign.HTTPMs = many(l.samples(pageForeignEvery) + 1) },
		"failed foreign < 0":   func(r *BrowserRun) { r.Upload.Foreign.Failed = -1 },
		"bidir past the session": func(r *BrowserRun) {
			r.Bidir = &BrowserBidir{Download: phase(), Upload: phase()}
			r.Bidir.Upload.EndS = 1e5
		},
		"bidir too many streams": func(r *BrowserRun) {
			r.Bidir = &BrowserBidir{Download: phase()}
			r.Bidir.Download.Tags = []string{"a", "b", "c", "d", "e"}
		},
	} {
		run := &BrowserRun{DurationS: 10, Download: phase(), Upload: phase()}
		mod(run)
		if err := l.check(run); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: not one line: %q", name, err)
		}
	}
}

// TestResultBodyBound: a body beyond maxBrowserRun gets 413, not a decode.
func TestResultBodyBound(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off"})
	_, rep := createSession(t, addr, nil)
	body := fmt.Sprintf(`{"notes":["%s"]}`, strings.Repeat("x", maxBrowserRun))
	if code, reply := postResult(t, addr, rep.ID, body); code != http.StatusRequestEntityTooLarge || len(reply) > 512 {
		t.Errorf("%d %s", code, reply)
	}
}
