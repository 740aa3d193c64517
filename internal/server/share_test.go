package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

// TestSharedResult: /r/ID serves the page, marked as a stored result's
// view, for a stored result only; it is read-only (GET and HEAD) and the
// result it names carries its grades.
func TestSharedResult(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off"})
	base := "http://" + addr
	_, rep := createSession(t, addr, nil)
	run := `{"software":"sonde-web","duration_s":1,"baseline":{"samples":[{"t_s":0.1,"rtt_ms":5},{"t_s":0.2,"rtt_ms":7}]},` +
		`"download":{"start_s":0.3,"end_s":1.3,"latency":{"samples":[{"t_s":0.5,"rtt_ms":95}]}}}`
	r, err := http.Post(base+protocol.PathSessions+"/"+rep.ID+"/result", "application/json", strings.NewReader(run))
	if err != nil {
		t.Fatal(err)
	}
	var res model.Result
	err = json.NewDecoder(r.Body).Decode(&res)
	r.Body.Close()
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("result: %d %v", r.StatusCode, err)
	}
	if g := res.Grades; g == nil || g.Bufferbloat == nil || g.Bufferbloat.Download.Grade != "C" {
		t.Errorf("the page's result lacks its grades: %+v", res.Grades)
	}
	code, body := get(t, base+PathShared+rep.ID)
	if code != http.StatusOK || !strings.Contains(string(body), `<body class="shared">`) || !strings.Contains(string(body), "/app.js") {
		t.Errorf("GET /r/ID: %d %.200s", code, body)
	}
	for path, want := range map[string]int{
		strings.Repeat("0", 32): http.StatusNotFound,
		"xyz":                   http.StatusBadRequest,
	} {
		if code, _ := get(t, base+PathShared+path); code != want {
			t.Errorf("GET /r/%s: %d, want %d", path, code, want)
		}
	}
	resp, err := http.Post(base+PathShared+rep.ID, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /r/ID: %d, want 405", resp.StatusCode)
	}
}
