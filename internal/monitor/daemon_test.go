package monitor

import (
	"github.com/sonde-project/sonde/internal/units"

	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/udptest/testreflector"
)

// startDaemon runs a daemon on cfg (store: a SQLite file) until the
// returned stop is called.
func startDaemon(t *testing.T, c Config, logw io.Writer) (*Daemon, store.Store, func()) {
	t.Helper()
	c.Defaults()
	p, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), p.Store, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(context.Background(), p, Options{Store: st, Log: logw, Version: "test"})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	// Faster detector passes than in production, so the test is short.
	d.core.eventEvery, d.core.settleNs = int64(500*time.Millisecond), int64(300*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { stop(); st.Close() })
	return d, st, stop
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s %s", url, resp.Status, b)
	}
	return string(b)
}

// TestEndToEnd: a sonde server and a plain reflector on loopback, the
// reflector stopped for 3 s: rows stored, /metrics and /status answer, an
// outage event of the reflector's stream lands in the store.
func TestEndToEnd(t *testing.T) {
	srv := servertest.Start(t, server.Config{UDPAddr: "127.0.0.1:0", PerIPPerMinute: -1})
	refl, err := testreflector.Start("127.0.0.1:0", testreflector.Config{Kind: testreflector.STAMP})
	if err != nil {
		t.Fatal(err)
	}
	raddr := refl.Addr()
	var logs bytes.Buffer
	d, st, stop := startDaemon(t, Config{Targets: []string{srv, "stamp://" + raddr}, Rate: 20, Timeout: units.Duration(200 * time.Millisecond),
		Store: filepath.Join(t.TempDir(), "m.db"), Listen: "127.0.0.1:0", Name: "e2e", Labels: map[string]string{"isp": "loopback"}}, &logs)
	base := "http://" + d.Addr().String()
	time.Sleep(1500 * time.Millisecond)
	refl.Close()
	time.Sleep(3 * time.Second)
	refl, err = testreflector.Start(raddr, testreflector.Config{Kind: testreflector.STAMP})
	if err != nil {
		t.Fatal(err)
	}
	defer refl.Close()
	time.Sleep(2 * time.Second)

	metrics := get(t, base+"/metrics")
	for _, m := range []string{`sonde_monitor_probes_sent_total{stream="` + srv + `/stamp"}`, "sonde_monitor_rtt_seconds_bucket",
		"sonde_monitor_send_lateness_seconds_count", `sonde_monitor_reliability{stream="127.0.0.1`, "sonde_monitor_store_backlog_rows 0",
		"go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	var s Status
	if err := json.Unmarshal([]byte(get(t, base+"/status")), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Streams) != 2 || s.Streams[0].Sent < 80 || s.Streams[0].LastRTTMs <= 0 || !s.Store.Healthy || s.Name != "e2e" {
		t.Fatalf("status %+v", s)
	}
	if get(t, base+"/healthz") != "ok\n" {
		t.Error("/healthz")
	}
	stop()

	ctx := context.Background()
	n, lost := map[int32]int{}, map[int32]int{}
	st.Probes(ctx, 1, 0, 1<<62, func(p model.ProbeSample) error {
		n[p.Stream]++
		if p.Lost {
			lost[p.Stream]++
		}
		return nil
	})
	// The server's stream answered all along (but the probes of the
	// last timeout before the stop); the reflector's lost ~3 s of probes.
	if n[1] < 100 || lost[1] > 4 || n[2] < 100 || lost[2] < 40 || lost[2] > 80 {
		t.Fatalf("rows per stream %v, lost %v\nlog:\n%s", n, lost, logs.String())
	}
	evs, _ := st.Events(ctx, 1, 0, 1<<62, 100)
	var outages []model.MonitorEvent
	for _, e := range evs {
		if e.Kind == model.EventOutage {
			outages = append(outages, e)
		}
	}
	if len(outages) != 1 || outages[0].Stream != 2 {
		t.Fatalf("outage events %+v\nlog:\n%s", outages, logs.String())
	}
	if dur := outages[0].Detail["duration_s"]; dur < 2.5 || dur > 3.8 {
		t.Errorf("outage of %.2f s for a reflector stopped 3 s", dur)
	}
	var rs int
	st.Rollups(ctx, 1, 0, 1<<62, func(store.Rollup) error { rs++; return nil })
	if rs < 2 {
		t.Errorf("%d rollups after the stop, want every stream's minutes", rs)
	}
}

// TestCrashSafety kills a daemon (this test binary, re-executed) with
// SIGKILL while it writes, then checks the file is intact, the samples up
// to about a second before the kill are there, and a restart records the
// gap.
func TestCrashSafety(t *testing.T) {
	if os.Getenv("SONDE_MONITOR_CHILD") != "" {
		return
	}
	refl, err := testreflector.Start("127.0.0.1:0", testreflector.Config{Kind: testreflector.STAMP})
	if err != nil {
		t.Fatal(err)
	}
	defer refl.Close()
	db := filepath.Join(t.TempDir(), "m.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), "SONDE_MONITOR_CHILD="+db, "SONDE_MONITOR_TARGET=stamp://"+refl.Addr())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond)
	killNs := time.Now().UnixNano()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	var ok string
	if err := raw.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q %v", ok, err)
	}
	raw.Close()
	c := Config{Targets: []string{"stamp://" + refl.Addr()}, Rate: 20, Timeout: units.Duration(200 * time.Millisecond), Store: db, Listen: "off", Name: "crash"}
	_, st, stop := startDaemon(t, c, io.Discard)
	time.Sleep(300 * time.Millisecond)
	stop()
	ctx := context.Background()
	rs, err := st.Restarts(ctx, 1, 0, 1<<62)
	if err != nil || len(rs) != 2 {
		t.Fatalf("restarts %+v %v\nchild:\n%s", rs, err, out.String())
	}
	last := rs[1].LastNs
	if last < killNs-int64(1500*time.Millisecond) || last > killNs {
		t.Fatalf("newest sample before the kill sent %v before it; want at most ~1 s", time.Duration(killNs-last))
	}
	// Every probe of the child up to then is stored: no hole at 20/s.
	var prev int64
	holes := 0
	st.Probes(ctx, 1, 0, last+1, func(p model.ProbeSample) error {
		if prev != 0 && p.SentNs-prev > int64(100*time.Millisecond) {
			holes++
		}
		prev = p.SentNs
		return nil
	})
	if holes != 0 {
		t.Errorf("%d holes in the stored probes before the kill", holes)
	}
	evs, _ := st.Events(ctx, 1, 0, 1<<62, 100)
	found := false
	for _, e := range evs {
		if e.Kind == model.EventRestart && e.StartNs == last && strings.Contains(e.Text, "gap") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no restart event naming the gap: %+v", evs)
	}
}

// TestCrashChild is the daemon TestCrashSafety kills; it does nothing
// unless re-executed by it.
func TestCrashChild(t *testing.T) {
	db := os.Getenv("SONDE_MONITOR_CHILD")
	if db == "" {
		t.Skip("run by TestCrashSafety")
	}
	c := Config{Targets: []string{os.Getenv("SONDE_MONITOR_TARGET")}, Rate: 20, Timeout: units.Duration(200 * time.Millisecond), Store: db, Listen: "off", Name: "crash"}
	startDaemon(t, c, os.Stderr)
	time.Sleep(time.Minute) // killed long before
}
