package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/ndt7"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/store/pgtest"
	"github.com/sonde-project/sonde/internal/tcptest"
	"github.com/sonde-project/sonde/internal/udptest"
)

// archiveBackends are the stores every archive test runs against: a
// SQLite file, and a database on a real PostgreSQL (pgtest: skipped,
// saying why, where PostgreSQL is not installed, except under CI).
var archiveBackends = []struct {
	name  string
	fresh func(t *testing.T) func(t *testing.T) string
}{
	{"sqlite", func(*testing.T) func(t *testing.T) string {
		return func(t *testing.T) string { return filepath.Join(t.TempDir(), "results.db") }
	}},
	{"postgres", func(t *testing.T) func(t *testing.T) string { return pgtest.Start(t).NewDatabase }},
}

// records waits until the store behind s holds n records of kind, and
// returns them, newest first.
func records(t *testing.T, s *Server, kind string, n int) []model.ServerRecord {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		list, err := s.history.ListResultsKind(context.Background(), kind, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) >= n {
			out := make([]model.ServerRecord, 0, len(list))
			for _, sum := range list {
				raw, err := s.history.GetResult(context.Background(), sum.ID)
				if err != nil {
					t.Fatal(err)
				}
				var rec model.ServerRecord
				if err := json.Unmarshal(raw, &rec); err != nil {
					t.Fatalf("%s record: %v", kind, err)
				}
				if rec.Schema != model.ServerRecordSchemaVersion || rec.Kind != kind || rec.ID != sum.ID || sum.Kind != kind {
					t.Fatalf("%s record: schema %q kind %q id %q (row %+v)", kind, rec.Schema, rec.Kind, rec.ID, sum)
				}
				t.Logf("%s record %s: %d bytes of JSON", kind, sum.ID, len(raw))
				out = append(out, rec)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s records stored within 15 s, want %d", len(list), kind, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestArchive runs each kind of test against an in-process server on each
// store, and checks that the server kept its own record of it, with
// figures that agree with what the client measured.
func TestArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real tests")
	}
	for _, b := range archiveBackends {
		t.Run(b.name, func(t *testing.T) {
			fresh := b.fresh(t)
			t.Run("tcp", func(t *testing.T) { testArchiveTCP(t, fresh(t)) })
			t.Run("ndt7", func(t *testing.T) { testArchiveNDT7(t, fresh(t)) })
			t.Run("udp", func(t *testing.T) { testArchiveUDP(t, fresh(t)) })
			t.Run("mbm", func(t *testing.T) { testArchiveMBM(t, fresh(t)) })
			t.Run("page", func(t *testing.T) { testArchivePage(t, fresh(t)) })
		})
	}
}

func testArchiveTCP(t *testing.T, url string) {
	s, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "127.0.0.1:0", HistoryDB: url})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := tcptest.Run(ctx, tcptest.Config{Server: addr, Duration: time.Second, Streams: 2, BaselineSamples: 20,
		DSCP: -1, NoForeign: true, Software: "sonde/archive-test"})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("test: %v %v", err, res.Errors)
	}
	rec := records(t, s, model.KindTCP, 1)[0]
	if rec.Session != res.ID || rec.Client.Software != "sonde/archive-test" || rec.Client.Address != "127.0.0.1" ||
		rec.Server.Software != "sonde" || rec.End.Before(rec.Start) {
		t.Errorf("record's identity: session %q (test %q), client %+v, server %+v, %v–%v",
			rec.Session, res.ID, rec.Client, rec.Server, rec.Start, rec.End)
	}
	if len(rec.Errors) > 0 {
		t.Errorf("record's errors: %v", rec.Errors)
	}
	// Download: what the client's TCP acknowledged is at least what its
	// receivers counted, at most what the server's TCP sent.
	d, cd := rec.Download, res.Download
	if d == nil || cd == nil || len(d.Flows) != 2 || d.Flows[0].Sender != "server" {
		t.Fatalf("download record %+v", d)
	}
	var sent uint64
	for _, f := range d.Flows {
		if n := len(f.TCPInfo); n > 0 {
			sent += f.TCPInfo[n-1].BytesSent
		}
	}
	if d.Bytes < cd.Bytes*99/100 || uint64(d.Bytes) > sent || d.GoodputBps <= 0 || d.RFC6349 == nil {
		t.Errorf("download: record %d bytes acked of %d sent, client counted %d", d.Bytes, sent, cd.Bytes)
	}
	// Upload: the server is the receiver; the client's figure is built
	// from the same counts.
	u, cu := rec.Upload, res.Upload
	if u == nil || cu == nil || len(u.Flows) != 2 {
		t.Fatalf("upload record %+v", u)
	}
	if diff := u.Bytes - cu.Bytes; diff < -cu.Bytes/100 || diff > cu.Bytes/100 {
		t.Errorf("upload: record %d bytes received, the client's result %d", u.Bytes, cu.Bytes)
	}
	if rec.Probe == nil || rec.Probe.Streams < 1 || rec.IdleRTTMs <= 0 || rec.IdleRTTMs > 1000 {
		t.Errorf("probe %+v, idle RTT %v ms", rec.Probe, rec.IdleRTTMs)
	}
	// The STAMP probes beside the test are recorded as UDP sessions of it.
	for _, r := range records(t, s, model.KindUDP, 1) {
		if r.TestSession != res.ID || r.UDP == nil || r.UDP.Received == 0 {
			t.Errorf("UDP record beside the test: %+v", r)
		}
	}
	// The history API lists the page's results by default, any kind on
	// request, and refuses an unknown one.
	for q, want := range map[string]int{"": 0, "?kind=tcp": 1, "?kind=all": 2} {
		code, body := get(t, "http://"+addr+PathResults+q)
		var list struct{ Results []store.Summary }
		if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil || len(list.Results) < want ||
			(q == "" && len(list.Results) != 0) {
			t.Errorf("GET %s: %d %s", q, code, body)
		}
	}
	if code, _ := get(t, "http://"+addr+PathResults+"?kind=nope"); code != http.StatusBadRequest {
		t.Errorf("unknown kind: %d", code)
	}
	m := gather(t, s)
	if m[`sonde_results_stored_total{kind="tcp"}`] != 1 || m[`sonde_store_errors_total{kind="tcp"}`] != 0 {
		t.Errorf("metrics: %v stored, %v failed", m[`sonde_results_stored_total{kind="tcp"}`], m[`sonde_store_errors_total{kind="tcp"}`])
	}
}

// ndt7Client runs one ndt7 test the simplest way a client can: a download
// read to its end, or an upload of n bytes then a Close. It returns the
// payload bytes it received or sent.
func ndt7Client(t *testing.T, addr string, kind ndt7.Kind, n int) int64 {
	t.Helper()
	path := ndt7.DownloadPath
	if kind == ndt7.Upload {
		path = ndt7.UploadPath
	}
	d := websocket.Dialer{Subprotocols: []string{ndt7.Subprotocol}, HandshakeTimeout: 5 * time.Second}
	c, _, err := d.Dial("ws://"+addr+path+"?client_name=archive-test&client_version=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var total int64
	if kind == ndt7.Upload {
		msg := make([]byte, 1<<16)
		for total < int64(n) {
			if err := c.WriteMessage(websocket.BinaryMessage, msg); err != nil {
				t.Fatal(err)
			}
			total += int64(len(msg))
		}
		_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	}
	for {
		typ, r, err := c.NextReader()
		if err != nil {
			return total
		}
		if typ == websocket.BinaryMessage && kind == ndt7.Download {
			b := make([]byte, 32<<10)
			for {
				k, err := r.Read(b)
				total += int64(k)
				if err != nil {
					break
				}
			}
		}
	}
}

func testArchiveNDT7(t *testing.T, url string) {
	// The byte limit ends the download early, so the test is short.
	s, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", HistoryDB: url, MaxBytes: 16 << 20, MaxDuration: 5 * time.Second})
	got := ndt7Client(t, addr, ndt7.Download, 0)
	sent := ndt7Client(t, addr, ndt7.Upload, 4<<20)
	// Records are written off the tests' paths: in either order.
	recs := records(t, s, model.KindNDT7, 2)
	down, up := recs[1], recs[0]
	if down.Download == nil {
		down, up = up, down
	}
	if down.Download == nil || up.Upload == nil || down.Client.Software != "archive-test/1" {
		t.Fatalf("ndt7 records: download %+v, upload %+v", down, up)
	}
	// The server's last measurement comes before the tail is acknowledged:
	// its acked count is at most what the client received, and the
	// measurements' text and WebSocket framing.
	if b := down.Download.Bytes; b <= 0 || b > got+64<<10 || down.Download.GoodputBps <= 0 || down.IdleRTTMs <= 0 {
		t.Errorf("ndt7 download: record %d bytes acked, client received %d; idle RTT %v", b, got, down.IdleRTTMs)
	}
	if b := up.Upload.Bytes; b != sent {
		t.Errorf("ndt7 upload: record %d bytes received, client sent %d", b, sent)
	}
}

func testArchiveUDP(t *testing.T, url string) {
	s, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "127.0.0.1:0", HistoryDB: url})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := udptest.Run(ctx, udptest.Options{Server: addr, Interval: 10 * time.Millisecond, Duration: time.Second,
		PacketBytes: 100, DSCP: 10, Timeout: time.Second, Software: "sonde/archive-test"})
	if err != nil || len(res.Flows) != 1 {
		t.Fatalf("udp: %v", err)
	}
	rec := records(t, s, model.KindUDP, 1)[0]
	f, u := res.Flows[0], rec.UDP
	if u == nil || rec.TestSession != "" || rec.Ended != "closed by the client" {
		t.Fatalf("UDP record %+v", rec)
	}
	if !f.Forward.Known || u.Received != f.Forward.Received || u.Received+int(u.Missing) > f.Sent ||
		u.IntervalUs != 10000 || u.PacketBytes != 100 || u.DSCP != 10 {
		t.Errorf("UDP record %+v; client sent %d, forward %+v", u, f.Sent, f.Forward)
	}
	if len(u.TOS) == 0 || u.TOS[0].DSCP != 10 {
		t.Errorf("DS field counts %+v", u.TOS)
	}
}

// testArchivePage: the page's result is stored as its kind, listed by
// default, beside the server's record of the same session.
func testArchivePage(t *testing.T, url string) {
	s, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", HistoryDB: url})
	_, rep := createSession(t, addr, nil)
	r, err := http.Post("http://"+addr+"/sonde/v1/sessions/"+rep.ID+"/result", "application/json",
		strings.NewReader(`{"software":"sonde-web","duration_s":1,"baseline":{"samples":[{"t_s":0.1,"rtt_ms":5}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+addr+"/sonde/v1/sessions/"+rep.ID, nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	if tcp := records(t, s, model.KindTCP, 1); tcp[0].Session != rep.ID || tcp[0].Client.Software != "test" {
		t.Errorf("the page session's record %+v", tcp[0])
	}
	code, body := get(t, "http://"+addr+PathResults)
	var list struct{ Results []store.Summary }
	if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil || len(list.Results) != 1 ||
		list.Results[0].ID != rep.ID || list.Results[0].Kind != model.KindPage || list.Results[0].IdleRTTMs != 5 {
		t.Errorf("page results: %d %s", code, body)
	}
}

func testArchiveMBM(t *testing.T, url string) {
	s, _ := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", HistoryDB: url})
	now := time.Now().UTC()
	s.RecordMBM(model.Endpoint{Address: "198.18.0.2", Software: "sonde/mbm"}, &model.MBMResult{
		Schema: model.MBMSchemaVersion, ID: "r1", Start: now, End: now.Add(time.Second),
		Tests: []model.MBMTest{{ID: "8.1.1", Verdict: "PASS", Packets: 1000}},
	})
	rec := records(t, s, model.KindMBM, 1)[0]
	if rec.MBM == nil || len(rec.MBM.Tests) != 1 || rec.MBM.Tests[0].Verdict != "PASS" || rec.Session != "r1" {
		t.Errorf("MBM record %+v", rec)
	}
}

// TestArchiveStoreFails: with the store's results table gone, every write
// fails; the tests still succeed, the page still gets its report, and the
// failures are counted on /metrics.
func TestArchiveStoreFails(t *testing.T) {
	db := filepath.Join(t.TempDir(), "results.db")
	_, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "127.0.0.1:0", HistoryDB: db})
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("DROP TABLE results"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := tcptest.Run(ctx, tcptest.Config{Server: addr, Duration: time.Second, Streams: 1, BaselineSamples: 20,
		DSCP: -1, NoForeign: true, Software: "sonde/archive-test"})
	if err != nil {
		t.Fatalf("a failing store failed the test: %v", err)
	}
	if len(res.Errors) > 0 || res.Download == nil || res.Download.Bytes == 0 {
		t.Fatalf("a failing store failed the test: %v", res.Errors)
	}
	_, rep := createSession(t, addr, nil)
	r, err := http.Post("http://"+addr+"/sonde/v1/sessions/"+rep.ID+"/result", "application/json",
		strings.NewReader(`{"software":"sonde-web","duration_s":1}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Errorf("page result with a failing store: %d", r.StatusCode)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		m := scrape(t, addr)
		if m[`sonde_store_errors_total{kind="tcp"}`] >= 1 && m[`sonde_store_errors_total{kind="page"}`] >= 1 &&
			m[`sonde_store_errors_total{kind="udp"}`] >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store failures not counted: %v", m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// blockingStore is a store whose record writes wait until released.
type blockingStore struct {
	store.Results
	release chan struct{}
	mu      sync.Mutex
	got     int
}

func (b *blockingStore) AddRecord(ctx context.Context, _ *model.ServerRecord) error {
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.mu.Lock()
	b.got++
	b.mu.Unlock()
	return nil
}

// TestArchiveBounded: a store that does not answer holds at most
// maxArchiveWrites records; the rest are dropped and counted, and close
// waits for the writes in flight.
func TestArchiveBounded(t *testing.T) {
	st := &blockingStore{release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	a := newArchive(st, reg, &Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	n := maxArchiveWrites + 5
	for range n {
		a.save(model.KindUDP, func() *model.ServerRecord { return &model.ServerRecord{} })
	}
	if got := testCounter(t, a.failed, model.KindUDP); got != 5 {
		t.Errorf("%v records dropped, want 5", got)
	}
	close(st.release)
	a.close()
	if st.got != maxArchiveWrites || testCounter(t, a.stored, model.KindUDP) != maxArchiveWrites {
		t.Errorf("%d records written, want %d", st.got, maxArchiveWrites)
	}
	a.save(model.KindUDP, func() *model.ServerRecord { return &model.ServerRecord{} })
	if st.got != maxArchiveWrites {
		t.Errorf("a record written after close")
	}
}

func testCounter(t *testing.T, v *prometheus.CounterVec, label string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(v)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestArchiveCloseHung: a store that never answers holds a closing
// server for closeGrace, not for the writes' own timeout.
func TestArchiveCloseHung(t *testing.T) {
	st := &blockingStore{release: make(chan struct{})}
	a := newArchive(st, prometheus.NewRegistry(), &Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	a.save(model.KindTCP, func() *model.ServerRecord { return &model.ServerRecord{} })
	start := time.Now()
	a.close()
	if d := time.Since(start); d > archiveTimeout/2 {
		t.Errorf("close took %v with a hung store", d)
	}
	if testCounter(t, a.failed, model.KindTCP) != 1 {
		t.Errorf("the cancelled write is not counted as failed")
	}
}

// TestArchiveOff: NoServerRecords keeps the page's results only.
func TestArchiveOff(t *testing.T) {
	s, _ := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", NoServerRecords: true})
	s.RecordMBM(model.Endpoint{}, &model.MBMResult{Schema: model.MBMSchemaVersion})
	s.archive.close()
	if list, err := s.history.ListResults(context.Background(), 10); err != nil || len(list) != 0 {
		t.Errorf("records with NoServerRecords: %+v %v", list, err)
	}
}
