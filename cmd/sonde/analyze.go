package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

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
	cmd := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Passive RTT, throughput and connection analysis of pcap/pcapng captures",
		Long: `Read pcap or pcapng captures (Ethernet, raw IP, Linux SLL/SLL2, loopback;
IPv4/IPv6; VLAN) and report per TCP connection the tcptrace-like counters and
RTT from TCP timestamps (pping: per side and full) and from SEQ/ACK (Karn),
and per QUIC flow the spin-bit RTT with its validity checks (docs/analyze.md).

A damaged file is analysed up to the damage; its byte offset is reported.
With --truth (a lab ground-truth file), every RTT method's error is reported.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, tr, err := af.config()
			if err != nil {
				return err
			}
			a := passive.New(cfg)
			for _, path := range args {
				if _, err := a.ReadFile(path); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
			return af.write(cmd.OutOrStdout(), a, tr)
		},
	}
	af.register(cmd)
	return cmd
}

func (af *analyzeFlags) write(w io.Writer, a *passive.Analyzer, tr *passive.Truth) error {
	res := a.Finish(tr)
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
	return fmt.Sprintf("%.2f/%.2f/%.2f (%d)", r.MinMs, r.MedianMs, r.MaxMs, r.Samples)
}

func writeAnalysisText(w io.Writer, r *model.Analysis) {
	fmt.Fprintf(w, "%d packets, %d bytes, %.3f s (%d not analysed)\n", r.Packets, r.Bytes, r.DurationS, r.Skipped)
	for _, f := range r.Files {
		if f.DamageOffset >= 0 {
			fmt.Fprintf(w, "%s: %s, damaged at byte %d (%s): analysed up to there\n", f.Path, f.Format, f.DamageOffset, f.Damage)
		}
	}
	if len(r.TCP) > 0 {
		fmt.Fprintln(w, "\nTCP connections (RTT min/median/max ms (samples))")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "A > B\tdir\tpkts\tdata bytes\tgoodput Mbit/s\tretrans\tooo\tdupack\tzwnd\tTS side\tSEQ/ACK side\tTS full")
		for _, c := range r.TCP {
			for i, d := range []model.TCPDir{c.AB, c.BA} {
				name, dir, side, sa, full := c.A+" > "+c.B, "A>B", c.TSSideB, c.SeqAckSideB, rttCell(c.TSFull)
				if i == 1 {
					name, dir, side, sa, full = "", "B>A", c.TSSideA, c.SeqAckSideA, ""
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", name, dir, d.Packets, d.DataBytes,
					d.GoodputBps/1e6, d.Retransmissions, d.OutOfOrder, d.DupACKs, d.ZeroWindows, rttCell(side), rttCell(sa), full)
			}
		}
		tw.Flush()
		fmt.Fprintln(w, "(TS/SEQ-ACK side of A>B: observer → B → observer; of B>A: observer → A → observer)")
	}
	if len(r.QUIC) > 0 {
		fmt.Fprintln(w, "\nQUIC flows (spin RTT min/median/max ms (valid samples))")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "client > server\tversion\tpkts c>s/s>c\tspin\tedges\tglitches\tfull (c>s edges)\tfull (s>c edges)\tserver side\tclient side\trejected")
		for _, q := range r.QUIC {
			var rej []string
			for _, c := range q.Rejected {
				rej = append(rej, fmt.Sprintf("%s %d", c.Name, c.Count))
			}
			fmt.Fprintf(tw, "%s > %s\t%s\t%d/%d\t%s\t%d/%d\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", q.Client, q.Server, q.Version,
				q.Packets[0], q.Packets[1], q.Spin, q.Edges[0], q.Edges[1], q.Glitches[0], q.Glitches[1],
				rttCell(q.SpinRTT[0]), rttCell(q.SpinRTT[1]), rttCell(q.Component[0]), rttCell(q.Component[1]), strings.Join(rej, ", "))
		}
		tw.Flush()
	}
	writeHTTPText(w, r)
	if t := r.Truth; t != nil {
		fmt.Fprintf(w, "\nError against ground truth (%s, observer at %s), |e| in %%\n", t.File, t.Observer)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "method\tsamples\tmatched\tmean\tstddev\tmedian\tp90\tp99\tmax\tbias\tsamples/s\ttrue ms\t")
		for _, m := range t.Methods {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%+.3f\t%.1f\t%.2f\t\n", m.Method, m.Samples, m.Matched,
				m.MeanAbsPct, m.StddevPct, m.MedianPct, m.P90Pct, m.P99Pct, m.MaxPct, m.MeanSignedPct, m.SamplesPerS, m.MeanTrueMs)
		}
		tw.Flush()
	}
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", e)
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
		return
	}
	fmt.Fprintf(w, "\nanalysed at %.2f Mpps (%.3f s), peak %d live flows, %d evicted\n",
		r.Stats.PacketsPerS/1e6, r.Stats.WallS, r.Stats.PeakLiveFlows, r.Stats.EvictedFlows)
}

// newCaptureCmd captures live with an AF_PACKET socket (no libpcap) in
// cooked mode, keeps IP packets, optionally writes them as a nanosecond
// pcap (raw IP), and analyses them as they arrive.
func newCaptureCmd() *cobra.Command {
	var af analyzeFlags
	var ifname, out string
	var dur time.Duration
	var count int
	cmd := &cobra.Command{
		Use:   "capture -i IF [-w FILE]",
		Short: "Capture live (AF_PACKET, no libpcap) and analyse as it goes",
		Long: `Capture IP packets on an interface with an AF_PACKET socket, write them to a
pcap file (-w, raw IP, nanosecond timestamps) and analyse them like
'sonde analyze'. Stops after --duration, --count packets, or Ctrl-C.
Capture filters (BPF expressions) are not supported.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("capture filters are not supported (got %q)", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ifname == "" {
				return errors.New("capture needs -i INTERFACE")
			}
			cfg, tr, err := af.config()
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
			a := passive.New(cfg)
			if err := captureLive(ctx, ifname, out, count, a); err != nil {
				return err
			}
			return af.write(cmd.OutOrStdout(), a, tr)
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&ifname, "interface-name", "i", "", "interface to capture on")
	f.StringVarP(&out, "write", "w", "", "also write the packets to this pcap file")
	f.DurationVarP(&dur, "duration", "t", 0, "stop after this long (0: until Ctrl-C)")
	f.IntVarP(&count, "count", "c", 0, "stop after this many packets (0: no limit)")
	return cmd
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func captureLive(ctx context.Context, ifname, out string, count int, a *passive.Analyzer) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return fmt.Errorf("capture: AF_PACKET socket (needs CAP_NET_RAW): %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fmt.Errorf("capture: bind %s: %w", ifname, err)
	}
	// Wake up regularly to notice the end of the context.
	tv := unix.Timeval{Usec: 200_000}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	var w io.Writer
	if out != "" {
		fo, err := os.Create(out)
		if err != nil {
			return fmt.Errorf("capture: %w", err)
		}
		defer fo.Close()
		bw := bufio.NewWriterSize(fo, 1<<20)
		defer bw.Flush()
		hdr := make([]byte, 24)
		le := binary.LittleEndian
		le.PutUint32(hdr, 0xa1b23c4d) // nanosecond pcap
		le.PutUint16(hdr[4:], 2)
		le.PutUint16(hdr[6:], 4)
		le.PutUint32(hdr[16:], 65535)
		le.PutUint32(hdr[20:], uint32(pcap.LinkRaw))
		if _, err := bw.Write(hdr); err != nil {
			return fmt.Errorf("capture: %w", err)
		}
		w = bw
	}
	buf := make([]byte, 65536)
	rec := make([]byte, 16)
	for n := 0; count == 0 || n < count; {
		if ctx.Err() != nil {
			return nil
		}
		m, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("capture: %w", err)
		}
		now := time.Now().UnixNano()
		pkt := buf[:m]
		if pcap.Network(pcap.LinkRaw, pkt) == nil {
			continue
		}
		n++
		a.Packet(now, pkt)
		if w != nil {
			le := binary.LittleEndian
			le.PutUint32(rec, uint32(now/1e9))
			le.PutUint32(rec[4:], uint32(now%1e9))
			le.PutUint32(rec[8:], uint32(m))
			le.PutUint32(rec[12:], uint32(m))
			if _, err := w.Write(rec); err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			if _, err := w.Write(pkt); err != nil {
				return fmt.Errorf("capture: %w", err)
			}
		}
	}
	return nil
}
