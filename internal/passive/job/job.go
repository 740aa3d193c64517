// Package job runs one passive analysis the way sonde analyze and sonde
// capture ask for it: the analyser's configuration completed from the
// outputs asked for, the inputs (capture files read as one capture, or a
// live capture's fanout workers), the outputs streamed as flows finish
// (--ndjson, --samples), the collector's target (gc.go), and the outputs
// written at the end (JSON, CSV, HTML, the text summary). The commands
// keep their flags, their checks and their exit codes.
package job

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/sonde-project/sonde/internal/capture"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
	"github.com/sonde-project/sonde/internal/report"
)

// Job is one analysis: its configuration (Workers 0: one per core), the
// ground truth to compare with (nil: none) and its outputs.
type Job struct {
	Config passive.Config
	Truth  *passive.TruthIndex
	Out    Outputs
	// cols sizes the text's tables as the spill keeps the records
	// (Config.OnSpill): the text reads them back once.
	cols *report.TextColumns
}

// Outputs are where a job writes: the command's result outputs (--json,
// --html, --csv, --quiet), and the lines streamed as the analysis goes
// (--ndjson: one per finished flow; --samples: one per RTT sample). A
// path is "" (not asked for), "-" (Stdout) or a file, checked by the
// command before the job runs.
type Outputs struct {
	report.Outputs
	NDJSON, Samples string
	Stdout, Stderr  io.Writer
}

// Check tells whether more than one output goes to stdout: what a
// script reads there must be one document.
func (o *Outputs) Check() error {
	n := 0
	for _, to := range []bool{o.NDJSON == "-", o.Samples == "-", o.ToStdout()} {
		if to {
			n++
		}
	}
	if n > 1 {
		return errors.New("only one output (--json, --html, --csv, --ndjson, --samples) can go to stdout (-)")
	}
	return nil
}

// configure completes the configuration from the outputs asked for.
func (j *Job) configure() {
	cfg := &j.Config
	if cfg.Workers == 0 {
		// One per core: the reading goroutine is one of the workers.
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	// Per-sample outputs and the truth comparison need every sample; the
	// default summaries need memory per live flow only, and --samples
	// streams them.
	cfg.KeepSamples = j.Out.CSV != "" || j.Truth != nil || j.Out.HTML != ""
	cfg.TimeSequence = j.Out.HTML != ""
	cfg.Identity = j.Truth != nil
	// The text and JSON outputs read the records back from a temporary
	// file (in start order): memory follows the live flows. The HTML
	// report holds them all, with every sample.
	cfg.Spill = !cfg.KeepSamples
	if cfg.Spill {
		cols := new(report.TextColumns)
		j.cols = cols
		cfg.OnSpill = func(r passive.Record) {
			if r.TCP != nil {
				cols.AddTCP(r.TCP)
			} else {
				cols.AddQUIC(r.QUIC)
			}
		}
	}
}

// Files analyses capture files (already expanded and checked to open) as
// one capture, merged in time order, and writes the outputs. A file that
// cannot be read leaves the others' analysis reported: the analysis is
// returned with every error.
func (j *Job) Files(paths []string) (*model.Analysis, error) {
	j.configure()
	st, err := j.openStreams()
	if err != nil {
		return nil, err
	}
	TuneGC()
	a := passive.New(j.Config)
	_, readErrs := a.ReadFiles(paths)
	res := a.Finish(j.Truth)
	return res, errors.Join(append(readErrs, j.finish(st, a, res), a.Close())...)
}

// Live captures as spec says, each fanout socket feeding its own worker,
// and writes the outputs. What was captured is
// reported even when capturing failed; nil when nothing was captured.
func (j *Job) Live(ctx context.Context, spec capture.Spec) (*model.Analysis, error) {
	j.configure()
	j.Config.Workers = min(j.Config.Workers, capture.MaxWorkers)
	j.Config.Filter = spec.Filter
	st, err := j.openStreams()
	if err != nil {
		return nil, err
	}
	TuneGC()
	lv := passive.NewLive(j.Config, j.Config.Workers, time.Now().UnixNano())
	spec.Workers = lv.Workers()
	live, err := capture.Run(ctx, spec, func(i int) capture.Sink { return lv.Worker(i) })
	if live == nil {
		return nil, errors.Join(err, st.close())
	}
	a, res := lv.Finish(j.Truth)
	res.Live = live
	if live.KernelDropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the kernel dropped %d of %d packets (%.2f %%) because sonde fell behind: the analysis misses them (a larger --ring or more --workers may help)",
			live.KernelDropped, live.KernelReceived, 100*float64(live.KernelDropped)/float64(max(live.KernelReceived, 1))))
	}
	return res, errors.Join(err, j.finish(st, a, res), a.Close())
}

// streams are the outputs written as the analysis goes.
type streams struct {
	nd, samples *report.NDJSON
	close       func() error
}

// openStreams opens --ndjson's and --samples' files (stdout for -) and
// sets the configuration to stream to them.
func (j *Job) openStreams() (*streams, error) {
	nd, closeND, err := openLines("--ndjson", j.Out.NDJSON, j.Out.Stdout)
	if err != nil {
		return nil, err
	}
	sw, closeSamples, err := openLines("--samples", j.Out.Samples, j.Out.Stdout)
	if err != nil {
		return nil, errors.Join(err, closeND())
	}
	cfg := &j.Config
	if nd != nil {
		cfg.OnRecord = func(r passive.Record) { nd.Write(r) }
		// Nothing else reads the records: keep none.
		cfg.DropRecords = j.Out.JSON == "" && j.Out.CSV == "" && j.Out.HTML == ""
	}
	if sw != nil {
		cfg.OnSample = func(s model.PassiveRTT) { sw.Write(s) }
	}
	return &streams{nd: nd, samples: sw, close: func() error { return errors.Join(closeND(), closeSamples()) }}, nil
}

// OpenError is an output that cannot be created: the command's usage
// error.
type OpenError struct{ Err error }

func (e *OpenError) Error() string { return e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// openLines creates a file of JSON lines for flag (stdout for -; nothing
// without a path).
func openLines(flag, path string, stdout io.Writer) (*report.NDJSON, func() error, error) {
	if path == "" {
		return nil, func() error { return nil }, nil
	}
	w, closeFile := stdout, func() error { return nil }
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return nil, nil, &OpenError{fmt.Errorf("%s: %w", flag, err)}
		}
		w, closeFile = f, f.Close
	}
	nw := report.NewNDJSON(w)
	return nw, func() error {
		if err := errors.Join(nw.Flush(), closeFile()); err != nil {
			return fmt.Errorf("%s %s: %w", flag, path, err)
		}
		return nil
	}, nil
}

// finish closes the streams, writes the outputs of res, the finished
// analysis of a (whose samples the per-sample outputs read), and then
// what went wrong with the inputs and the notes to stderr.
func (j *Job) finish(st *streams, a *passive.Analyzer, res *model.Analysis) error {
	defer func() {
		for _, e := range res.Errors {
			fmt.Fprintln(j.Out.Stderr, "sonde: "+e)
		}
		for _, n := range res.Notes {
			fmt.Fprintln(j.Out.Stderr, "sonde: note: "+n)
		}
	}()
	nerr := st.close()
	o := &j.Out
	stdout := o.Stdout
	if o.NDJSON == "-" || o.Samples == "-" {
		// The records or samples went to stdout: the summary to stderr.
		stdout = o.Stderr
	}
	// A capture of many connections makes many small writes (tabwriter
	// pads cell by cell): unbuffered, they took a quarter of the run.
	bw := bufio.NewWriterSize(stdout, 1<<16)
	if sp := res.Spill; sp != nil && j.Config.Workers > 1 {
		res.Spill = aheadSpill{sp}
		defer func() { res.Spill = sp }()
	}
	err := j.write(bw, a, res)
	if st.nd != nil && o.TextTo(bw, o.Stderr, err != nil) != nil {
		nt, nq := a.Records()
		if res.NumTCP() != nt || res.NumQUIC() != nq {
			fmt.Fprintf(bw, "%d TCP connections and %d QUIC flows: one line each in %s (--ndjson)\n", nt, nq, o.NDJSON)
		}
	}
	return errors.Join(nerr, err, bw.Flush())
}

// write writes the requested forms of res. An output that cannot be
// written does not stop the rest, and the text summary is then written
// (to stderr when stdout has a machine output).
func (j *Job) write(stdout io.Writer, a *passive.Analyzer, res *model.Analysis) error {
	o := &j.Out
	var errs []error
	if o.HTML != "" {
		errs = append(errs, report.WriteOutput("--html", o.HTML, stdout, func(w io.Writer) error {
			return report.WriteAnalyzeHTML(w, res, a.Samples(j.Truth), report.AnalyzeOptions{})
		}))
	}
	if o.CSV != "" {
		errs = append(errs, report.WriteOutput("--csv", o.CSV, stdout, func(w io.Writer) error { return report.WriteSamplesCSV(w, a.Samples(j.Truth)) }))
	}
	if o.JSON != "" {
		errs = append(errs, report.WriteOutput("--json", o.JSON, stdout, func(w io.Writer) error { return report.WriteAnalysisJSON(w, res) }))
	}
	if w := o.TextTo(stdout, o.Stderr, errors.Join(errs...) != nil); w != nil {
		errs = append(errs, report.WriteAnalyzeTextColumns(w, res, j.cols))
	}
	return errors.Join(errs...)
}

// Inputs lists the capture files of args (a directory: the files in it)
// and checks that every one opens before any is read: a mistyped name is
// the command's usage error, not a partial analysis.
func Inputs(args []string) ([]string, error) {
	paths, err := passive.ExpandPaths(args)
	if err != nil {
		return nil, err
	}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return paths, nil
}

// Damaged reports whether a file of res is damaged (its readable part
// was analysed).
func Damaged(res *model.Analysis) bool {
	if res == nil {
		return false
	}
	for _, f := range res.Files {
		if f.DamageOffset >= 0 {
			return true
		}
	}
	return false
}
