package server

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/rpm"
)

// startTLS runs a server with a self-signed certificate on loopback.
func startTLS(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	cert, key, fp, err := SelfSigned(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(fp) != 32*3-1 {
		t.Fatalf("fingerprint %q", fp)
	}
	cfg.CertFile, cfg.KeyFile = cert, key
	return start(t, cfg)
}

func tlsClient(protos ...string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, NextProtos: protos},
		ForceAttemptHTTP2: len(protos) > 0 && protos[0] == "h2", DisableCompression: true}}
}

// TestRPMSharesAdmission: the responsiveness test's load takes a slot of
// the server's one admission, so a full server refuses it (429 with
// Retry-After) and a running RPM test refuses a sonde session; over TLS
// the RPM client gets HTTP/2 and sonde's client still HTTP/1.1.
func TestRPMSharesAdmission(t *testing.T) {
	_, addr := startTLS(t, Config{MaxConcurrent: 1, PerIPPerMinute: -1, UDPAddr: "off", MBMAddr: "off", WebRTCPort: -1})
	base := "https://" + addr
	h1, h2 := tlsClient("http/1.1"), tlsClient("h2", "http/1.1")

	// A sonde session holds the only slot.
	resp, err := h1.Post(base+protocol.PathSessions, "application/json", strings.NewReader(`{"client":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 1 {
		t.Fatalf("session: %s over %s: %s", resp.Status, resp.Proto, body)
	}
	id := between(string(body), `"id":"`, `"`)
	resp, err = h2.Get(base + rpm.LargePath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("RPM load on a full server: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	req, _ := http.NewRequest(http.MethodDelete, base+protocol.PathSessions+"/"+id, nil)
	if resp, err = h1.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// Now the RPM test holds it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+rpm.LargePath, nil)
	deadline := time.Now().Add(3 * time.Second)
	for {
		if resp, err = h2.Do(req); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 200 || time.Now().After(deadline) {
			break
		}
		resp.Body.Close() // the session's slot is given back asynchronously
		time.Sleep(50 * time.Millisecond)
	}
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("RPM large: %s over %s", resp.Status, resp.Proto)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	r2, err := h1.Post(base+protocol.PathSessions, "application/json", strings.NewReader(`{"client":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("sonde session during an RPM test: %s, want 429", r2.Status)
	}
	cancel()
	resp.Body.Close()
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return s
}

// TestLibreSpeedSharesAdmission: LibreSpeed's garbage is refused (429)
// while a sonde session holds the only slot; its ping, getIP and server
// list start no test and still answer.
func TestLibreSpeedSharesAdmission(t *testing.T) {
	_, addr := start(t, Config{MaxConcurrent: 1, PerIPPerMinute: -1, UDPAddr: "off", MBMAddr: "off", WebRTCPort: -1})
	base := "http://" + addr
	resp, _ := createSession(t, addr, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("session: %s", resp.Status)
	}
	for path, want := range map[string]int{
		"/backend/garbage.php?ckSize=1&r=0.3": http.StatusTooManyRequests,
		"/garbage?ckSize=1":                   http.StatusTooManyRequests,
		"/backend/empty.php?r=0.1":            http.StatusOK,
		"/getIP":                              http.StatusOK,
		"/.well-known/librespeed":             http.StatusOK,
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s on a full server: %s, want %d", path, resp.Status, want)
		}
	}
}

// TestRPMClientAgainstServer: sonde rpm's algorithm against sonde serve
// (self-signed TLS, HTTP/2) on loopback, bounded to a few seconds, with
// the test's slot given back at the end.
func TestRPMClientAgainstServer(t *testing.T) {
	s, addr := startTLS(t, Config{MaxConcurrent: 2, UDPAddr: "off", MBMAddr: "off", WebRTCPort: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := rpm.Run(ctx, rpm.ClientOptions{URL: "https://" + addr, Insecure: true, Interval: 250 * time.Millisecond,
		MaxDuration: 2 * time.Second, MaxFlows: 4, ProbeInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 || len(res.Directions) != 2 || res.Overall == nil || res.Protocol != "HTTP/2.0" {
		t.Fatalf("result: %+v", res)
	}
	for _, d := range res.Directions {
		if d.RPM == nil || d.RPM.RPM <= 0 || d.Bytes == 0 {
			t.Fatalf("%s: %+v", d.Direction, d)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.adm.activeCount() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still held after the run", s.adm.activeCount())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLoadTestRecords: an RPM and a LibreSpeed load test (a download on
// two connections, then an upload) each leave a server record with what
// iperf3 and ndt7 records carry: per connection the server's TCP_INFO
// series of the download, its goodput and retransmissions, the RFC 6349
// figures, and the upload's receive counts.
func TestLoadTestRecords(t *testing.T) {
	s, addr := start(t, Config{MaxConcurrent: 2, PerIPPerMinute: -1, UDPAddr: "off", MBMAddr: "off", WebRTCPort: -1})
	const upBytes = 3 << 20
	for _, paths := range [][2]string{{rpm.LargePath, rpm.UploadPath}, {"/backend/garbage.php?ckSize=1024", "/backend/empty.php"}} {
		for range 2 { // two connections: no keep-alive between them
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+paths[0], nil)
			req.Close = true
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			// Read for a while: a few TCP_INFO samples of a flow that sends.
			var got int64
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
				n, err := io.CopyN(io.Discard, resp.Body, 256<<10)
				if got += n; err != nil {
					break
				}
			}
			if got < 2<<20 {
				t.Fatalf("%s: %d bytes", paths[0], got)
			}
			cancel()
			resp.Body.Close()
		}
		resp, err := http.Post("http://"+addr+paths[1], "application/octet-stream", io.LimitReader(zeros{}, upBytes))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", paths[1], resp.Status)
		}
	}
	for _, kind := range []string{model.KindRPM, model.KindLibreSpeed} {
		rec := records(t, s, kind, 1)[0]
		d, u := rec.Download, rec.Upload
		if d == nil || d.Bytes < 4<<20 || rec.Client.Address != "127.0.0.1" || rec.End.Before(rec.Start) {
			t.Fatalf("%s record: %+v", kind, rec)
		}
		if len(d.Flows) != 2 || d.GoodputBps <= 0 {
			t.Fatalf("%s download: %d flows, goodput %v", kind, len(d.Flows), d.GoodputBps)
		}
		for _, f := range d.Flows {
			if n := len(f.TCPInfo); n < 2 || f.TCPInfo[n-1].BytesAcked < 2<<20 {
				t.Errorf("%s download flow: %d TCP_INFO samples", kind, n)
			}
		}
		r := d.RFC6349
		if r == nil || r.BytesSent < r.BytesRetrans || r.BytesSent == 0 || r.MSS == 0 || r.BaselineRTTMs <= 0 || r.EfficiencyPct <= 0 {
			t.Errorf("%s RFC 6349: %+v", kind, r)
		}
		if rec.IdleRTTMs <= 0 {
			t.Errorf("%s idle RTT %v", kind, rec.IdleRTTMs)
		}
		if u == nil || u.Bytes != upBytes || len(u.Flows) != 1 || u.GoodputBps <= 0 {
			t.Errorf("%s upload: %+v", kind, u)
		}
	}
}

// zeros is an endless body of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestLoadProbesPastPerIPCap: an address over its per-IP connection cap
// that holds a running RPM test still gets its probes (the small object,
// on new connections, as the draft's foreign probes are) answered; an
// address without a test does not.
func TestLoadProbesPastPerIPCap(t *testing.T) {
	_, addr := start(t, Config{MaxConnsPerIP: 1, MaxConcurrent: 2, HeaderTimeout: time.Minute, PerIPPerMinute: -1,
		UDPAddr: "off", MBMAddr: "off", WebRTCPort: -1})
	hold, err := net.Dial("tcp", addr) // takes the address's one connection under the cap
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	time.Sleep(50 * time.Millisecond)
	probe := func() int {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + addr + rpm.SmallPath)
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := probe(); st != http.StatusServiceUnavailable {
		t.Fatalf("probe past the cap without a test: %d, want 503", st)
	}
	// A large object starts the address's test (an admit route: let past
	// the cap for the free slot) and keeps it running while it is read.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+rpm.LargePath, nil)
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("large object past the cap: %s", resp.Status)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if st := probe(); st != http.StatusOK {
			t.Errorf("probe %d of a running test past the cap: %d, want 200", i, st)
		}
	}
}

// TestStreamLossBasedParam: a load stream may ask for the loss-based
// congestion control (sonde test --loss-based) with cc=loss; any other cc
// is refused before the upgrade.
func TestStreamLossBasedParam(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", MBMAddr: "off", WebRTCPort: -1})
	_, ses := createSession(t, addr, nil)
	if _, resp, err := dialWS(t, addr, ses.ID, protocol.KindDownload, "d0&cc=bbr", []string{WebSocketSubprotocol}); err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("cc=bbr: %v %+v", err, resp)
	}
	ws, _, err := dialWS(t, addr, ses.ID, protocol.KindDownload, "d1&cc="+protocol.CCLossBased, []string{WebSocketSubprotocol})
	if err != nil {
		t.Fatalf("cc=%s: %v", protocol.CCLossBased, err)
	}
	ws.Close()
}
