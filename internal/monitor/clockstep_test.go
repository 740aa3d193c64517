package monitor

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// fakeClocks is an injected wall and monotonic clock: the monotonic one
// follows the test's loop, the wall one may be stepped or slewed.
type fakeClocks struct{ wall, mono int64 }

func (f *fakeClocks) read() (int64, int64) { return f.wall, f.mono }

// TestClockStep: the wall clock is set 3 s ahead, later 250 ms back,
// while the link is up. Each step is one event (stored, in /status and
// /metrics, one log line); a slew at the kernel's largest rate is none;
// and since probe times come from the monotonic clock, no outage, alert
// or baseline step follows.
func TestClockStep(t *testing.T) {
	c, fs := testCore(t, 200*time.Millisecond)
	var logs strings.Builder
	w, err := newWatcher(c.plan, log.New(&logs, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClocks{wall: t0, mono: 0}
	w.clock = newClockWatch(clk.read)
	ctx := context.Background()
	if err := c.restart(ctx, t0); err != nil {
		t.Fatal(err)
	}
	w.restore(ctx, c, t0)
	for sec := int64(0); sec < 120; sec++ {
		for k := int64(0); k < 10; k++ {
			ns := t0 + sec*1e9 + k*100e6
			c.ring.Push(model.ProbeSample{Stream: 0, Seq: uint32(sec*10 + k), SentNs: ns, RTTNs: 20e6})
		}
		// The wall clock slews 500 ppm fast throughout: not a step (but
		// 0.5 ms of each measured step).
		clk.mono += 1e9
		clk.wall += 1e9 + 500e3
		switch sec {
		case 40:
			clk.wall += 3e9
		case 80:
			clk.wall -= 250e6
		}
		c.step(ctx, t0+(sec+1)*1e9, false)
		w.pass(c, t0+(sec+1)*1e9)
	}
	c.step(ctx, t0+121e9, true)
	evs, err := fs.Events(ctx, c.mid, t0, t0+1000e9, 100)
	if err != nil {
		t.Fatal(err)
	}
	var steps []float64
	for _, e := range evs {
		switch e.Kind {
		case model.EventClock:
			steps = append(steps, e.Detail["step_s"])
		case model.EventOutage, model.EventBaselineStep:
			t.Errorf("a clock step made a %s event: %s", e.Kind, e.Text)
		}
	}
	if len(steps) != 2 || steps[0] < 2.999 || steps[0] > 3.001 || steps[1] > -0.249 || steps[1] < -0.251 {
		t.Fatalf("clock events %v, want +3 s and −0.25 s", steps)
	}
	if n := strings.Count(logs.String(), "clock step of"); n != 2 || !strings.Contains(logs.String(), "clock step of +3.00") {
		t.Errorf("%d log lines:\n%s", n, logs.String())
	}
	if f := w.view(nil); len(f.Firing)+len(f.Recent) != 0 {
		t.Errorf("alerts after a clock step: %+v", f)
	}
	srv := httptest.NewServer(w.handler(c, c.plan.Alerts.Rules))
	defer srv.Close()
	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var st Status
	if err := json.Unmarshal([]byte(get("/status")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Clock.Steps != 2 || st.Clock.LastStepS > -0.249 || st.Clock.LastStepNs != t0+81e9 {
		t.Errorf("status clock %+v", st.Clock)
	}
	m := get("/metrics")
	for _, want := range []string{"sonde_monitor_clock_steps_total 2", "sonde_monitor_clock_last_step_seconds -0.249", "sonde_monitor_store_backlog_rows"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
