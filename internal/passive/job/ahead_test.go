package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/passive"
	"github.com/sonde-project/sonde/internal/pcap/pcaptest"
	"github.com/sonde-project/sonde/internal/report"
)

func copyInt(dst, src *int) { *dst = *src }

// TestEachAhead: the records come in order, all of them; the consumer's
// first error stops the reading and is returned; the reader's error is
// returned after the records before it.
func TestEachAhead(t *testing.T) {
	const n = 10*aheadChunk + 3
	each := func(failAt int) func(func(*int) error) error {
		return func(fn func(*int) error) error {
			var v int
			for i := range n {
				if i == failAt {
					return errors.New("read failed")
				}
				v = i // one value, reused: eachAhead copies it
				if err := fn(&v); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var got []int
	if err := eachAhead(each(-1), copyInt, func(v *int) error { got = append(got, *v); return nil }); err != nil || len(got) != n {
		t.Fatalf("%d records, %v; want %d", len(got), err, n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("record %d is %d", i, v)
		}
	}
	stopAt := errors.New("stop")
	seen := 0
	err := eachAhead(each(-1), copyInt, func(v *int) error {
		seen++
		if *v == 700 {
			return stopAt
		}
		return nil
	})
	if err != stopAt || seen != 701 {
		t.Errorf("stopped: %v after %d records, want %v after 701", err, seen, stopAt)
	}
	seen = 0
	err = eachAhead(each(600), copyInt, func(*int) error { seen++; return nil })
	if err == nil || err.Error() != "read failed" || seen != 600 {
		t.Errorf("read error: %v after %d records, want it after 600", err, seen)
	}
}

// TestWorkersSameOutputs: the text and JSON outputs of a job whose
// records are spilled (5000 connections: runs on disk, read back ahead
// with two workers) are those of one worker, but the runtime figures.
func TestWorkersSameOutputs(t *testing.T) {
	path := pcaptest.SYNs(t, 5000)
	var texts, jsons []string
	for _, workers := range []int{1, 2} {
		var stdout, stderr bytes.Buffer
		j := &Job{Out: Outputs{Stdout: &stdout, Stderr: &stderr}}
		j.Out.JSON = filepath.Join(t.TempDir(), "a.json")
		j.Config.Interface, j.Config.Workers = -1, workers
		res, err := j.Files([]string{path})
		if err != nil {
			t.Fatal(err)
		}
		if res.Spill == nil || res.NumTCP() != 5000 {
			t.Fatalf("%d workers: spill %v, %d TCP records; want them spilled, 5000", workers, res.Spill != nil, res.NumTCP())
		}
		var text []string
		for _, l := range strings.Split(stdout.String(), "\n") {
			if !strings.Contains(l, "Mpps") {
				text = append(text, l)
			}
		}
		texts = append(texts, strings.Join(text, "\n"))
		b, err := os.ReadFile(j.Out.JSON)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "runtime")
		b, _ = json.Marshal(m)
		jsons = append(jsons, string(b))
	}
	if texts[0] != texts[1] || len(texts[0]) < 5000*40 {
		t.Errorf("text: two workers' (%d bytes) differs from one worker's (%d bytes)", len(texts[1]), len(texts[0]))
	}
	if jsons[0] != jsons[1] {
		t.Errorf("JSON: two workers' differs from one worker's")
	}
}

// TestTextColumnsAsKept: the text's columns sized as the spill kept the
// records (one and two workers) saw every record, and the text is the
// one that sizes them by reading the records back.
func TestTextColumnsAsKept(t *testing.T) {
	path := pcaptest.SYNs(t, 5000)
	for _, workers := range []int{1, 2} {
		var stderr bytes.Buffer
		j := &Job{Out: Outputs{Stdout: io.Discard, Stderr: &stderr}}
		j.Config.Interface, j.Config.Workers = -1, workers
		j.configure()
		a := passive.New(j.Config)
		if _, errs := a.ReadFiles([]string{path}); errors.Join(errs...) != nil {
			t.Fatal(errs)
		}
		res := a.Finish(nil)
		if n, _ := j.cols.Records(); res.Spill == nil || n != res.NumTCP() || n != 5000 {
			t.Fatalf("%d workers: spill %v, columns of %d records, %d kept; want 5000 spilled", workers, res.Spill != nil, n, res.NumTCP())
		}
		var kept, read bytes.Buffer
		if err := report.WriteAnalyzeTextColumns(&kept, res, j.cols); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteAnalyzeText(&read, res); err != nil {
			t.Fatal(err)
		}
		if kept.String() != read.String() || kept.Len() < 5000*40 {
			t.Errorf("%d workers: the text sized as kept (%d bytes) differs from the text sized by reading back (%d bytes)", workers, kept.Len(), read.Len())
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
