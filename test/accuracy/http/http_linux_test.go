// Package http holds the lab test of sonde analyze's HTTP/1.x analysis: a
// Go net/http server and a scripted client (this test binary re-executed
// in the lab's namespaces) load a 5-object page over a long-delay link in
// each persistence mode (HTTP/1.0 one connection per object, sequential
// and 4 in parallel; HTTP/1.0 keep-alive; HTTP/1.1 persistent; HTTP/1.1
// pipelined), a pcapng observer records both link ends, and the analysis
// must find exactly the connections and requests the client's own log
// reports, with its time to first byte and page completion.
//
// It needs root (namespaces, TUN devices) and skips otherwise.
package http

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/lab/labtest"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
)

// page is the test page: an HTML document and the 4 objects it refers to
// (seed 003's page: text, a background image and 3 images).
var page = []struct {
	path string
	size int
}{{"/", 3000}, {"/bg.jpg", 6000}, {"/a.gif", 9000}, {"/b.gif", 12000}, {"/c.gif", 15000}}

// Modes, in the order the client runs them.
var modes = []string{"1.0", "1.0-parallel", "1.0-keepalive", "1.1", "1.1-pipelined"}

const (
	helperEnv = "SONDE_HTTP_TEST_HELPER"
	addrEnv   = "SONDE_HTTP_TEST_ADDR"
	modesEnv  = "SONDE_HTTP_TEST_MODES"
	port      = "8080"
	// The link: 300 ms RTT (a satellite's order of magnitude, shortened to
	// keep the test under a minute), 2 Mbit/s, no loss.
	linkSpec = "rate=2Mbit delay=150ms limit=100p"
	rttMs    = 300.0
	pageGap  = 2 * time.Second // between modes: more than the analyser's page gap
)

// record is the client's log of one exchange.
type record struct {
	Mode    string `json:"mode"`
	Port    int    `json:"port"` // client's local port
	Path    string `json:"path"`
	StartNs int64  `json:"start_ns"` // request written
	FirstNs int64  `json:"first_ns"` // first response byte read
	EndNs   int64  `json:"end_ns"`   // response body read
	ConnNs  int64  `json:"conn_ns"`  // connect started (first exchange of a connection)
	Status  int    `json:"status"`
	Body    int    `json:"body"`
}

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "server":
		serve(os.Getenv(addrEnv))
		os.Exit(0)
	case "client":
		if err := client(os.Getenv(addrEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func serve(addr string) {
	mux := http.NewServeMux()
	for _, o := range page {
		body := []byte(strings.Repeat("x", o.size))
		mux.HandleFunc(o.path, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != o.path {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			_, _ = w.Write(body)
		})
	}
	srv := &http.Server{Addr: addr, Handler: mux, IdleTimeout: 60 * time.Second, ReadHeaderTimeout: 10 * time.Second}
	go func() { time.Sleep(150 * time.Second); os.Exit(0) }() // bounded even if the test dies
	_ = srv.ListenAndServe()
}

// conn is one client connection with its reader.
type conn struct {
	c      net.Conn
	br     *bufio.Reader
	port   int
	connNs int64
}

func dial(addr string) (*conn, error) {
	t := time.Now().UnixNano()
	c, err := net.DialTimeout("tcp", addr, 20*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	return &conn{c: c, br: bufio.NewReader(c), port: c.LocalAddr().(*net.TCPAddr).Port, connNs: t}, nil
}

func request(path, version string, keepAlive bool) string {
	s := "GET " + path + " " + version + "\r\nHost: sonde.test\r\nUser-Agent: sonde-http-test\r\n"
	if keepAlive && version == "HTTP/1.0" {
		s += "Connection: keep-alive\r\n"
	}
	return s + "\r\n"
}

// read reads one response and completes rec.
func (c *conn) read(rec *record) error {
	if _, err := c.br.Peek(1); err != nil {
		return err
	}
	rec.FirstNs = time.Now().UnixNano()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	rec.EndNs = time.Now().UnixNano()
	rec.Status, rec.Body, rec.Port = resp.StatusCode, int(n), c.port
	return nil
}

// fetch sends one request and reads its response.
func (c *conn) fetch(mode, path, version string, keepAlive bool) (record, error) {
	rec := record{Mode: mode, Path: path, StartNs: time.Now().UnixNano()}
	if _, err := io.WriteString(c.c, request(path, version, keepAlive)); err != nil {
		return rec, err
	}
	return rec, c.read(&rec)
}

// once fetches path on a new HTTP/1.0 connection without keep-alive.
func once(addr, mode, path string) (record, error) {
	c, err := dial(addr)
	if err != nil {
		return record{}, err
	}
	defer c.c.Close()
	rec, err := c.fetch(mode, path, "HTTP/1.0", false)
	rec.ConnNs = c.connNs
	return rec, err
}

func runMode(addr, mode string) ([]record, error) {
	var recs []record
	switch mode {
	case "1.0":
		for _, o := range page {
			r, err := once(addr, mode, o.path)
			if err != nil {
				return nil, err
			}
			recs = append(recs, r)
		}
	case "1.0-parallel":
		r, err := once(addr, mode, page[0].path)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
		var mu sync.Mutex
		var wg sync.WaitGroup
		var firstErr error
		for _, o := range page[1:] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := once(addr, mode, o.path)
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				recs = append(recs, r)
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return nil, firstErr
		}
	case "1.0-keepalive", "1.1":
		version := "HTTP/1.1"
		if mode == "1.0-keepalive" {
			version = "HTTP/1.0"
		}
		c, err := dial(addr)
		if err != nil {
			return nil, err
		}
		defer c.c.Close()
		for i, o := range page {
			r, err := c.fetch(mode, o.path, version, true)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				r.ConnNs = c.connNs
			}
			recs = append(recs, r)
		}
	case "1.1-pipelined":
		c, err := dial(addr)
		if err != nil {
			return nil, err
		}
		defer c.c.Close()
		r, err := c.fetch(mode, page[0].path, "HTTP/1.1", true)
		if err != nil {
			return nil, err
		}
		r.ConnNs = c.connNs
		recs = append(recs, r)
		var all strings.Builder
		for _, o := range page[1:] {
			all.WriteString(request(o.path, "HTTP/1.1", true))
		}
		start := time.Now().UnixNano()
		if _, err := io.WriteString(c.c, all.String()); err != nil {
			return nil, err
		}
		for _, o := range page[1:] {
			r := record{Mode: mode, Path: o.path, StartNs: start}
			if err := c.read(&r); err != nil {
				return nil, err
			}
			recs = append(recs, r)
		}
	}
	return recs, nil
}

func client(addr string) error {
	var all []record
	run := modes
	if m := os.Getenv(modesEnv); m != "" { // bench/http_persistence.sh picks its modes
		run = strings.Split(m, ",")
	}
	for i, mode := range run {
		if !slices.Contains(modes, mode) {
			return fmt.Errorf("unknown mode %q (modes: %s)", mode, strings.Join(modes, ", "))
		}
		if i > 0 {
			time.Sleep(pageGap)
		}
		recs, err := runMode(addr, mode)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		all = append(all, recs...)
	}
	time.Sleep(500 * time.Millisecond) // let the last FINs cross the link
	return json.NewEncoder(os.Stdout).Encode(all)
}

// helper starts this test binary in a lab node as the server or client.
func helper(ctx context.Context, l *lab.Lab, node, role string, env ...string) *exec.Cmd {
	exe, _ := os.Executable()
	cmd := l.Command(ctx, node, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, addrEnv+"="+net.JoinHostPort(l.ServerAddr(), port))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces and TUN devices")
	}
	if testing.Short() {
		t.Skip("lab runs skipped in -short")
	}
}

// runLab builds a one-link lab with spec, runs the server and the client
// (the given modes) in it, tears it down and returns the capture and the
// client's log.
func runLab(t *testing.T, spec string, seed uint64, run []string) (string, []record) {
	t.Helper()
	l := labtest.OneLink(t, labtest.Options{Name: "httpacc", Seed: seed, Both: spec})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	srv := helper(ctx, l.Lab, lab.Server, "server")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	time.Sleep(500 * time.Millisecond) // the server's listen
	cl := helper(ctx, l.Lab, lab.Client, "client", modesEnv+"="+strings.Join(run, ","))
	var stderr strings.Builder
	cl.Stderr = &stderr
	out, err := cl.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	var recs []record
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatalf("client log: %v\n%s", err, out)
	}
	capFile := l.Capture()                                     // flushes the capture
	if keep := os.Getenv("SONDE_HTTP_TEST_KEEP"); keep != "" { // for a look with sonde analyze
		if b, err := os.ReadFile(capFile); err == nil {
			_ = os.WriteFile(keep, b, 0o644)
		}
	}
	return capFile, recs
}

func analyze(t *testing.T, capFile string, iface int) *model.Analysis {
	t.Helper()
	a := passive.New(passive.Config{Interface: iface})
	if _, err := a.ReadFile(capFile); err != nil {
		t.Fatal(err)
	}
	return a.Finish(nil)
}

// TestHTTPPersistence: every mode over a loss-free 300 ms link, observed
// at both ends of the link.
func TestHTTPPersistence(t *testing.T) {
	needRoot(t)
	capFile, recs := runLab(t, linkSpec, 3, modes)
	for _, obs := range []struct {
		iface int
		name  string
		// what the observer's TTFB misses of the client's: the path
		// between the client and the observer, twice.
		pathMs float64
	}{{0, "client end", 0}, {1, "server end", rttMs}} {
		t.Run(obs.name, func(t *testing.T) {
			check(t, analyze(t, capFile, obs.iface), recs, modes, obs.pathMs, true)
		})
	}
}

// TestHTTPPersistenceLossy: 3% loss each way, so that responses have
// holes that retransmissions fill (lost before a client-end observer) and
// requests are retransmitted (lost after it). The analysis must still find
// every connection and exchange; completion order is left to chance.
func TestHTTPPersistenceLossy(t *testing.T) {
	needRoot(t)
	run := []string{"1.0", "1.1", "1.1-pipelined"}
	capFile, recs := runLab(t, "rate=2Mbit delay=50ms loss=3% limit=100p", 7, run)
	res := analyze(t, capFile, 0)
	var retrans uint64
	for _, c := range res.TCP {
		retrans += c.AB.Retransmissions + c.BA.Retransmissions
	}
	t.Logf("%d retransmissions in the capture", retrans)
	if retrans == 0 {
		t.Fatal("no loss hit the HTTP traffic: the test checks nothing beyond the loss-free one (change the seed)")
	}
	check(t, res, recs, run, 0, false)
}

// check compares the analysis with the client's log.
func check(t *testing.T, res *model.Analysis, recs []record, modes []string, pathMs float64, ordering bool) {
	byPort := map[int]*model.TCPConn{}
	for i := range res.TCP {
		c := &res.TCP[i]
		if c.HTTP == nil {
			t.Errorf("%s > %s: no HTTP found", c.A, c.B)
			continue
		}
		ap := strings.LastIndexByte(c.A, ':')
		var p int
		fmt.Sscan(c.A[ap+1:], &p)
		byPort[p] = c
	}
	// Connections and requests: exactly the client's.
	ports := map[string]map[int]bool{}
	perPort := map[int][]record{}
	for _, r := range recs {
		if ports[r.Mode] == nil {
			ports[r.Mode] = map[int]bool{}
		}
		ports[r.Mode][r.Port] = true
		perPort[r.Port] = append(perPort[r.Port], r)
	}
	if len(byPort) != len(perPort) {
		t.Errorf("analysis found %d HTTP connections, the client made %d", len(byPort), len(perPort))
	}
	var devs []float64
	for p, rs := range perPort {
		c := byPort[p]
		if c == nil {
			t.Errorf("client port %d: connection not found", p)
			continue
		}
		h := c.HTTP
		if h.Requests != len(rs) || h.Responses != len(rs) || len(h.Exchanges) != len(rs) || h.Incomplete != "" {
			t.Errorf("port %d (%s): %d requests / %d responses (incomplete %q), client made %d",
				p, rs[0].Mode, h.Requests, h.Responses, h.Incomplete, len(rs))
			continue
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].StartNs < rs[j].StartNs })
		for i, r := range rs {
			x := h.Exchanges[i]
			if x.Path != r.Path || x.Status != r.Status || int(x.RespBodyBytes) != r.Body {
				t.Errorf("port %d exchange %d: %s %d %d B, client %s %d %d B", p, i, x.Path, x.Status, x.RespBodyBytes, r.Path, r.Status, r.Body)
			}
			client := float64(r.FirstNs-r.StartNs) / 1e6
			// The client's TTFB is the observer's plus the path between
			// them (both ways) plus, from the server end, the request's
			// and the response's time in the link's queue; plus the
			// client's own scheduling (its clock reads around the write
			// and the read). None of these is negative.
			dev := client - pathMs - x.TTFBMs
			devs = append(devs, math.Abs(dev))
			if x.TTFBMs <= 0 || dev < -2 {
				t.Errorf("port %d %s (%s): TTFB %.1f ms, client %.1f ms, path %.0f ms", p, r.Path, r.Mode, x.TTFBMs, client, pathMs)
			}
		}
		persistent := !strings.HasPrefix(rs[0].Mode, "1.0") || rs[0].Mode == "1.0-keepalive"
		if h.KeepAlive != persistent {
			t.Errorf("port %d (%s): keep-alive %v", p, rs[0].Mode, h.KeepAlive)
		}
		closer := "server"
		if persistent {
			closer = "client"
		}
		if h.CloseBy != closer {
			t.Errorf("port %d (%s): closed by %q, want %s", p, rs[0].Mode, h.CloseBy, closer)
		}
		if rs[0].Mode == "1.1-pipelined" && h.Pipelined != 3 {
			t.Errorf("pipelined: %d requests counted as pipelined, want 3", h.Pipelined)
		}
	}
	sort.Float64s(devs)
	if len(devs) > 0 {
		med := devs[len(devs)/2]
		t.Logf("TTFB: client's minus path minus observer's: median %.2f ms, max %.2f ms (%d exchanges)", med, devs[len(devs)-1], len(devs))
		// At the client end the two differ by the client's scheduling
		// only (and the forwarder's, between stamping a packet and
		// handing it over): most exchanges must agree closely. A loaded
		// 2-core machine stalls a process for 200 ms now and then, so
		// a few are allowed to differ more.
		close := 0
		for _, d := range devs {
			if d <= 10 {
				close++
			}
		}
		if pathMs == 0 && (med > 3 || close*10 < len(devs)*8) {
			t.Errorf("TTFB at the client end: median deviation %.2f ms (want ≤ 3), %d of %d within 10 ms (want 80%%)", med, close, len(devs))
		}
	}
	// Page loads: one per mode, in order.
	if len(res.HTTPPages) != len(modes) {
		t.Fatalf("%d page loads, want %d: %+v", len(res.HTTPPages), len(modes), res.HTTPPages)
	}
	completion := map[string]float64{}
	for i, mode := range modes {
		pg := res.HTTPPages[i]
		var first, last int64
		n := 0
		for _, r := range recs {
			if r.Mode != mode {
				continue
			}
			n++
			if s := r.ConnNs; s > 0 && (first == 0 || s < first) {
				first = s
			}
			last = max(last, r.EndNs)
		}
		clientS := float64(last-first) / 1e9
		completion[mode] = pg.CompletionS
		t.Logf("%-14s connections %d, max parallel %d, requests %d, completion %.3f s (client %.3f s)",
			mode, pg.Connections, pg.MaxParallel, pg.Requests, pg.CompletionS, clientS)
		if pg.Connections != len(ports[mode]) || pg.Requests != n || pg.Responses != n {
			t.Errorf("%s: page has %d connections %d requests %d responses; client %d connections %d requests",
				mode, pg.Connections, pg.Requests, pg.Responses, len(ports[mode]), n)
		}
		wantPar := 1
		if mode == "1.0-parallel" {
			wantPar = 4
		}
		if pg.MaxParallel != wantPar {
			t.Errorf("%s: max parallel %d, want %d", mode, pg.MaxParallel, wantPar)
		}
		// The observer sees the page from the client's first SYN to the
		// last response byte; the client from connect() to the last read.
		// From the server end, both ends of the page are one way closer,
		// and the last response bytes are seen before they wait in the
		// link's queue (at most the whole page, 45 KB at 2 Mbit/s: 0.18 s).
		d := clientS - pathMs/1e3 - pg.CompletionS
		if d < -0.05 || (pathMs == 0 && d > 0.05) || d > 0.25 {
			t.Errorf("%s: completion %.3f s, client %.3f s", mode, pg.CompletionS, clientS)
		}
	}
	for _, m := range []string{"1.0-keepalive", "1.1"} {
		if !ordering {
			break
		}
		if completion[m] >= completion["1.0"] {
			t.Errorf("persistent %s (%.3f s) not faster than one connection per object (%.3f s)", m, completion[m], completion["1.0"])
		}
		if completion["1.1-pipelined"] >= completion[m] {
			t.Errorf("pipelined (%.3f s) not faster than %s (%.3f s)", completion["1.1-pipelined"], m, completion[m])
		}
	}
}
