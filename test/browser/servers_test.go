package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/librespeed"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// TestPageOtherServer: the page served by A lists B and C (A's --servers,
// LibreSpeed's format), picks the nearest by latency, and runs a test
// against B, which lets other pages test against it (--cors-origins):
// the result is B's (stored there, not on A, its permanent link on B).
// C does not allow the page's origin: the run fails at once, and says why.
func TestPageOtherServer(t *testing.T) {
	node, _ := prerequisites(t)
	b := "http://" + servertest.Start(t, server.Config{Software: "sonde/b", PerIPPerMinute: -1, UDPAddr: "off", CORSOrigins: []string{"*"}})
	c := "http://" + servertest.Start(t, server.Config{Software: "sonde/c", PerIPPerMinute: -1, UDPAddr: "off"})
	list := []librespeed.Server{{ID: 1, Name: "Server B", Server: strings.TrimPrefix(b, "http:") + "/"}, {ID: 2, Name: "Server C", Server: c + "/"}}
	a := "http://" + servertest.Start(t, server.Config{Software: "sonde/a", PerIPPerMinute: -1, UDPAddr: "off", Servers: list})
	out := filepath.Join(t.TempDir(), "servers.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--no-warnings", "--experimental-websocket", "servers.mjs", a+"/?duration=2&rtc_duration=1&bidir=0", out, "Server B", "Server C")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("servers.mjs: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Options []string `json:"options"`
		Nearest struct {
			Status, Base string
		} `json:"nearest"`
		Runs []struct {
			Name, Base, Status, ID, Share string
			Partial                       bool
			Errors                        []string
			Down, Up                      float64
		} `json:"runs"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("options %q; %s", rep.Options, rep.Nearest.Status)
	if len(rep.Options) != 3 || !strings.HasPrefix(rep.Options[0], "This server") {
		t.Fatalf("options %q", rep.Options)
	}
	// A and B answer on loopback; C refuses the page's origin, so it has
	// no round trip and cannot be the nearest.
	if !strings.HasPrefix(rep.Nearest.Status, "Nearest: ") || rep.Nearest.Base == c || !strings.Contains(rep.Options[2], "Server C") || strings.Contains(rep.Options[2], " ms") {
		t.Errorf("nearest %+v, options %q", rep.Nearest, rep.Options)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("runs %+v", rep.Runs)
	}
	rb := rep.Runs[0]
	if rb.Base != b || rb.ID == "" || rb.Partial || len(rb.Errors) > 0 || rb.Down <= 0 || rb.Up <= 0 || rb.Share != b+"/r/"+rb.ID {
		t.Fatalf("run against B: %+v", rb)
	}
	for srv, want := range map[string]int{b: http.StatusOK, a: http.StatusNotFound} {
		r, err := http.Get(srv + server.PathResults + "/" + rb.ID)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("result %s on %s: %d, want %d", rb.ID, srv, r.StatusCode, want)
		}
	}
	rc := rep.Runs[1]
	if rc.Base != c || !strings.Contains(strings.Join(rc.Errors, " "), "--cors-origins") {
		t.Errorf("run against C: %+v", rc)
	}
}
