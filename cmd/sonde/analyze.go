package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/capfilter"
	"github.com/sonde-project/sonde/internal/capture"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
	"github.com/sonde-project/sonde/internal/pcap"
)

type analyzeFlags struct {
	jsonOut   bool
	csvOut    bool
	samples   bool
	truth     string
	observer  string
	iface     int
	interval  time.Duration
	idle      time.Duration
	quicPorts []uint
	html      string
}

func (af *analyzeFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&af.jsonOut, "json", false, "write the analysis as JSON (schema sonde.analyze/v1) to stdout")
	f.BoolVar(&af.csvOut, "csv", false, "write every RTT sample as CSV to stdout (time, flow, method, rtt, valid, flag, truth)")
	f.BoolVar(&af.samples, "samples", false, "include every RTT sample in the JSON output")
	f.StringVar(&af.truth, "truth", "", "ground-truth file of the lab run that produced the capture: report each RTT method's error")
	f.StringVar(&af.observer, "observer", "1A", "where the capture was taken, for --truth: link number and end (A client side, B server side)")
	f.IntVar(&af.iface, "interface", -1, "analyse only this pcapng interface (a lab capture has each packet at both link ends: use 0 or 1)")
	f.DurationVar(&af.interval, "interval", time.Second, "bin of the goodput series")
	f.DurationVar(&af.idle, "idle-timeout", 120*time.Second, "finish flows idle this long (capture time); bounds memory to live flows")
	f.UintSliceVar(&af.quicPorts, "quic-port", []uint{443}, "UDP ports taken as QUIC when the handshake is not in the capture")
	f.StringVar(&af.html, "html", "", "also write a self-contained HTML report with plots (RTT over time, goodput, time-sequence graphs, HTTP) to this file")
}

func (af *analyzeFlags) config() (passive.Config, *passive.Truth, error) {
	cfg := passive.Config{Interval: af.interval, IdleTimeout: af.idle, Interface: af.iface, QUICPorts: []uint16{}}
	for _, p := range af.quicPorts {
		if p == 0 || p > 65535 {
			return cfg, nil, fmt.Errorf("--quic-port %d: not a port", p)
		}
		cfg.QUICPorts = append(cfg.QUICPorts, uint16(p))
	}
	if af.jsonOut && af.csvOut {
		return cfg, nil, errors.New("--json and --csv are exclusive")
	}
	// Per-sample outputs and the truth comparison need every sample; the
	// default summaries need memory per live flow only.
	cfg.KeepSamples = af.samples || af.csvOut || af.truth != "" || af.html != ""
	cfg.TimeSequence = af.html != ""
	if af.truth == "" {
		return cfg, nil, nil
	}
	obs := strings.ToUpper(af.observer)
	if len(obs) < 2 {
		return cfg, nil, fmt.Errorf("--observer %q: want LINK and END, e.g. 1A", af.observer)
	}
	link, err := strconv.Atoi(obs[:len(obs)-1])
	if err != nil {
		return cfg, nil, fmt.Errorf("--observer %q: %w", af.observer, err)
	}
	tr, err := passive.LoadTruth(af.truth, link, obs[len(obs)-1])
	if err != nil {
		return cfg, nil, fmt.Errorf("--truth: %w", err)
	}
	cfg.Identity = true
	return cfg, tr, nil
}

func newAnalyzeCmd() *cobra.Command {
	var af analyzeFlags
	var filter string
	cmd := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Passive RTT, throughput and connection analysis of pcap/pcapng captures",
		Long: `Read pcap or pcapng captures (Ethernet, raw IP, Linux SLL/SLL2, loopback;
IPv4/IPv6; VLAN) and report per TCP connection the tcptrace-like counters and
RTT from TCP timestamps (pping: per side and full) and from SEQ/ACK (Karn),
and per QUIC flow the spin-bit RTT with its validity checks (docs/analyze.md).

A damaged file is analysed up to the damage; its byte offset is reported.
With --truth (a lab ground-truth file), every RTT method's error is reported.
--filter takes tcpdump's filter language on IP packets (host, net, port,
portrange, tcp/udp/sctp/icmp, ip/ip6, proto, less/greater, and/or/not;
docs/analyze.md); it gives the same packets as tcpdump's filter would.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, tr, err := af.config()
			if err != nil {
				return err
			}
			if cfg.Filter, err = capfilter.Compile(filter); err != nil {
				return err
			}
			a := passive.New(cfg)
			for _, path := range args {
				if _, err := a.ReadFile(path); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
			return af.write(cmd.OutOrStdout(), a, a.Finish(tr), tr)
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&filter, "filter", "", `analyse only the packets matching this capture filter, e.g. "tcp port 5201 and host 198.18.1.1"`)
	return cmd
}

// write reports res, the finished analysis of a (whose samples the
// per-sample outputs read).
func (af *analyzeFlags) write(out io.Writer, a *passive.Analyzer, res *model.Analysis, tr *passive.Truth) error {
	// A capture of many connections makes many small writes (tabwriter
	// pads cell by cell): unbuffered, they took a quarter of the run.
	bw := bufio.NewWriterSize(out, 1<<16)
	err := af.report(bw, a, res, tr)
	return errors.Join(err, bw.Flush())
}

func (af *analyzeFlags) report(w io.Writer, a *passive.Analyzer, res *model.Analysis, tr *passive.Truth) error {
	if af.html != "" {
		if err := writeAnalyzeHTML(af.html, res, a.Samples(tr)); err != nil {
			return err
		}
	}
	switch {
	case af.csvOut:
		return writeSamplesCSV(w, a.Samples(tr))
	case af.jsonOut:
		if af.samples {
			res.Samples = a.Samples(tr)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	writeAnalysisText(w, res)
	return nil
}

func writeSamplesCSV(w io.Writer, ss []model.PassiveRTT) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"t_s", "flow", "method", "rtt_ms", "valid", "flag", "true_ms"})
	for _, s := range ss {
		tm := ""
		if s.TrueMs > 0 {
			tm = strconv.FormatFloat(s.TrueMs, 'f', 6, 64)
		}
		_ = cw.Write([]string{strconv.FormatFloat(s.TimeS, 'f', 6, 64), s.Flow, s.Method,
			strconv.FormatFloat(s.RTTMs, 'f', 6, 64), strconv.FormatBool(s.Valid), s.Flag, tm})
	}
	cw.Flush()
	return cw.Error()
}

func rttCell(r model.RTTSummary) string {
	if r.Samples == 0 {
		return "-"
	}
	b := make([]byte, 0, 32)
	b = strconv.AppendFloat(b, r.MinMs, 'f', 2, 64)
	b = append(b, '/')
	b = strconv.AppendFloat(b, r.MedianMs, 'f', 2, 64)
	b = append(b, '/')
	b = strconv.AppendFloat(b, r.MaxMs, 'f', 2, 64)
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(r.Samples), 10)
	return string(append(b, ')'))
}

func writeAnalysisText(w io.Writer, r *model.Analysis) {
	fmt.Fprintf(w, "%d packets, %d bytes, %.3f s (%d not analysed)\n", r.Packets, r.Bytes, r.DurationS, r.Skipped)
	if r.Filter != "" {
		fmt.Fprintf(w, "filter %q", r.Filter)
		if r.Live == nil {
			fmt.Fprintf(w, ": %d packets of the files left out", r.Filtered)
		}
		fmt.Fprintln(w)
	}
	for _, f := range r.Files {
		if f.DamageOffset >= 0 {
			fmt.Fprintf(w, "%s: %s, damaged at byte %d (%s): analysed up to there\n", f.Path, f.Format, f.DamageOffset, f.Damage)
		}
	}
	if len(r.TCP) > 0 {
		fmt.Fprintln(w, "\nTCP connections (RTT min/median/max ms (samples))")
		var tb table
		tb.row("A > B", "dir", "pkts", "data bytes", "goodput Mbit/s", "retrans", "ooo", "dupack", "zwnd", "TS side", "SEQ/ACK side", "TS full")
		for _, c := range r.TCP {
			for i, d := range []model.TCPDir{c.AB, c.BA} {
				name, dir, side, sa, full := c.A+" > "+c.B, "A>B", c.TSSideB, c.SeqAckSideB, rttCell(c.TSFull)
				if i == 1 {
					name, dir, side, sa, full = "", "B>A", c.TSSideA, c.SeqAckSideA, ""
				}
				tb.row(name, dir, num(d.Packets), num(d.DataBytes), fixed(d.GoodputBps/1e6, 2), num(d.Retransmissions),
					num(d.OutOfOrder), num(d.DupACKs), num(d.ZeroWindows), rttCell(side), rttCell(sa), full)
			}
		}
		_ = tb.write(w)
		fmt.Fprintln(w, "(TS/SEQ-ACK side of A>B: observer → B → observer; of B>A: observer → A → observer)")
	}
	if len(r.QUIC) > 0 {
		fmt.Fprintln(w, "\nQUIC flows (spin RTT min/median/max ms (valid samples))")
		var tb table
		tb.row("client > server", "version", "pkts c>s/s>c", "spin", "edges", "glitches", "full (c>s edges)", "full (s>c edges)", "server side", "client side", "rejected")
		for _, q := range r.QUIC {
			var rej []string
			for _, c := range q.Rejected {
				rej = append(rej, fmt.Sprintf("%s %d", c.Name, c.Count))
			}
			tb.row(q.Client+" > "+q.Server, q.Version, num(q.Packets[0])+"/"+num(q.Packets[1]), q.Spin,
				num(q.Edges[0])+"/"+num(q.Edges[1]), num(q.Glitches[0])+"/"+num(q.Glitches[1]),
				rttCell(q.SpinRTT[0]), rttCell(q.SpinRTT[1]), rttCell(q.Component[0]), rttCell(q.Component[1]), strings.Join(rej, ", "))
		}
		_ = tb.write(w)
	}
	writeHTTPText(w, r)
	if t := r.Truth; t != nil {
		fmt.Fprintf(w, "\nError against ground truth (%s, observer at %s), |e| in %%\n", t.File, t.Observer)
		tb := table{alignRight: true}
		tb.row("method", "samples", "matched", "dropped", "mean", "stddev", "median", "p90", "p99", "max", "bias", "samples/s", "true ms")
		for _, m := range t.Methods {
			tb.row(m.Method, num(m.Samples), num(m.Matched), num(m.Dropped), fixed(m.MeanAbsPct, 3), fixed(m.StddevPct, 3), fixed(m.MedianPct, 3),
				fixed(m.P90Pct, 3), fixed(m.P99Pct, 3), fixed(m.MaxPct, 3), fmt.Sprintf("%+.3f", m.MeanSignedPct),
				fixed(m.SamplesPerS, 1), fixed(m.MeanTrueMs, 2))
		}
		_ = tb.write(w)
	}
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", e)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	if len(r.Files) == 0 {
		// Live capture: packets are analysed as they arrive, so the
		// analyser's own speed is not measured; report the arrival rate.
		rate := 0.0
		if r.DurationS > 0 {
			rate = float64(r.Packets) / r.DurationS
		}
		fmt.Fprintf(w, "\ncaptured %d packets in %.3f s (%.0f packets/s), peak %d live flows, %d evicted\n",
			r.Packets, r.DurationS, rate, r.Stats.PeakLiveFlows, r.Stats.EvictedFlows)
		if l := r.Live; l != nil {
			fmt.Fprintf(w, "kernel on %s: %d packets received, %d dropped (sonde fell behind)\n", l.Interface, l.KernelReceived, l.KernelDropped)
		}
		return
	}
	fmt.Fprintf(w, "\nanalysed at %.2f Mpps (%.3f s), peak %d live flows, %d evicted\n",
		r.Stats.PacketsPerS/1e6, r.Stats.WallS, r.Stats.PeakLiveFlows, r.Stats.EvictedFlows)
}

// newCaptureCmd captures live with an AF_PACKET socket (no libpcap),
// optionally writes a nanosecond raw-IP pcap, and analyses as it goes.
func newCaptureCmd() *cobra.Command {
	var af analyzeFlags
	var ifname, out string
	var dur time.Duration
	var count int
	cmd := &cobra.Command{
		Use:   "capture -i IF [-w FILE] [FILTER...]",
		Short: "Capture live (AF_PACKET, no libpcap) and analyse as it goes",
		Long: `Capture IP packets on an interface with an AF_PACKET socket (cooked mode,
kernel timestamps), write them to a pcap file (-w, raw IP, nanosecond
timestamps) and analyse them like 'sonde analyze'. Stops after --duration,
--count packets, or Ctrl-C. The words after the flags are a capture filter
in tcpdump's language on IP packets, compiled to BPF and run in the kernel:
  sonde capture -i eth0 -t 10s tcp port 5201 and host 198.18.1.2
The summary gives the packets the kernel dropped because sonde fell behind.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ifname == "" {
				return errors.New("capture needs -i INTERFACE")
			}
			cfg, tr, err := af.config()
			if err != nil {
				return err
			}
			filter, err := capfilter.Compile(strings.Join(args, " "))
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if dur > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, dur)
				defer cancel()
			}
			cfg.Filter = filter
			a := passive.New(cfg)
			live, err := captureLive(ctx, cmd.ErrOrStderr(), ifname, filter, out, count, a)
			if live == nil {
				return err // nothing was captured
			}
			res := a.Finish(tr)
			res.Live = live
			// What was captured is reported even when capturing failed.
			return errors.Join(err, af.write(cmd.OutOrStdout(), a, res, tr))
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&ifname, "interface-name", "i", "", "interface to capture on")
	f.StringVarP(&out, "write", "w", "", "also write the packets to this pcap file (raw IP, nanosecond timestamps)")
	f.DurationVarP(&dur, "duration", "t", 0, "stop after this long (0: until Ctrl-C)")
	f.IntVarP(&count, "count", "c", 0, "stop after this many packets (0: no limit)")
	return cmd
}

// captureLive feeds the packets of a live capture to a until ctx ends or
// count packets were seen, and returns the capture's description. Only IP
// packets are analysed.
func captureLive(ctx context.Context, msg io.Writer, ifname string, filter *capfilter.Filter, out string, count int, a *passive.Analyzer) (*model.LiveCapture, error) {
	src, err := capture.Open(ifname, filter)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if filter != nil {
		fmt.Fprintf(msg, "sonde: capturing on %s, filter %q\n", ifname, filter)
	} else {
		fmt.Fprintf(msg, "sonde: capturing on %s\n", ifname)
	}
	live := &model.LiveCapture{Interface: ifname}
	var w *pcap.Writer
	if out != "" {
		fo, err := os.Create(out)
		if err != nil {
			return live, fmt.Errorf("capture: %w", err)
		}
		defer fo.Close()
		if w, err = pcap.NewWriter(fo, pcap.LinkRaw, 262144); err != nil {
			return live, fmt.Errorf("capture: %s: %w", out, err)
		}
	}
	var p capture.Packet
	for n := 0; count == 0 || n < count; {
		if err = src.Next(ctx, &p); err != nil {
			if ctx.Err() != nil {
				err = nil
			}
			break
		}
		if pcap.Network(pcap.LinkRaw, p.Data) == nil {
			continue
		}
		n++
		a.Packet(p.TimeNs, p.Data)
		if w != nil {
			if err = w.Write(p.TimeNs, p.Data, p.Length); err != nil {
				err = fmt.Errorf("capture: %s: %w", out, err)
				break
			}
		}
	}
	if w != nil {
		if ferr := w.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("capture: %s: %w", out, ferr)
		}
	}
	st, serr := src.Stats()
	live.KernelReceived, live.KernelDropped = st.Received, st.Dropped
	return live, errors.Join(err, serr)
}
