package server

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// iperf3Client runs Debian's iperf3 with -J against the server's iperf3
// port; it skips the test where iperf3 is not installed.
func iperf3Client(t *testing.T, port int, args ...string) (map[string]any, string) {
	t.Helper()
	bin, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 is not installed (the Makefile installs Debian's): ", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-J"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	_ = cmd.Run()
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("iperf3 %v: %v: %q", args, err, out.String())
	}
	e, _ := res["error"].(string)
	return res, e
}

func startIperf3(t *testing.T, cfg Config) (*Server, int) {
	t.Helper()
	cfg.Iperf3Addr = "127.0.0.1:0"
	if cfg.HistoryDB == "" {
		cfg.HistoryDB = filepath.Join(t.TempDir(), "results.db")
	}
	s, _ := start(t, cfg)
	a, err := s.StartIperf3()
	if err != nil {
		t.Fatal(err)
	}
	return s, a.(*net.TCPAddr).Port
}

// sumBps is end.<key>.bits_per_second of iperf3's -J output.
func sumBps(res map[string]any, key string) float64 {
	end, _ := res["end"].(map[string]any)
	s, _ := end[key].(map[string]any)
	v, _ := s["bits_per_second"].(float64)
	return v
}

// TestIperf3Record: each iperf3 test is a server record whose goodput is
// within 2 % of the iperf3 client's figure for the same test, with the
// server's TCP_INFO and RFC 6349 figures where it sent.
func TestIperf3Record(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real tests")
	}
	s, port := startIperf3(t, Config{PerIPPerMinute: -1})
	up, e := iperf3Client(t, port, "-t", "3", "-P", "2")
	if e != "" {
		t.Fatal(e)
	}
	down, e := iperf3Client(t, port, "-t", "3", "-R")
	if e != "" {
		t.Fatal(e)
	}
	recs := records(t, s, model.KindIperf3, 2) // newest first
	rd, ru := recs[0], recs[1]
	if ru.Upload == nil || len(ru.Upload.Flows) != 2 || ru.Client.Software != "iperf3/3.12" || len(ru.Errors) > 0 {
		t.Fatalf("upload record: %+v", ru)
	}
	within := func(name string, client, server float64) {
		t.Logf("%s: iperf3 %.4g bit/s, the server's record %.4g bit/s", name, client, server)
		if d := math.Abs(server-client) / client; client <= 0 || d > 0.02 {
			t.Errorf("%s: the record's %.4g bit/s is %.1f%% off iperf3's %.4g", name, server, 100*d, client)
		}
	}
	within("upload", sumBps(up, "sum_received"), ru.Upload.GoodputBps)
	if rd.Download == nil || rd.Download.RFC6349 == nil || len(rd.Download.Flows) != 1 || len(rd.Download.Flows[0].TCPInfo) < 10 {
		t.Fatalf("download record without the server's TCP_INFO or RFC 6349: %+v", rd.Download)
	}
	within("download", sumBps(down, "sum_received"), rd.Download.GoodputBps)
}

// TestIperf3Admission: iperf3 tests take the server's test slots, and a
// server with a token refuses iperf3 (which cannot send one) unless
// Iperf3Open admits it.
func TestIperf3Admission(t *testing.T) {
	_, port := startIperf3(t, Config{Token: "secret", PerIPPerMinute: -1})
	if _, e := iperf3Client(t, port, "-t", "1"); !strings.Contains(e, "busy") {
		t.Errorf("token, not open: iperf3 said %q, want ACCESS_DENIED (busy)", e)
	}
	_, port = startIperf3(t, Config{Token: "secret", Iperf3Open: true, MaxConcurrent: 1, PerIPPerMinute: -1})
	done := make(chan string, 1)
	go func() {
		_, e := iperf3Client(t, port, "-t", "3")
		done <- e
	}()
	time.Sleep(time.Second)
	if _, e := iperf3Client(t, port, "-t", "1"); !strings.Contains(e, "busy") {
		t.Errorf("second test on one slot: iperf3 said %q, want busy", e)
	}
	if e := <-done; e != "" {
		t.Errorf("open server: %s", e)
	}
}
