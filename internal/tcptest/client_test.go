package tcptest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

func startServer(t *testing.T, cfg server.Config) string {
	t.Helper()
	return servertest.Start(t, cfg)
}

func TestRunLoopback(t *testing.T) {
	addr := startServer(t, server.Config{PerIPPerMinute: -1})
	var progress int
	res, err := Run(context.Background(), Config{
		Server: addr, Duration: 1500 * time.Millisecond, Streams: 2, DSCP: -1,
		Classes:  []model.Class{{Name: "ef", DSCP: 46}, {Name: "be", DSCP: 0}},
		Progress: func(Progress) { progress++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Schema != model.SchemaVersion || res.ID == "" {
		t.Fatalf("schema %q id %q", res.Schema, res.ID)
	}
	if b := res.Baseline; b == nil || b.RTTMs.N < 20 || b.RTTMs.Min <= 0 || b.ServerMinRTTMs <= 0 {
		t.Fatalf("baseline %+v", res.Baseline)
	}
	for _, d := range []*model.DirectionResult{res.Download, res.Upload} {
		if d == nil {
			t.Fatal("missing direction")
		}
		if d.GoodputBps < 100e6 || len(d.Flows) != 2 || len(d.Throughput) == 0 {
			t.Fatalf("%s: goodput %v, %d flows, %d points", d.Direction, d.GoodputBps, len(d.Flows), len(d.Throughput))
		}
		for _, f := range d.Flows {
			if len(f.TCPInfo) < 5 || f.Bytes <= 0 {
				t.Fatalf("%s flow %d: %d TCP_INFO samples, %d bytes", d.Direction, f.ID, len(f.TCPInfo), f.Bytes)
			}
		}
		want := map[string]string{"download": "server", "upload": "client"}[d.Direction]
		if d.Flows[0].Sender != want {
			t.Fatalf("%s sender %q, want %q", d.Direction, d.Flows[0].Sender, want)
		}
		if d.Latency == nil || d.Latency.RTTMs.N < 20 {
			t.Fatalf("%s: latency under load %+v", d.Direction, d.Latency)
		}
		if d.RPM == nil || d.RPM.RPM <= 0 {
			t.Fatalf("%s: RPM %+v", d.Direction, d.RPM)
		}
		r := d.RFC6349
		if r == nil || r.GoodputBps <= 0 || r.MSS == 0 || r.EfficiencyPct <= 0 || r.EfficiencyPct > 100 {
			t.Fatalf("%s: RFC 6349 %+v", d.Direction, r)
		}
		// Goodput from the receiver's counts must match the bytes moved.
		if got := float64(d.Bytes) * 8 / d.DurationS; got < d.GoodputBps*0.8 || got > d.GoodputBps*1.25 {
			t.Fatalf("%s: bytes/duration %v vs goodput %v", d.Direction, got, d.GoodputBps)
		}
	}
	if res.Classes == nil || len(res.Classes.Flows) != 4 {
		t.Fatalf("classes %+v", res.Classes)
	}
	for _, c := range res.Classes.Flows {
		if c.GoodputBps <= 0 {
			t.Fatalf("class %s %s: no goodput", c.Class.Name, c.Direction)
		}
	}
	if progress == 0 {
		t.Fatal("no progress reported")
	}
}

func TestRunKeepsPartialResultOnRefusal(t *testing.T) {
	addr := startServer(t, server.Config{PerIPPerMinute: -1, MaxDuration: 5 * time.Second})
	res, err := Run(context.Background(), Config{Server: addr, Duration: 10 * time.Second, DSCP: -1})
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("err = %v, want the server's duration limit", err)
	}
	if res == nil || len(res.Errors) == 0 {
		t.Fatalf("result %+v does not record the error", res)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Duration: -1}, {Streams: -2}, {DSCP: 64}, {ProbeInterval: time.Second}, {BaselineSamples: 3}} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("Run(%+v) accepted", c)
		}
	}
}

// TestSetDirection: each --direction name selects its phases; both is
// sequential, deprecated; anything else is refused naming the flag.
func TestSetDirection(t *testing.T) {
	for name, want := range map[string][3]bool{"sequential": {true, true, false}, "both": {true, true, false},
		"download": {true, false, false}, "upload": {false, true, false}, "bidir": {false, false, true}, "all": {true, true, true}} {
		var c Config
		dep, err := c.SetDirection(name)
		if err != nil || [3]bool{c.Download, c.Upload, c.Bidir} != want || dep != (name == "both") {
			t.Errorf("%s: %+v %v %v", name, c, dep, err)
		}
	}
	var c Config
	if _, err := c.SetDirection("sideways"); err == nil || !strings.HasPrefix(err.Error(), "--direction: ") {
		t.Errorf("%v", err)
	}
}
