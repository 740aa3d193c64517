// Package interop_test runs the reference ndt7 JavaScript client
// (@m-lab/ndt7 from npm, unmodified) against sonde's ndt7 handlers. It needs
// node and `npm ci` in this directory; without them it skips.
package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/ndt7"
)

// duration is the server's test length; the client's own upload timer is
// 10 s, so a shorter server duration also checks that clients follow the
// server's Close.
const duration = 3 * time.Second

// Plausible goodput on loopback, in Mbit/s: well above any real bottleneck
// a broken implementation would hit, well below memory bandwidth.
const minMbps, maxMbps = 10, 1e6

type ended struct {
	kind  ndt7.Kind
	bytes int64
	err   error
}

type observer struct {
	mu   sync.Mutex
	ends []ended
}

func (o *observer) TestStarted(ndt7.Kind)   {}
func (o *observer) Rejected(ndt7.Kind, int) {}
func (o *observer) TestEnded(k ndt7.Kind, n int64, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends = append(o.ends, ended{k, n, err})
}

func (o *observer) get(k ndt7.Kind) (ended, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.ends {
		if e.kind == k {
			return e, true
		}
	}
	return ended{}, false
}

// clientSide is one test as run.js reports it.
type clientSide struct {
	ReturnCode     *int              `json:"returnCode"`
	Errors         []string          `json:"errors"`
	ClientMessages int               `json:"clientMessages"`
	ServerMessages int               `json:"serverMessages"`
	FirstServer    *ndt7.Measurement `json:"firstServer"`
	Complete       *struct {
		LastClientMeasurement *struct {
			ElapsedTime    float64 // s
			NumBytes       float64
			MeanClientMbps float64
		}
		LastServerMeasurement *ndt7.Measurement
	} `json:"complete"`
}

type runResult struct {
	Server   string     `json:"server"`
	Node     string     `json:"node"`
	Library  string     `json:"library"`
	Timeout  string     `json:"timeout"`
	Download clientSide `json:"download"`
	Upload   clientSide `json:"upload"`
}

func TestReferenceClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: install Node.js >= 18 to run the ndt7-js interop test")
	}
	for _, dep := range []string{"@m-lab/ndt7", "ws"} {
		if _, err := os.Stat("node_modules/" + dep + "/package.json"); err != nil {
			t.Skipf("node_modules/%s missing: run `npm ci` in test/interop/ndt7", dep)
		}
	}
	for _, useTLS := range []bool{false, true} {
		name := map[bool]string{false: "ws", true: "wss"}[useTLS]
		t.Run(name, func(t *testing.T) { runReferenceClient(t, node, useTLS) })
	}
}

func runReferenceClient(t *testing.T, node string, useTLS bool) {
	obs := &observer{}
	h, err := ndt7.NewHandler(ndt7.Options{Duration: duration, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewUnstartedServer(mux)
	args := []string{"run.js"}
	if useTLS {
		srv.StartTLS()
		args = append(args, "--insecure")
	} else {
		srv.Start()
	}
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	args = append(args, url)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res runResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("node %s: %v; output not JSON (%v)\nstdout: %s\nstderr: %s",
			strings.Join(args, " "), runErr, err, stdout.Bytes(), stderr.Bytes())
	}
	if runErr != nil || res.Timeout != "" {
		t.Errorf("node %s: %v %s\nstdout: %s\nstderr: %s",
			strings.Join(args, " "), runErr, res.Timeout, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("%s against %s with node %s", res.Library, res.Server, res.Node)

	for _, kind := range []ndt7.Kind{ndt7.Download, ndt7.Upload} {
		side := res.Download
		if kind == ndt7.Upload {
			side = res.Upload
		}
		srvEnd, ok := obs.get(kind)
		if !ok {
			t.Errorf("%s: the server saw no test end", kind)
			continue
		}
		checkSide(t, kind, side, srvEnd)
	}
}

func checkSide(t *testing.T, kind ndt7.Kind, side clientSide, srvEnd ended) {
	t.Helper()
	if side.ReturnCode == nil || *side.ReturnCode != 0 || len(side.Errors) > 0 {
		t.Errorf("%s: client return code %v, errors %v", kind, side.ReturnCode, side.Errors)
	}
	if srvEnd.err != nil {
		t.Errorf("%s: server: %v", kind, srvEnd.err)
	}
	if side.Complete == nil || side.Complete.LastClientMeasurement == nil ||
		side.Complete.LastServerMeasurement == nil || side.FirstServer == nil {
		t.Fatalf("%s: client has no final measurements: %+v", kind, side)
	}
	client := side.Complete.LastClientMeasurement
	last := side.Complete.LastServerMeasurement
	if side.ServerMessages < int(duration/(625*time.Millisecond))+2 {
		t.Errorf("%s: client got %d server measurements", kind, side.ServerMessages)
	}
	if ci := side.FirstServer.ConnectionInfo; ci == nil || ci.Client == "" || ci.Server == "" {
		t.Errorf("%s: first server measurement lacks ConnectionInfo: %+v", kind, side.FirstServer)
	}
	if last.Test != string(kind) || last.Origin != "server" || last.AppInfo == nil || last.TCPInfo == nil {
		t.Fatalf("%s: last server measurement %+v", kind, last)
	}
	if last.TCPInfo.MinRTT <= 0 || last.AppInfo.NumBytes <= 0 {
		t.Errorf("%s: last server measurement: MinRTT %d µs, NumBytes %d", kind, last.TCPInfo.MinRTT, last.AppInfo.NumBytes)
	}
	if client.MeanClientMbps < minMbps || client.MeanClientMbps > maxMbps {
		t.Errorf("%s: client measured %.1f Mbit/s, want %v to %v", kind, client.MeanClientMbps, minMbps, maxMbps)
	}
	// bytes × 8 / µs is Mbit/s.
	serverMbps := float64(last.AppInfo.NumBytes) * 8 / float64(last.AppInfo.ElapsedTime)
	switch kind {
	case ndt7.Download:
		// The last measurement follows the last binary message.
		if srvEnd.bytes != last.AppInfo.NumBytes {
			t.Errorf("download: server sent %d bytes, its last measurement says %d", srvEnd.bytes, last.AppInfo.NumBytes)
		}
		// The client counts text messages too, and reports at most every 250 ms.
		if c, s := client.NumBytes, float64(srvEnd.bytes); c > s+float64(side.ServerMessages)*1024 || c < s/2 {
			t.Errorf("download: client counted %.0f bytes, server sent %.0f", c, s)
		}
	case ndt7.Upload:
		if srvEnd.bytes < last.AppInfo.NumBytes {
			t.Errorf("upload: server received %d bytes, less than its last measurement's %d", srvEnd.bytes, last.AppInfo.NumBytes)
		}
		if c, s := client.NumBytes, float64(srvEnd.bytes); s < c/2 {
			t.Errorf("upload: client counted %.0f bytes, server received %.0f", c, s)
		}
	}
	t.Logf("%s: client %.0f Mbit/s (%.0f bytes in %.2f s, %d client / %d server measurements); "+
		"server %.0f Mbit/s (%d bytes in %.2f s), MinRTT %d µs, RTT %d µs",
		kind, client.MeanClientMbps, client.NumBytes, client.ElapsedTime, side.ClientMessages, side.ServerMessages,
		serverMbps, last.AppInfo.NumBytes, float64(last.AppInfo.ElapsedTime)/1e6, last.TCPInfo.MinRTT, last.TCPInfo.RTT)
}
