package iperf3

import (
	"context"
	"errors"
	"math"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/model"
)

// startIperf3Server runs Debian's iperf3 -s on a free loopback port.
func startIperf3Server(t *testing.T) int {
	t.Helper()
	bin := needIperf3(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-s", "-B", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 50 { // listening within 5 s; a probe here would count as a failed test, so wait on /proc instead
		time.Sleep(100 * time.Millisecond)
		if out, _ := exec.Command("ss", "-Hltn", "sport = :"+strconv.Itoa(port)).Output(); len(out) > 0 {
			return port
		}
	}
	t.Fatal("iperf3 -s did not listen within 5 s")
	return 0
}

// TestSuiteAgainstIperf3 runs the suite against Debian's iperf3 -s and
// compares its goodput with the iperf3 server's own counts (2 %).
func TestSuiteAgainstIperf3(t *testing.T) {
	port := startIperf3Server(t)
	testSuite(t, port)
}

// TestSuiteAgainstSonde runs the suite against sonde's own iperf3 server.
func TestSuiteAgainstSonde(t *testing.T) {
	ts := startServer(t, Options{})
	res := testSuite(t, ts.port)
	// The client's figures against the server's own counts of the same
	// tests (2 %): bytes the client received against those the server
	// sent, bytes the server's TCP acknowledged (the client's TCP_INFO)
	// against those the server's application read.
	waitRecord(t, ts, 1)
	recs := ts.records()
	if len(recs) != 2 {
		t.Fatalf("%d tests recorded, want 2", len(recs))
	}
	sum := func(r *Test) (b int64) {
		for _, f := range r.Flows {
			b += f.Bytes
		}
		return b
	}
	for _, c := range []struct {
		name           string
		client, server int64
	}{{"download", res.Download.Bytes, sum(recs[0])}, {"upload", res.Upload.Bytes, sum(recs[1])}} {
		t.Logf("%s: client %d bytes, server %d", c.name, c.client, c.server)
		if d := math.Abs(float64(c.client-c.server)) / float64(c.server); c.server <= 0 || d > 0.02 {
			t.Errorf("%s: client %d bytes, server %d (%.1f%%)", c.name, c.client, c.server, 100*d)
		}
	}
}

func testSuite(t *testing.T, port int) *model.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Suite(ctx, SuiteConfig{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Duration: 2 * time.Second, Streams: 2, Software: "sonde/test"})
	if err != nil {
		t.Fatalf("%v (%v)", err, res)
	}
	if res.Baseline == nil || len(res.Baseline.Samples) < baselineProbes/2 {
		t.Fatalf("baseline: %+v", res.Baseline)
	}
	for _, d := range []struct {
		name string
		got  float64
		n    int
	}{{"download", res.Download.GoodputBps, len(res.Download.Flows)}, {"upload", res.Upload.GoodputBps, len(res.Upload.Flows)}} {
		if d.got <= 0 || d.n != 2 {
			t.Errorf("%s: goodput %v over %d flows", d.name, d.got, d.n)
		}
	}
	if res.Upload.RFC6349 == nil || res.Upload.Latency == nil || len(res.Upload.Latency.Samples) < 5 {
		t.Errorf("upload without RFC 6349 or loaded RTTs: %+v", res.Upload)
	}
	return res
}

// TestSuiteRefused: a busy iperf3 server is a refusal.
func TestSuiteRefused(t *testing.T) {
	ts := startServer(t, Options{Admit: func(net.Addr) (func(), error) { return nil, errors.New("full") }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Suite(ctx, SuiteConfig{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ts.port)), Duration: time.Second, Streams: 1})
	var refused *apiclient.RefusedError
	if !errors.As(err, &refused) || res != nil {
		t.Fatalf("want a refusal and no result, got %v, %v", err, res)
	}
}

func TestParseURL(t *testing.T) {
	for in, want := range map[string]string{
		"iperf3://h":           "h:5201",
		"iperf3://h:1234":      "h:1234",
		"iperf3://[::1]":       "[::1]:5201",
		"iperf3://[::1]:9/":    "[::1]:9",
		"iperf3://198.18.0.1/": "198.18.0.1:5201",
	} {
		if got, err := ParseURL(in); err != nil || got != want {
			t.Errorf("ParseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"iperf3://", "http://h", "iperf3://h/x", "iperf3://u@h"} {
		if _, err := ParseURL(in); err == nil {
			t.Errorf("ParseURL(%q): no error", in)
		}
	}
}
