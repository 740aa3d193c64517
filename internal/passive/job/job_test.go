package job

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap/pcaptest"
)

// outputs writes to buffers: "-" to stdout, a path to a file, the text
// summary to stderr.
func outputs(stdout, stderr *bytes.Buffer) Outputs {
	return Outputs{Stdout: stdout, Stderr: stderr,
		Write: func(flag, path string, stdout io.Writer, fn func(io.Writer) error) error {
			if path == "-" {
				return fn(stdout)
			}
			var b bytes.Buffer
			if err := fn(&b); err != nil {
				return err
			}
			return os.WriteFile(path, b.Bytes(), 0o644)
		},
		TextTo: func(_, stderr io.Writer, _ bool) io.Writer { return stderr },
	}
}

// TestFiles: a job over a capture file is configured to spill the
// records for the JSON output (memory follows the live flows), streams one NDJSON line per
// connection, writes the JSON and the text summary, and configures the
// analyser from the outputs asked for.
func TestFiles(t *testing.T) {
	const conns = 300
	path := pcaptest.SYNs(t, conns)
	var stdout, stderr bytes.Buffer
	nd := filepath.Join(t.TempDir(), "records.ndjson")
	j := &Job{Out: outputs(&stdout, &stderr)}
	j.Out.JSON, j.Out.NDJSON = "-", nd
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
	if !strings.Contains(stderr.String(), "300") {
		t.Errorf("text summary %q: no connection count", stderr.String())
	}
	b, err := os.ReadFile(nd)
	if err != nil || strings.Count(string(b), "\n") != conns {
		t.Errorf("--ndjson: %d lines, %v; want %d", strings.Count(string(b), "\n"), err, conns)
	}
}

// TestOutputsCheck: one output at most goes to stdout.
func TestOutputsCheck(t *testing.T) {
	if err := (&Outputs{JSON: "-", NDJSON: "x"}).Check(); err != nil {
		t.Error(err)
	}
	if err := (&Outputs{JSON: "-", Samples: "-"}).Check(); err == nil {
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
