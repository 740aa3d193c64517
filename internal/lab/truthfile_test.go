package lab

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// TestReadTruthFile: a profile's ground truth reads back as written; a
// bad, oversized or missing file is refused naming --ground-truth.
func TestReadTruthFile(t *testing.T) {
	dir := t.TempDir()
	want := model.GroundTruth{Profile: "adsl", BaseRTTMs: 19, UpRateBps: 0.7e6, DownRateBps: 8e6, UpQdisc: "droptail"}
	b, _ := json.Marshal(want)
	path := filepath.Join(dir, "truth.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTruthFile(path)
	if err != nil || *got != want {
		t.Fatalf("%+v, %v; want %+v", got, err, want)
	}
	for name, content := range map[string]string{"bad.json": "{", "big.json": `{"profile":"` + strings.Repeat("x", MaxTruthFile) + `"}`} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTruthFile(p); err == nil || !strings.HasPrefix(err.Error(), "--ground-truth") {
			t.Errorf("%s: %v, want a --ground-truth error", name, err)
		}
	}
	if got, err := ReadTruthFile(""); got != nil || err != nil {
		t.Errorf("no file: %+v, %v; want none", got, err)
	}
	if _, err := ReadTruthFile(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file was read")
	}
}

// FuzzParseTruth: the ground-truth reader takes any bytes without
// panicking and refuses what is over its bound.
func FuzzParseTruth(f *testing.F) {
	f.Add([]byte(`{"profile":"adsl","base_rtt_ms":19,"down_rate_bps":8e6,"up_rate_bps":7e5,"up_queue_bytes":37625,"up_qdisc":"codel"}`))
	f.Add([]byte(`{"profile":"wire","mtu":1500}`))
	f.Add([]byte(`{"up_loss":"x"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseTruth(b)
		if err == nil && g == nil {
			t.Fatal("no error and no ground truth")
		}
		if len(b) > MaxTruthFile && err == nil {
			t.Fatalf("%d bytes accepted, bound %d", len(b), MaxTruthFile)
		}
	})
}
