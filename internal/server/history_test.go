package server

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestResultHistory posts a browser run, then finds it in the list of past
// results and fetches it back; bad ids get 400 or 404 and the server lives on.
func TestResultHistory(t *testing.T) {
	db := filepath.Join(t.TempDir(), "results.db")
	_, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", HistoryDB: db, HistoryKeep: 2})
	base := "http://" + addr

	if code, body := get(t, base+PathResults); code != http.StatusOK || !strings.Contains(string(body), `"results":[]`) {
		t.Fatalf("empty list: %d %s", code, body)
	}
	var ids []string
	for range 3 {
		resp, rep := createSession(t, addr, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("session: %d", resp.StatusCode)
		}
		run := `{"software":"sonde-web","duration_s":1,"baseline":{"samples":[{"t_s":0.1,"rtt_ms":5}],"lost":0},"errors":["upload: gone"]}`
		r, err := http.Post(base+protocol.PathSessions+"/"+rep.ID+"/result", "application/json", strings.NewReader(run))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Fatalf("result: %d", r.StatusCode)
		}
		ids = append(ids, rep.ID)
	}
	code, body := get(t, base+PathResults+"?limit=10")
	var list struct {
		Results []struct {
			ID        string  `json:"id"`
			Software  string  `json:"software"`
			IdleRTTMs float64 `json:"idle_rtt_ms"`
			Errors    int     `json:"errors"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &list); err != nil || code != http.StatusOK {
		t.Fatalf("list: %d %s %v", code, body, err)
	}
	if len(list.Results) != 2 || list.Results[0].ID != ids[2] || list.Results[1].ID != ids[1] {
		t.Fatalf("list keeps the last 2, newest first: %+v (posted %v)", list.Results, ids)
	}
	if r := list.Results[0]; r.Software != "sonde-web" || r.IdleRTTMs != 5 || r.Errors != 1 {
		t.Errorf("summary row %+v", r)
	}
	code, body = get(t, base+PathResults+"/"+ids[2])
	var res model.Result
	if err := json.Unmarshal(body, &res); err != nil || code != http.StatusOK || res.ID != ids[2] || res.Schema != model.SchemaVersion {
		t.Errorf("get: %d %s %v", code, body, err)
	}
	for path, want := range map[string]int{
		"/" + ids[0]:                  http.StatusNotFound, // pruned
		"/" + strings.Repeat("0", 32): http.StatusNotFound,
		"/xyz":                        http.StatusBadRequest,
		"/" + strings.Repeat("G", 32): http.StatusBadRequest,
		"/%27%20OR%201=1":             http.StatusBadRequest,
		"?limit=0":                    http.StatusBadRequest,
		"?limit=abc":                  http.StatusBadRequest,
	} {
		if code, body := get(t, base+PathResults+path); code != want || !strings.Contains(string(body), `"error"`) {
			t.Errorf("GET %s: %d %s, want %d with an error", path, code, body, want)
		}
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("server unhealthy after bad requests: %d", code)
	}
}

func TestHistoryMissingDir(t *testing.T) {
	_, err := New(Config{HistoryDB: filepath.Join(t.TempDir(), "missing", "results.db")})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("New with a missing db directory: %v", err)
	}
}

func TestBrowserQueueNote(t *testing.T) {
	flows := func(rttMs ...float64) []model.Flow {
		var f model.Flow
		for _, r := range rttMs {
			f.TCPInfo = append(f.TCPInfo, model.TCPSample{RTTUs: uint32(r * 1000)})
		}
		return []model.Flow{f}
	}
	dir := func(pageP50 float64, f []model.Flow) *model.DirectionResult {
		return &model.DirectionResult{Flows: f, Latency: &model.RTTResult{RTTMs: model.Stats{N: 10, P50: pageP50}}}
	}
	for _, c := range []struct {
		d    *model.DirectionResult
		note bool
	}{
		{dir(3000, flows(1, 2, 1)), true},       // Firefox on loopback
		{dir(3.5, flows(1, 1.2)), false},        // Chromium on loopback
		{dir(450, flows(400, 420, 430)), false}, // a bufferbloated path: both see it
		{dir(3000, nil), false},                 // no server RTT: no claim
		{nil, false},
	} {
		if got := browserQueueNote(c.d) != ""; got != c.note {
			t.Errorf("%+v: note %v, want %v", c.d, got, c.note)
		}
	}
}

// The page's note on foreign probes it could not time (RPM itself:
// internal/assemble's tests).
func TestForeignNote(t *testing.T) {
	f := &BrowserForeign{TCPMs: []float64{40, 41, 42}, HTTPMs: []float64{44, 45, 46}, Failed: 1}
	if n := foreignNote("download", f); !strings.Contains(n, "1 of 4 foreign probes") {
		t.Errorf("note %q", n)
	}
	if n := foreignNote("upload", &BrowserForeign{TCPMs: []float64{1}, HTTPMs: []float64{1}}); n != "" {
		t.Errorf("note without failures: %q", n)
	}
	if n := foreignNote("upload", nil); n != "" {
		t.Errorf("note without foreign probes: %q", n)
	}
}

// A failure of a stream the page counted is an error of the run; one of a
// stream the page gave up on while opening it is a note.
func TestStreamErrors(t *testing.T) {
	run := &BrowserRun{Download: &BrowserPhase{Tags: []string{"d0"}}, Upload: &BrowserPhase{Tags: []string{"u0", "u1"}}}
	reps := []protocol.FlowReport{
		{Kind: protocol.KindDownload, Tag: "d0", Error: "reset"},
		{Kind: protocol.KindDownload, Tag: "d1", Error: "websocket: close 1006"},
		{Kind: protocol.KindUpload, Tag: "u1"},
		{Kind: protocol.KindProbe, Tag: "p", Error: "still running"},
		{Kind: protocol.KindProbe, Tag: "p2", Error: "broken"},
	}
	errs, notes := streamErrors(run, reps)
	if len(errs) != 2 || !strings.Contains(errs[0], `"d0"`) || !strings.Contains(errs[1], `"p2"`) {
		t.Errorf("errors %q", errs)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `"d1"`) || !strings.Contains(notes[0], "gave up") {
		t.Errorf("notes %q", notes)
	}
}
