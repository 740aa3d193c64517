//go:build !monitoronly

package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/capfilter"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
	"github.com/sonde-project/sonde/internal/passive/job"
	"github.com/sonde-project/sonde/internal/report"
)

// analyzeFlags are the flags of sonde analyze and sonde capture; the
// analysis itself is internal/passive/job's.
type analyzeFlags struct {
	out             report.Outputs
	samples, ndjson string
	truth, observer string
	iface, workers  int
	interval, idle  time.Duration
	quicPorts       []uint
	filter          string
}

// register adds the flags of sonde analyze, or of sonde capture (live):
// a live capture has one interface, so --if-index is analyze's only.
func (af *analyzeFlags) register(cmd *cobra.Command, live bool) {
	registerOutputs(cmd, &af.out, "the analysis (schema sonde.analyze/v1)", true)
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

// Bounds of --interval: one goodput bin per interval per connection, so a
// tiny interval over a long capture asks for more bins than anyone reads
// (1ns on a 100 KB capture wrote 627 MB of JSON).
const (
	minAnalyzeInterval = time.Millisecond
	maxAnalyzeInterval = time.Hour
	maxAnalyzeWorkers  = 256
)

// job checks the flags (usage errors: every one before anything is read
// or captured) and returns the analysis they ask for, writing to stdout
// and stderr.
func (af *analyzeFlags) job(stdout, stderr io.Writer) (*job.Job, error) {
	j := &job.Job{Config: passive.Config{Interval: af.interval, IdleTimeout: af.idle, Interface: af.iface, QUICPorts: []uint16{}, Workers: af.workers},
		Out: job.Outputs{Outputs: af.out, NDJSON: af.ndjson, Samples: af.samples, Stdout: stdout, Stderr: stderr}}
	err := cmp.Or(checkDuration("--interval", af.interval, minAnalyzeInterval, maxAnalyzeInterval),
		checkDuration("--idle-timeout", af.idle, time.Second, 24*time.Hour), checkCount("--if-index", af.iface, -1, 1<<16-1),
		checkCount("--workers", af.workers, 0, maxAnalyzeWorkers), usageErr(af.out.Check()), checkOutput("--ndjson", af.ndjson), checkOutput("--samples", af.samples), j.Out.Check())
	for _, p := range af.quicPorts {
		if p == 0 || p > 65535 {
			err = cmp.Or(err, fmt.Errorf("--quic-port %d: not a port", p))
		}
		j.Config.QUICPorts = append(j.Config.QUICPorts, uint16(p))
	}
	// --observer is checked whether or not --truth reads it: a typo is
	// a usage error, not a flag silently ignored.
	link, end, oerr := passive.ParseObserver(af.observer)
	if err = cmp.Or(err, oerr); err != nil || af.truth == "" {
		return j, usageErr(err)
	}
	if j.Truth, err = passive.LoadTruth(af.truth, link, end); err != nil {
		return j, usagef("--truth: %w", err)
	}
	return j, nil
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
			j, err := af.job(cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if j.Config.Filter, err = capfilter.Compile(af.filter); err != nil {
				return usageErr(err)
			}
			paths, err := job.Inputs(args)
			if err != nil {
				return usageErr(err)
			}
			res, err := j.Files(paths)
			return analyzeStatus(res, err)
		},
	}
	af.register(cmd, false)
	return cmd
}

// analyzeStatus picks the exit status: an output that cannot be created
// is a usage error, another failure exits 1, and damaged files, whose
// readable part was analysed and reported, exit 3 (exitDamaged).
func analyzeStatus(res *model.Analysis, err error) error {
	var oe *job.OpenError
	switch {
	case errors.As(err, &oe):
		return usageErr(err)
	case err == nil && job.Damaged(res):
		return &exitError{code: exitDamaged, err: errSilent}
	}
	return err
}
