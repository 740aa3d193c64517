//go:build !monitoronly

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/capfilter"
	"github.com/sonde-project/sonde/internal/capture"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/units"
)

type analyzeFlags struct {
	out       outputs
	samples   string
	truth     string
	observer  string
	iface     int
	interval  time.Duration
	idle      time.Duration
	quicPorts []uint
	filter    string
	ndjson    string
	workers   int
}

// register adds the flags of sonde analyze, or of sonde capture (live):
// a live capture has one interface, so --if-index is analyze's only.
func (af *analyzeFlags) register(cmd *cobra.Command, live bool) {
	af.out.register(cmd, "the analysis (schema sonde.analyze/v1)", true)
	f := cmd.Flags()
	f.Lookup("csv").Usage = "write every RTT sample as CSV (time, flow, method, rtt, valid, flag, truth) to `FILE`, - for stdout (no text summary then)"
	f.Lookup("html").Usage = "write a self-contained HTML report with plots (RTT over time, goodput, time-sequence graphs, HTTP) to `FILE`, - for stdout (no text summary then)"
	f.StringVar(&af.samples, "samples", "", "stream every RTT sample to `FILE` (- for stdout: no text summary then), one JSON line each "+
		`{"t_s","flow","method","rtt_ms","valid","flag"}: TCP samples as they are taken, a QUIC flow's when it finishes; for those who want them all `+
		`(the summaries' median and p90 are within 0.8 % past 64 samples a method; docs/analyze.md)`)
	f.StringVar(&af.truth, "truth", "", "read the ground-truth `FILE` (written by emulate/lab up --truth-out) of the lab run that produced the capture: report each RTT method's error")
	f.StringVar(&af.observer, "observer", "1A", "where the capture was taken, for --truth: link number and end (A client side, B server side)")
	if !live {
		f.IntVar(&af.iface, "if-index", -1, "analyse only this pcapng interface index (a lab capture has each packet at both link ends: use 0 or 1); -1: all")
		f.IntVar(&af.workers, "workers", 0, "analyse with `N` workers, packets split by flow, 0: one per core (GOMAXPROCS); the figures are one worker's (--csv, --html, --samples and --truth use one)")
	} else {
		f.IntVar(&af.workers, "workers", 0, "capture with `N` AF_PACKET sockets in one fanout group, the kernel splitting packets by a symmetric flow hash, each analysed by its own worker; 0: one per core (GOMAXPROCS) (--csv, --html, --samples and --truth use one)")
	}
	f.DurationVar(&af.interval, "interval", time.Second, "bin of the goodput series")
	f.DurationVar(&af.idle, "idle-timeout", 120*time.Second, "finish flows idle this long (capture time); bounds memory to live flows")
	f.UintSliceVar(&af.quicPorts, "quic-port", []uint{443}, "UDP ports taken as QUIC when the handshake is not in the capture")
	f.StringVar(&af.filter, "filter", "", "capture filter `EXPR`"+` in tcpdump's language on IP packets, e.g. "tcp port 5201 and host 198.18.1.1" (docs/analyze.md)`)
	f.StringVar(&af.ndjson, "ndjson", "", "stream one JSON line per connection to `FILE` (- for stdout: no text summary then) as it finishes, "+
		`{"tcp":{…}} or {"quic":{…}} as in --json; without --json, --csv or --html the records are not kept, so memory follows the live flows and the text summary has the totals only`)
}

// openNDJSON opens --ndjson's and --samples' files (stdout for -) and
// sets cfg to stream to them; close flushes and closes them. nw is
// --ndjson's writer (nil without it).
func (af *analyzeFlags) openNDJSON(cfg *passive.Config, stdout io.Writer) (nw *report.NDJSON, closeFn func() error, err error) {
	nw, closeND, err := openLines("--ndjson", af.ndjson, stdout)
	if err != nil {
		return nil, nil, err
	}
	sw, closeSamples, err := openLines("--samples", af.samples, stdout)
	if err != nil {
		return nil, nil, errors.Join(err, closeND())
	}
	if nw != nil {
		cfg.OnRecord = func(r passive.Record) { nw.Write(r) }
		// Nothing else reads the records: keep none.
		cfg.DropRecords = af.out.json == "" && af.out.csv == "" && af.out.html == ""
	}
	if sw != nil {
		cfg.OnSample = func(s model.PassiveRTT) { sw.Write(s) }
	}
	return nw, func() error { return errors.Join(closeND(), closeSamples()) }, nil
}

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
			return nil, nil, usageErr(fmt.Errorf("%s: %w", flag, err))
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Bounds of --interval: one goodput bin per interval per connection, so a
// tiny interval over a long capture asks for more bins than anyone reads
// (1ns on a 100 KB capture wrote 627 MB of JSON).
const (
	minAnalyzeInterval = time.Millisecond
	maxAnalyzeInterval = time.Hour
	maxAnalyzeWorkers  = 256
)

// config checks the flags (usage errors) and builds the analyser's
// configuration.
func (af *analyzeFlags) config() (passive.Config, *passive.TruthIndex, error) {
	cfg, tr, err := af.buildConfig()
	return cfg, tr, usageErr(err)
}

func (af *analyzeFlags) buildConfig() (passive.Config, *passive.TruthIndex, error) {
	if err := checkDuration("--interval", af.interval, minAnalyzeInterval, maxAnalyzeInterval); err != nil {
		return passive.Config{}, nil, err
	}
	if err := checkDuration("--idle-timeout", af.idle, time.Second, 24*time.Hour); err != nil {
		return passive.Config{}, nil, err
	}
	if err := checkCount("--if-index", af.iface, -1, 1<<16-1); err != nil {
		return passive.Config{}, nil, err
	}
	if err := checkCount("--workers", af.workers, 0, maxAnalyzeWorkers); err != nil {
		return passive.Config{}, nil, err
	}
	if err := af.out.check(); err != nil {
		return passive.Config{}, nil, err
	}
	if err := checkOutput("--ndjson", af.ndjson); err != nil {
		return passive.Config{}, nil, err
	}
	if err := checkOutput("--samples", af.samples); err != nil {
		return passive.Config{}, nil, err
	}
	if n := btoi(af.ndjson == "-") + btoi(af.samples == "-") + btoi(af.out.toStdout()); n > 1 {
		return passive.Config{}, nil, errors.New("only one output (--json, --html, --csv, --ndjson, --samples) can go to stdout (-)")
	}
	cfg := passive.Config{Interval: af.interval, IdleTimeout: af.idle, Interface: af.iface, QUICPorts: []uint16{}, Workers: af.workers}
	if cfg.Workers == 0 {
		// One per core: the reading goroutine is one of the workers.
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	for _, p := range af.quicPorts {
		if p == 0 || p > 65535 {
			return cfg, nil, fmt.Errorf("--quic-port %d: not a port", p)
		}
		cfg.QUICPorts = append(cfg.QUICPorts, uint16(p))
	}
	// Per-sample outputs and the truth comparison need every sample; the
	// default summaries need memory per live flow only, and --samples
	// streams them.
	cfg.KeepSamples = af.out.csv != "" || af.truth != "" || af.out.html != ""
	cfg.TimeSequence = af.out.html != ""
	// The text and JSON outputs read the records back from a temporary
	// file (in start order): memory follows the live flows. The HTML
	// report holds them all, with every sample.
	cfg.Spill = !cfg.KeepSamples
	// --observer is checked whether or not --truth reads it: a typo is
	// a usage error, not a flag silently ignored.
	link, end, err := parseObserver(af.observer)
	if err != nil {
		return cfg, nil, err
	}
	if af.truth == "" {
		return cfg, nil, nil
	}
	tr, err := passive.LoadTruth(af.truth, link, end)
	if err != nil {
		return cfg, nil, fmt.Errorf("--truth: %w", err)
	}
	cfg.Identity = true
	return cfg, tr, nil
}

// maxObserverLink bounds --observer's link number (a lab has a few links).
const maxObserverLink = 1 << 10

// parseObserver reads --observer: a link number from 1 and an end, A
// (client side) or B (server side), e.g. 1A.
func parseObserver(s string) (int, byte, error) {
	obs := strings.ToUpper(s)
	if len(obs) < 2 {
		return 0, 0, fmt.Errorf("--observer %q: want LINK and END, e.g. 1A", s)
	}
	link, err := strconv.Atoi(obs[:len(obs)-1])
	if end := obs[len(obs)-1]; err != nil || link < 1 || link > maxObserverLink || (end != 'A' && end != 'B') {
		return 0, 0, fmt.Errorf("--observer %q: want a link number from 1 to %d and an end A or B, e.g. 1A", s, maxObserverLink)
	}
	return link, obs[len(obs)-1], nil
}

func newAnalyzeCmd() *cobra.Command {
	var af analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze FILE|DIR...",
		Short: "Passive RTT, throughput and connection analysis of pcap/pcapng captures",
		Long: `Read pcap or pcapng captures (Ethernet, raw IP, Linux SLL/SLL2, loopback;
IPv4/IPv6; VLAN) and report per TCP connection the tcptrace-like counters and
RTT from TCP timestamps (pping: per side and full) and from SEQ/ACK (Karn),
and per QUIC flow the spin-bit RTT with its validity checks (docs/analyze.md).

A damaged file is analysed up to the damage and the analysis is reported;
the damage and its byte offset go to stderr and the exit status is 3.
The text summary goes to stdout, or nowhere when --json, --csv or --html
writes to stdout (-); damage, errors and notes go to stderr.
With --truth (a lab ground-truth file), every RTT method's error is reported.
--filter takes tcpdump's filter language on IP packets (host, net, port,
portrange, tcp/udp/sctp/icmp, ip/ip6, proto, less/greater, and/or/not;
docs/analyze.md); it gives the same packets as tcpdump's filter would.
Several files, or a directory of them (rotated by tcpdump -G or -C), are
one capture: their packets are merged in time order (pcap and pcapng
mixed), and overlaps and gaps between files are noted. Files compressed
with gzip or zstd are read as they are (found by their magic number).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, tr, err := af.config()
			if err != nil {
				return err
			}
			if cfg.Filter, err = capfilter.Compile(af.filter); err != nil {
				return usageErr(err)
			}
			// Every input must open before any is read: a mistyped
			// name is a usage error, not a partial analysis.
			paths, err := passive.ExpandPaths(args)
			if err != nil {
				return usageErr(err)
			}
			for _, path := range paths {
				f, err := os.Open(path)
				if err != nil {
					return usageErr(err)
				}
				f.Close()
			}
			nw, closeND, err := af.openNDJSON(&cfg, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			analyzerGC()
			a := passive.New(cfg)
			// The files are one capture, merged in time order; a file
			// that cannot be read leaves the others' analysis reported.
			_, readErrs := a.ReadFiles(paths)
			res := a.Finish(tr)
			nerr := closeND()
			werr := af.write(cmd.OutOrStdout(), cmd.ErrOrStderr(), a, res, tr, nw)
			return analyzeStatus(cmd.ErrOrStderr(), res, errors.Join(append(readErrs, nerr, werr, a.Close())...))
		},
	}
	af.register(cmd, false)
	return cmd
}

// analyzerGC sets the collector's target for an analysis (unless GOGC or
// GOMEMLIMIT is set): the heap may grow to max(analyzeHeapFloor, 1.25 ×
// the live heap) before a collection. The heap is long-lived per-flow
// state: the default (twice the live data) doubled the peak RSS, and a
// target proportional to it (GOGC 50) still let RSS follow the live flows'
// growth through a capture's first minutes and the heap's fragmentation
// (74, 92 and 107 MB on the bench's 1 M, 10 M and 50 M packets). A target
// with a floor is expressed as a memory limit, which the scavenger also
// holds RSS to; each collection (gcTuner) sets the next limit from the
// live heap it found, so a capture with many live flows still gets room
// to grow. Above the floor the room is a quarter of the live heap (GOGC 25:
// about twice GOGC 50's collections, a few % of the CPU time): with half,
// the 50 M capture's live heap (43 MB against 38 MB on 10 M) lifted its
// RSS 4-8 MB above the 10 M one's.
func analyzerGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	t := &gcTuner{floor: analyzeHeapFloor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
}

// analyzeHeapFloor is the heap an analysis may use before the collector
// runs (the 10 M-packet bench capture's live heap peaks at ~40 MB).
const analyzeHeapFloor = 64 << 20

// gcTuner sets the memory limit after every collection: a finalizer on
// an object that every collection finds unreachable, re-armed each time.
type gcTuner struct {
	floor  int64
	sample []metrics.Sample
}

type gcSentinel struct{ _ [16]byte }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		t.tune()
		t.arm()
	})
}

func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	live := int64(0)
	if v := t.sample[0].Value; v.Kind() == metrics.KindUint64 {
		live = int64(v.Uint64())
	}
	debug.SetMemoryLimit(max(t.floor, live+live/4))
}

// analyzeStatus reports on stderr what went wrong with the inputs and
// picks the exit status: a failure (err) exits 1; damaged files, whose
// readable part was analysed and reported, exit 3 (exitDamaged).
func analyzeStatus(stderr io.Writer, res *model.Analysis, err error) error {
	for _, e := range res.Errors {
		fmt.Fprintln(stderr, "sonde: "+e)
	}
	for _, n := range res.Notes {
		fmt.Fprintln(stderr, "sonde: note: "+n)
	}
	if err != nil {
		return err
	}
	for _, f := range res.Files {
		if f.DamageOffset >= 0 {
			return &exitError{code: exitDamaged, err: errSilent}
		}
	}
	return nil
}

// write reports res, the finished analysis of a (whose samples the
// per-sample outputs read).
func (af *analyzeFlags) write(stdout, stderr io.Writer, a *passive.Analyzer, res *model.Analysis, tr *passive.TruthIndex, nw *report.NDJSON) error {
	if af.ndjson == "-" || af.samples == "-" {
		// The records or samples went to stdout: the summary to stderr.
		stdout = stderr
	}
	// A capture of many connections makes many small writes (tabwriter
	// pads cell by cell): unbuffered, they took a quarter of the run.
	bw := bufio.NewWriterSize(stdout, 1<<16)
	err := af.report(bw, stderr, a, res, tr)
	if nw != nil && af.out.textTo(bw, stderr, err != nil) != nil {
		nt, nq := a.Records()
		if res.NumTCP() != nt || res.NumQUIC() != nq {
			fmt.Fprintf(bw, "%d TCP connections and %d QUIC flows: one line each in %s (--ndjson)\n", nt, nq, af.ndjson)
		}
	}
	return errors.Join(err, bw.Flush())
}

// report writes the requested forms of res. An output that cannot be
// written does not stop the rest, and the text summary is then written
// (to stderr when stdout has a machine output).
func (af *analyzeFlags) report(stdout, stderr io.Writer, a *passive.Analyzer, res *model.Analysis, tr *passive.TruthIndex) error {
	var errs []error
	if o := af.out.html; o != "" {
		errs = append(errs, writeOutput("--html", o, stdout, func(w io.Writer) error {
			return report.WriteAnalyzeHTML(w, res, a.Samples(tr), report.AnalyzeOptions{})
		}))
	}
	if o := af.out.csv; o != "" {
		errs = append(errs, writeOutput("--csv", o, stdout, func(w io.Writer) error { return report.WriteSamplesCSV(w, a.Samples(tr)) }))
	}
	if o := af.out.json; o != "" {
		errs = append(errs, writeOutput("--json", o, stdout, func(w io.Writer) error { return report.WriteAnalysisJSON(w, res) }))
	}
	if w := af.out.textTo(stdout, stderr, errors.Join(errs...) != nil); w != nil {
		errs = append(errs, report.WriteAnalyzeText(w, res))
	}
	return errors.Join(errs...)
}

// newCaptureCmd captures live with an AF_PACKET socket (no libpcap),
// optionally writes a nanosecond raw-IP pcap, and analyses as it goes.
func newCaptureCmd() *cobra.Command {
	var af analyzeFlags
	var ifname, out, count, ring string
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "capture -i IF [-w FILE] [--filter FILTER]",
		Short: "Capture live (AF_PACKET, no libpcap) and analyse as it goes",
		Long: `Capture IP packets on an interface with an AF_PACKET socket (cooked mode,
kernel timestamps), write them to a pcap file (-w, raw IP, nanosecond
timestamps) and analyse them like 'sonde analyze'. Stops after --duration,
--count packets, or Ctrl-C. --filter is a capture filter in tcpdump's
language on IP packets, compiled to BPF and run in the kernel:
  sonde capture -i eth0 -t 10s --filter "tcp port 5201 and host 198.18.1.2"
(as with tcpdump, the filter may also be given as the words after the
flags). Each worker (--workers) reads its own socket, whose TPACKET_V3 ring
(--ring) the kernel fills in blocks; with several, the sockets form one
PACKET_FANOUT group that sends both directions of a connection to the same
worker. The summary gives the packets the kernel dropped because sonde fell
behind (always, 0 included; a note on stderr when there were any), the
times the ring filled up, and the packets still in the rings at the stop.
With -w, one worker unless --workers says otherwise: several write the file
in the order they take the packets, in time order per connection but not
across connections.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ifname == "" {
				return usagef("capture needs -i INTERFACE")
			}
			maxCount, cerr := units.ParseCountLimit(count, 1<<40)
			if cerr != nil {
				cerr = fmt.Errorf("--count: %w", cerr)
			}
			ringBytes, rerr := units.ParseBytes(ring)
			if rerr == nil && (ringBytes < capture.MinRingBytes || ringBytes > capture.MaxRingBytes) {
				rerr = fmt.Errorf("want %d KiB to %d MiB, got %s", capture.MinRingBytes>>10, capture.MaxRingBytes>>20, ring)
			}
			if rerr != nil {
				rerr = fmt.Errorf("--ring: %w", rerr)
			}
			if err := errors.Join(checkDuration("--duration", dur, 0, 365*24*time.Hour), cerr, rerr, checkOutput("--write", out)); err != nil {
				return usageErr(err)
			}
			cfg, tr, err := af.config()
			if err != nil {
				return err
			}
			if err := checkCount("--workers", af.workers, 0, capture.MaxWorkers); err != nil {
				return err
			}
			cfg.Workers = min(cfg.Workers, capture.MaxWorkers)
			if out != "" && !cmd.Flags().Changed("workers") {
				// A file in time order, as tcpdump writes it.
				cfg.Workers = 1
			}
			expr := af.filter
			if len(args) > 0 {
				if expr != "" {
					return usagef("capture: give the filter once: --filter or the words after the flags, not both")
				}
				expr = strings.Join(args, " ")
			}
			filter, err := capfilter.Compile(expr)
			if err != nil {
				return usageErr(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if dur > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, dur)
				defer cancel()
			}
			cfg.Filter = filter
			nw, closeND, err := af.openNDJSON(&cfg, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			analyzerGC()
			lv := passive.NewLive(cfg, cfg.Workers, time.Now().UnixNano())
			live, err := captureLive(ctx, cmd.ErrOrStderr(), liveCapture{ifname: ifname, filter: filter, out: out, count: maxCount, ring: int(ringBytes)}, lv)
			if live == nil {
				return errors.Join(err, closeND()) // nothing was captured
			}
			a, res := lv.Finish(tr)
			res.Live = live
			if live.KernelDropped > 0 {
				res.Notes = append(res.Notes, fmt.Sprintf("the kernel dropped %d of %d packets (%.2f %%) because sonde fell behind: the analysis misses them (a larger --ring or more --workers may help)",
					live.KernelDropped, live.KernelReceived, 100*float64(live.KernelDropped)/float64(max(live.KernelReceived, 1))))
			}
			nerr := closeND()
			// What was captured is reported even when capturing failed.
			werr := af.write(cmd.OutOrStdout(), cmd.ErrOrStderr(), a, res, tr, nw)
			return analyzeStatus(cmd.ErrOrStderr(), res, errors.Join(err, nerr, werr, a.Close()))
		},
	}
	af.register(cmd, true)
	f := cmd.Flags()
	f.StringVarP(&ifname, "interface", "i", "", "network interface to capture on (required)")
	f.StringVarP(&out, "write", "w", "", "also write the packets to this pcap `FILE` (raw IP, nanosecond timestamps)")
	f.DurationVarP(&dur, "duration", "t", 0, "stop after this long (0: until Ctrl-C)")
	f.StringVarP(&count, "count", "c", units.Off, "stop after `N` packets (off or 0: no limit)")
	f.StringVar(&ring, "ring", "32MiB", "each worker's TPACKET_V3 ring `SIZE` (128KiB to 1GiB, kernel memory): packets wait there while sonde is busy; a full ring drops")
	// The old name, for scripts written before the rename.
	f.StringVar(&ifname, "interface-name", "", "")
	_ = f.MarkDeprecated("interface-name", "use -i/--interface")
	return cmd
}
