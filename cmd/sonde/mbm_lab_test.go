//go:build !monitoronly

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/mbm/mbmrun"
	"github.com/sonde-project/sonde/internal/model"
)

// TestMBMLabTruth: the client of a lab run reads --ground-truth and
// records the profile and the configured path in its result; a run
// without one records neither.
func TestMBMLabTruth(t *testing.T) {
	var res model.MBMResult
	mbmrun.RecordLab(&res, nil)
	if res.Env != nil || res.Truth != nil {
		t.Fatalf("no lab, but recorded %+v %+v", res.Env, res.Truth)
	}
	want := model.GroundTruth{Profile: "adsl", BaseRTTMs: 19, UpRateBps: 0.7e6, DownRateBps: 8e6, UpQdisc: "droptail"}
	b, _ := json.Marshal(want)
	dir := t.TempDir()
	path := filepath.Join(dir, "truth.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := lab.ReadTruthFile(path) // what runMBM reads (lab.TestReadTruthFile: bad files)
	if err != nil {
		t.Fatal(err)
	}
	res.Env = &model.MBMEnv{Kernel: "6.1"}
	mbmrun.RecordLab(&res, got)
	if res.Env.LabProfile != "adsl" || res.Env.Kernel != "6.1" || res.Truth == nil || *res.Truth != want {
		t.Fatalf("recorded %+v, truth %+v; want profile adsl, truth %+v", res.Env, res.Truth, want)
	}

}
