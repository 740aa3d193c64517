package job

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap/pcaptest"
)

// TestFiles: a job over a capture file is configured to spill the
// records for the JSON output (memory follows the live flows), streams one NDJSON line per
// connection, writes the JSON (and no text beside it on stdout), and configures the
// analyser from the outputs asked for.
func TestFiles(t *testing.T) {
	const conns = 300
	path := pcaptest.SYNs(t, conns)
	var stdout, stderr bytes.Buffer
	nd := filepath.Join(t.TempDir(), "records.ndjson")
	j := &Job{Out: Outputs{Stdout: &stdout, Stderr: &stderr, NDJSON: nd}}
	j.Out.JSON = "-"
	j.Config.Interface = -1
	res, err := j.Files([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Config.Spill || j.Config.KeepSamples || j.Config.DropRecords || j.Config.Workers < 1 {
		t.Errorf("config %+v: want the records spilled and kept for --json, one worker or more", j.Config)
	}
	if res.NumTCP() != conns || Damaged(res) {
		t.Errorf("%d TCP connections (damaged %v), want %d", res.NumTCP(), Damaged(res), conns)
	}
	var a model.Analysis
	if err := json.Unmarshal(stdout.Bytes(), &a); err != nil || len(a.TCP) != conns {
		t.Fatalf("--json: %d connections, %v", len(a.TCP), err)
	}
	// The JSON to a file: the text summary to stdout.
	stdout.Reset()
	j = &Job{Out: Outputs{Stdout: &stdout, Stderr: &stderr}}
	j.Out.JSON, j.Config.Interface = filepath.Join(t.TempDir(), "a.json"), -1
	if _, err := j.Files([]string{path}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(j.Out.JSON); err != nil || fi.Size() == 0 || !strings.Contains(stdout.String(), "TCP connections") {
		t.Errorf("--json FILE: %v; text summary %q", err, stdout.String())
	}
	b, err := os.ReadFile(nd)
	if err != nil || strings.Count(string(b), "\n") != conns {
		t.Errorf("--ndjson: %d lines, %v; want %d", strings.Count(string(b), "\n"), err, conns)
	}
}

// TestOutputsCheck: one output at most goes to stdout.
func TestOutputsCheck(t *testing.T) {
	o := Outputs{NDJSON: "x"}
	o.JSON = "-"
	if err := o.Check(); err != nil {
		t.Error(err)
	}
	if o.Samples = "-"; o.Check() == nil {
		t.Error("--json - and --samples -: no error")
	}
}

// TestInputs: a missing file is an error before anything is read; a
// directory stands for its files.
func TestInputs(t *testing.T) {
	path := pcaptest.SYNs(t, 1)
	if _, err := Inputs([]string{path, path + ".missing"}); err == nil {
		t.Error("a missing input: no error")
	}
	got, err := Inputs([]string{filepath.Dir(path)})
	if err != nil || len(got) != 1 || got[0] != path {
		t.Errorf("Inputs(dir) = %q, %v", got, err)
	}
}
