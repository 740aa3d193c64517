package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/monitortest"
	"github.com/sonde-project/sonde/internal/monitor/query"
)

func TestParseRangeQuery(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ok := []struct {
		q        string
		span     time.Duration
		points   int
		toOffset time.Duration
	}{
		{"", time.Hour, defaultRangePoints, 0},
		{"span=24h", 24 * time.Hour, defaultRangePoints, 0},
		{"span=7d&points=300", 7 * 24 * time.Hour, 300, 0},
		{"span=400d", 400 * 24 * time.Hour, defaultRangePoints, 0},
		{"from=1799996400&to=1799998200", 30 * time.Minute, defaultRangePoints, -1800 * time.Second},
		{"from=2027-01-15T07:00:00Z", time.Hour, defaultRangePoints, 0},
	}
	for _, c := range ok {
		q, err := ParseRangeQuery(c.q, now)
		if err != nil {
			t.Errorf("%q: %v", c.q, err)
			continue
		}
		if q.ToNs-q.FromNs != int64(c.span) || q.Points != c.points || q.ToNs != now.UnixNano()+int64(c.toOffset) {
			t.Errorf("%q: %+v", c.q, q)
		}
	}
	bad := []string{"span=30s", "span=401d", "span=1h&from=1799996400", "points=9", "points=1501", "points=x",
		"span=1h&span=2h", "nosuch=1", "from=1", "from=1799998200&to=1799996400", "from=yesterday",
		"to=" + "9999999999", "from=1799996400&to=1800010000", "%zz", strings.Repeat("a", 600), "span=-1h"}
	for _, b := range bad {
		if q, err := ParseRangeQuery(b, now); err == nil {
			t.Errorf("%.40q accepted: %+v", b, q)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error of more than one line", b)
		}
	}
}

func FuzzParseRangeQuery(f *testing.F) {
	for _, s := range []string{"", "span=24h", "from=1799996400&to=1799998200&points=20", "from=2027-01-15T07:00:00Z", "span=1d12h", "points=1500"} {
		f.Add(s)
	}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseRangeQuery(raw, now)
		if err != nil {
			return
		}
		if span := q.ToNs - q.FromNs; span < int64(time.Minute) || span > MaxDashboardRangeNs ||
			q.Points < minRangePoints || q.Points > 1500 || q.ToNs > now.UnixNano()+int64(time.Hour) {
			t.Fatalf("%q gave %+v", raw, q)
		}
	})
}

// TestDashboardRange reads a week of synthetic history (rollups, then
// two hours of raw probes) through /range over the spans the page offers:
// bounded points, the smoke quantiles, R(L) counts and load states in
// each bucket, the stored events (outage, loaded episodes with grade and
// buffer, the restart) and 100 % loss told from no data.
func TestDashboardRange(t *testing.T) {
	c, _ := testCore(t, time.Second)
	end := t0 + 7*dayNsTest
	w, err := monitortest.Fill(context.Background(), c.st, monitortest.History{Name: "t", Streams: c.plan.Streams,
		FromNs: t0, ToNs: end, RawNs: 2 * int64(time.Hour), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, end)
	srv := httptest.NewServer(c.rangeHandler(func() time.Time { return now }))
	defer srv.Close()
	get := func(q string) (int, DashboardRange, string) {
		resp, err := http.Get(srv.URL + "/range?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out DashboardRange
		var raw strings.Builder
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		} else {
			b := make([]byte, 512)
			n, _ := resp.Body.Read(b)
			raw.Write(b[:n])
		}
		return resp.StatusCode, out, raw.String()
	}
	for _, span := range []string{"1h", "24h", "7d"} {
		start := time.Now()
		code, out, _ := get("span=" + span + "&points=200")
		t.Logf("span %s read in %v", span, time.Since(start).Round(time.Millisecond))
		if code != 200 || out.Report == nil || len(out.Report.Series) != 1 {
			t.Fatalf("span %s: %d %+v", span, code, out)
		}
		s := out.Report.Series[0]
		if len(s.Points) == 0 || len(s.Points) > 200 {
			t.Errorf("span %s: %d points", span, len(s.Points))
		}
		for _, p := range s.Points {
			if p.Sent > 0 && p.Lost < p.Sent && (len(p.SmokeNs) != 7 || p.SmokeNs[0] < 12e6 || p.SmokeNs[6] > 400e6) {
				t.Errorf("span %s: bucket at %d smoke %v", span, p.StartNs, p.SmokeNs)
			}
			if len(p.Within) != len(out.Report.ThresholdsNs) || len(p.Load) != len(model.LoadStates) {
				t.Errorf("span %s: bucket at %d: %d within, %d load", span, p.StartNs, len(p.Within), len(p.Load))
			}
		}
		if out.Report.CDFs != nil {
			t.Errorf("span %s: distributions sent", span)
		}
	}
	// The week: raw for the last two hours, rollups before.
	_, week, _ := get("span=7d&points=1000")
	r := week.Report
	if r.RawFromNs != end-2*int64(time.Hour) {
		t.Errorf("raw from %d, want %d", r.RawFromNs, end-2*int64(time.Hour))
	}
	// Reading rollups for minutes whose raw probes are kept (the long
	// ranges' shortcut) counts the same probes.
	for _, raw := range []int64{0, end - int64(time.Hour)} {
		rep, err := query.Run(context.Background(), c.st, query.Request{Name: "t", FromNs: end - 3*int64(time.Hour), ToNs: end, RawFromNs: raw})
		if err != nil {
			t.Fatal(err)
		}
		want := end - 2*int64(time.Hour)
		if raw != 0 {
			want = raw / 60e9 * 60e9
		}
		if s := rep.Stats[0]; s.Sent != 3*3600 || rep.RawFromNs != want {
			t.Errorf("raw from %d: %d probes, raw from %d (want %d)", raw, s.Sent, rep.RawFromNs, want)
		}
	}
	kinds := map[model.EventKind]int{}
	for _, e := range r.Events {
		kinds[e.Kind]++
	}
	if kinds[model.EventOutage] < 1 || kinds[model.EventLoaded] < 10 || kinds[model.EventRestart] != 1 || kinds[model.EventBaselineStep] < 1 {
		t.Errorf("events by kind %v", kinds)
	}
	for _, p := range r.Series[0].Points {
		if p.StartNs >= w.GapFromNs && p.StartNs+r.Series[0].BucketNs <= w.GapToNs {
			t.Errorf("a bucket in the gap: %+v", p)
		}
	}
	// Around the outage, minutes: 100 % loss has no smoke, and differs
	// from a minute without rows (absent).
	_, around, _ := get(fmt.Sprintf("from=%d&to=%d&points=120", w.OutageNs/1e9-3600, w.OutageNs/1e9+3600))
	full := 0
	for _, p := range around.Report.Series[0].Points {
		switch {
		case p.Sent > 0 && p.Lost == p.Sent:
			full++
			if p.SmokeNs != nil {
				t.Errorf("a bucket of 100 %% loss has smoke %v", p.SmokeNs)
			}
		}
	}
	if full != 5 {
		t.Errorf("%d minutes of 100 %% loss in the 5-minute outage", full)
	}
	// Bad queries are one line and 400; a monitor without rows is empty.
	if code, _, body := get("span=1s"); code != 400 || strings.Count(strings.TrimSpace(body), "\n") != 0 {
		t.Errorf("span=1s: %d %q", code, body)
	}
	if code, out, _ := get("from=1000000000&to=1000003600"); code != 200 || !out.Empty || out.Report != nil {
		t.Errorf("range without rows: %d %+v", code, out)
	}
}

const dayNsTest = 24 * int64(time.Hour)

// FuzzRangeEndpoint sends any query to /range over a day of history: a
// 400 of one line, or a 200 whose JSON holds at most the points asked
// for per stream.
func FuzzRangeEndpoint(f *testing.F) {
	for _, s := range []string{"span=24h&points=50", "span=1h", "from=1767225600&to=1767229200&points=10", "span=400d", "points=1500", "to=1767229200"} {
		f.Add(s)
	}
	c, _ := testCore(f, time.Second)
	if _, err := monitortest.Fill(context.Background(), c.st, monitortest.History{Name: "t", Streams: c.plan.Streams,
		FromNs: t0, ToNs: t0 + dayNsTest, RawNs: int64(10 * time.Minute), Seed: 2}); err != nil {
		f.Fatal(err)
	}
	h := c.rangeHandler(func() time.Time { return time.Unix(0, t0+dayNsTest) })
	f.Fuzz(func(t *testing.T, q string) {
		rw := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/range", nil)
		req.URL.RawQuery = q
		h(rw, req)
		switch rw.Code {
		case 400:
			if strings.Count(strings.TrimSpace(rw.Body.String()), "\n") != 0 {
				t.Fatalf("%q: %q", q, rw.Body.String())
			}
		case 200:
			var out DashboardRange
			if err := json.Unmarshal(rw.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			rq, err := ParseRangeQuery(q, time.Unix(0, t0+dayNsTest))
			if err != nil {
				t.Fatalf("%q answered 200 but does not parse: %v", q, err)
			}
			if out.Report != nil {
				for _, s := range out.Report.Series {
					if len(s.Points) > rq.Points {
						t.Fatalf("%q: %d points, asked %d", q, len(s.Points), rq.Points)
					}
				}
			}
		default:
			t.Fatalf("%q: %d %s", q, rw.Code, rw.Body.String())
		}
	})
}
