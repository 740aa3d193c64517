package rpm

import (
	"context"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/metrics"
)

// TestClientAgainstServer runs the client's algorithm against the server
// on loopback (HTTP/2 over TLS), bounded to a few seconds.
func TestClientAgainstServer(t *testing.T) {
	f := newFixture(t, 30*time.Second, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := Run(ctx, ClientOptions{URL: f.srv.URL, Insecure: true, Interval: 250 * time.Millisecond,
		MaxDuration: 2500 * time.Millisecond, MaxFlows: 4, ProbeInterval: 50 * time.Millisecond, Software: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if res.Protocol != "HTTP/2.0" || len(res.Directions) != 2 {
		t.Fatalf("protocol %s, %d directions", res.Protocol, len(res.Directions))
	}
	for _, d := range res.Directions {
		if d.Bytes == 0 || d.RPM == nil || d.RPM.RPM <= 0 || d.RPM.SelfProbes == 0 || d.RPM.ForeignProbes == 0 {
			t.Fatalf("%s: %+v", d.Direction, d)
		}
		if d.RPM.ForeignTLSMs <= 0 {
			t.Fatalf("%s: no TLS time in foreign probes", d.Direction)
		}
		if d.RPM.Band != metrics.RPMBand(d.RPM.RPM) || d.RPM.AppleBand == "" {
			t.Fatalf("%s: bands %q %q for %v", d.Direction, d.RPM.Band, d.RPM.AppleBand, d.RPM.RPM)
		}
		if d.Confidence == "" || d.Flows < 1 || d.Flows > 4 {
			t.Fatalf("%s: confidence %q, flows %d", d.Direction, d.Confidence, d.Flows)
		}
		t.Logf("%s: %.0f Mbit/s, %d flows, RPM %.0f (%s, Apple-style %s), confidence %s", d.Direction,
			d.GoodputBps/1e6, d.Flows, d.RPM.RPM, d.RPM.Band, d.RPM.AppleBand, d.Confidence)
	}
	if res.Overall == nil || res.Overall.RPM <= 0 {
		t.Fatalf("no overall RPM")
	}
	// Self probes went on the load connections: the server saw one
	// connection per load flow, per foreign probe started (one a probe
	// interval at most) and the config's; self probes on connections of
	// their own would double that.
	var flows, attempts int
	for _, d := range res.Directions {
		flows += d.Flows
		attempts += int(d.DurationS/0.05) + 1
	}
	if got := f.conns.Load(); got < int64(flows+1) || got > int64(flows+1+attempts) {
		t.Fatalf("server connections %d for %d flows and at most %d foreign probes", got, flows, attempts)
	}
}

func TestStable(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want bool
	}{
		{[]float64{100, 100, 100}, false},
		{[]float64{100, 101, 99, 100}, true},
		{[]float64{50, 100, 100, 100}, false},
		{[]float64{0, 0, 0, 0}, false},
	} {
		if got := stable(tc.xs); got != tc.want {
			t.Errorf("stable(%v) = %v", tc.xs, got)
		}
	}
}

func TestParseConfig(t *testing.T) {
	s, l, u, err := ParseConfig([]byte(`{"version":1,"urls":{"small_download_url":"https://a/s","large_download_url":"https://a/l","upload_url":"https://a/u","small_https_download_url":"https://b/s"}}`))
	if err != nil || s != "https://b/s" || l != "https://a/l" || u != "https://a/u" {
		t.Fatalf("%q %q %q %v", s, l, u, err)
	}
	for _, bad := range []string{`{}`, `{"version":2,"urls":{}}`, `{"version":1,"urls":{"small_download_url":"ftp://x"}}`, `[`} {
		if _, _, _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%s) accepted", bad)
		}
	}
}
