//go:build !monitoronly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/store/pgtest"
	"github.com/sonde-project/sonde/internal/tcptest"
)

// TestServeBadLimits: nonsense connection limits are usage errors (exit 2),
// caught before anything listens.
func TestServeBadLimits(t *testing.T) {
	for _, args := range [][]string{
		{"--idle-timeout", "0"}, {"--header-timeout", "-1s"}, {"--body-timeout", "1ns"},
		{"--write-timeout", "1s"}, {"--max-conns-per-ip", "0"}, {"--max-conns", "-1"},
		{"--max-conns", "2000000000"}, {"--token-fail-rate", "NaN"}, {"--token-fail-rate", "0"},
		{"--token-fail-burst", "-3"}, {"--idle-timeout", "soon"},
	} {
		cmd := newServeCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append(args, "--addr", "127.0.0.1:0", "--udp-addr", "off", "--store", ":memory:"))
		// Bounded: a wrongly accepted value would serve until the end.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := cmd.ExecuteContext(ctx)
		cancel()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: %v, want a usage error (exit 2)", args, err)
		}
	}
}

// TestServeStorePostgres runs `sonde serve --store postgres://…` end to
// end: a sonde test and a page result against it land in PostgreSQL, the
// server's own records (its side of the test session and of the STAMP
// sessions beside it) next to the page's result.
func TestServeStorePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and runs a test")
	}
	url := pgtest.Start(t).NewDatabase(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := newServeCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--addr", addr, "--udp-addr", "127.0.0.1:0", "--webrtc-port", "off", "--store", url, "--per-ip-rate", "off"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not listen within 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := tcptest.Run(ctx, tcptest.Config{Server: addr, Duration: time.Second, Streams: 1, BaselineSamples: 20,
		DSCP: -1, NoForeign: true, Software: "sonde/serve-test"})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("test against serve: %v %v", err, res)
	}
	st, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var tcp, udp []store.Summary
	for time.Now().Before(deadline.Add(20 * time.Second)) {
		tcp, _ = st.ListResultsKind(ctx, model.KindTCP, 10)
		udp, _ = st.ListResultsKind(ctx, model.KindUDP, 10)
		if len(tcp) == 1 && len(udp) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(tcp) != 1 || len(udp) == 0 || tcp[0].Software != "sonde/serve-test" || tcp[0].UploadBps <= 0 || tcp[0].DownloadBps <= 0 {
		t.Fatalf("records in PostgreSQL: tcp %+v, udp %+v", tcp, udp)
	}
	raw, err := st.GetResult(ctx, tcp[0].ID)
	var rec model.ServerRecord
	if err != nil || json.Unmarshal(raw, &rec) != nil || rec.Session != res.ID {
		t.Errorf("tcp record %s: %v", raw, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestServeMBMAddrTaken: a taken --mbm-addr fails `sonde serve` at start
// with one line naming the flag, not at the first MBM session.
func TestServeMBMAddrTaken(t *testing.T) {
	taken, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cmd := newServeCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--addr", "127.0.0.1:0", "--udp-addr", "off", "--webrtc-port", "off", "--store", ":memory:",
		"--mbm-addr", taken.LocalAddr().String()})
	// Bounded: a server that did not open the sink would serve until the end.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = cmd.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "MBM sink") || !strings.Contains(err.Error(), "--mbm-addr") {
		t.Fatalf("serve with a taken --mbm-addr: %v, want an MBM sink error naming --mbm-addr", err)
	}
	if ctx.Err() != nil {
		t.Fatal("serve ran until the test's timeout: the sink was not opened at start")
	}
}

// TestServeDBAlias: --db, the old spelling of --store, still names the
// store for one release and says what to use; both at once are refused.
func TestServeDBAlias(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := run(t, "serve", "--db", filepath.Join(dir, "no", "such", "r.db"), "--addr", "127.0.0.1:0", "--udp-addr", "off")
	if code == 0 || !strings.Contains(stdout+stderr, "use --store instead") {
		t.Errorf("--db: exit %d, %q %q; want the replacement named and the missing directory refused", code, stdout, stderr)
	}
	if _, stderr, code := run(t, "serve", "--db", "a.db", "--store", "b.db"); code != exitUsage || !strings.Contains(stderr, "give one") {
		t.Errorf("--db and --store: exit %d, %q", code, stderr)
	}
}
