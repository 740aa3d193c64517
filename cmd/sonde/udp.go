package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/dscp"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/udptest"
)

// udpFlags are the raw flag values of `sonde udp`, validated in build.
type udpFlags struct {
	opts    udptest.Options
	dscp    string
	ecn     string
	profile string
	classes string
	out     outputs
}

func newUDPCmd() *cobra.Command {
	var uf udpFlags
	cmd := &cobra.Command{
		Use:   "udp [SERVER]",
		Short: "Measure delay, jitter and loss per direction with STAMP probes",
		Long: `Send isochronous STAMP (RFC 8762) probes to a sonde server's reflector and
report, per direction: one-way delay (measured on a shared clock, else
estimated with its uncertainty), RFC 3550 jitter, IPDV and PDV, loss, late
packets, duplicates, RFC 4737 reordering and RFC 3357 loss patterns; plus
RTT and whether the DSCP/ECN marks arrived unchanged (RFC 8972 CoS TLV).

SERVER is the sonde server's HTTP address, host[:port] or http(s)://host[:port]
(default port 8080); the reflector's UDP port comes from the server. Without
SERVER, sonde starts an embedded server on loopback and says so.

--reflector HOST:PORT tests against any standalone STAMP reflector (RFC 8762)
or TWAMP-Light reflector (RFC 5357, as routers run) instead, e.g. port 862:
there is no control channel, so loss is counted for the round trip only and
one-way delays are estimates; the result says which format the reflector
speaks. Add --no-cos if the reflector rejects RFC 8972 TLVs.

--profile voice sends G.711-like probes (20 ms, 172 bytes, EF) and adds an
E-model MOS estimate. --classes runs one flow per class at the same time.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				uf.opts.Server = args[0]
			}
			return runUDP(cmd.Context(), &uf, cmd.Flags().Changed, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVarP(&uf.opts.Duration, "duration", "t", 10*time.Second, "how long to send probes")
	f.DurationVar(&uf.opts.Interval, "interval", 20*time.Millisecond, "probe interval, at least 100µs (absolute deadlines on the monotonic clock)")
	f.IntVarP(&uf.opts.PacketBytes, "size", "s", 64, "UDP payload of each probe in bytes (52, or 56-1452)")
	f.StringVar(&uf.dscp, "dscp", "0", "DSCP of the probes, 0-63 or a name (ef, af41, cs1...); replies carry it too")
	f.StringVar(&uf.ecn, "ecn", "0", "ECN codepoint of the probes: 0-3 or not-ect, ect1, ect0, ce")
	f.DurationVar(&uf.opts.Timeout, "timeout", udptest.DefaultTimeout, "a probe not answered within this time is lost (later replies count as late)")
	f.StringVar(&uf.profile, "profile", "", "voice: 20 ms G.711-sized EF probes and an E-model MOS estimate (explicit flags win)")
	f.StringVar(&uf.classes, "classes", "", `QoS classes: one flow per class at the same time, "name:dscp[/src=PORT],...", e.g. "ef:46,be:0/src=5004" (src: the flow's local UDP port; @PORT, a server port in sonde test, does not apply: the reflector has one port)`)
	f.BoolVar(&uf.opts.NoCoS, "no-cos", false, "send no Class of Service TLV (for strict RFC 8762 reflectors)")
	f.StringVar(&uf.opts.Reflector, "reflector", "", "a standalone STAMP or TWAMP-Light reflector's UDP address (host:port) to test instead of a sonde server")
	f.StringVar(&uf.opts.Token, "token", "", "bearer token for a private server")
	f.BoolVarP(&uf.opts.Insecure, "insecure", "k", false, "accept any TLS certificate")
	f.StringVar(&uf.out.raw, "raw", "", "write one JSON line per probe to `FILE`, - for stdout (no text summary then)")
	uf.out.register(cmd, "the result (schema sonde.udp/v1)", false)
	return cmd
}

// build checks the flags and fills the options; changed tells which flags
// the user set, so that a profile does not override them.
func (uf *udpFlags) build(changed func(string) bool) error {
	o := &uf.opts
	switch uf.profile {
	case "":
	case "voice":
		keep := *o
		o.VoiceProfile()
		if changed("interval") {
			o.Interval = keep.Interval
		}
		if changed("size") {
			o.PacketBytes = keep.PacketBytes
		}
	default:
		return fmt.Errorf("--profile: want voice, got %q", uf.profile)
	}
	if changed("dscp") || uf.profile == "" {
		v, err := dscp.Parse(uf.dscp)
		if err != nil {
			return fmt.Errorf("--dscp: %w", err)
		}
		o.DSCP = v
	}
	v, err := parseECN(uf.ecn)
	if err != nil {
		return err
	}
	o.ECN = v
	if uf.classes != "" {
		cs, err := parseUDPClasses(uf.classes)
		if err != nil {
			return fmt.Errorf("--classes: %w", err)
		}
		o.Classes = cs
	}
	if err := checkDuration("--duration", o.Duration, time.Millisecond, 24*time.Hour); err != nil {
		return err
	}
	if err := checkDuration("--timeout", o.Timeout, time.Millisecond, time.Minute); err != nil {
		return err
	}
	// Outputs are checked before the run, so a bad path costs no
	// measurement.
	if err := uf.out.check(); err != nil {
		return err
	}
	o.Software = "sonde/" + version
	return o.Validate()
}

// parseUDPClasses reads sonde udp's --classes: dscp.ParseClasses's
// "name:dscp" list, where each class may end in "/src=PORT", its local
// UDP source port. "@PORT" is refused: it names a server port (sonde test),
// and a reflector has one port.
func parseUDPClasses(s string) ([]model.Class, error) {
	if strings.Contains(s, "@") {
		return nil, errors.New(`@PORT is a server port (sonde test); the reflector has one port: give a class's local port as name:dscp/src=PORT`)
	}
	items := strings.Split(s, ",")
	ports := make([]int, len(items))
	for i, it := range items {
		head, port, ok := strings.Cut(it, "/src=")
		if !ok {
			continue
		}
		p, err := strconv.Atoi(strings.TrimSpace(port))
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("class %q: invalid source port %q", strings.TrimSpace(head), port)
		}
		items[i], ports[i] = head, p
	}
	cs, err := dscp.ParseClasses(strings.Join(items, ","))
	if err != nil {
		return nil, err
	}
	// ParseClasses skips empty items: match the ports by position among
	// the non-empty ones.
	j := 0
	for i, it := range items {
		if strings.TrimSpace(it) == "" {
			continue
		}
		cs[j].Port = ports[i]
		j++
	}
	return cs, nil
}

func parseECN(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0", "not-ect":
		return 0, nil
	case "1", "ect1", "ect(1)":
		return 1, nil
	case "2", "ect0", "ect(0)":
		return 2, nil
	case "3", "ce":
		return 3, nil
	}
	return 0, fmt.Errorf("--ecn: want 0-3, not-ect, ect1, ect0 or ce, got %q", s)
}

func runUDP(ctx context.Context, uf *udpFlags, changed func(string) bool, stdout io.Writer) error {
	if err := uf.build(changed); err != nil {
		return usageErr(err)
	}
	if uf.opts.Server == "" && uf.opts.Reflector == "" {
		addr, stop, err := startEmbedded(ctx)
		if err != nil {
			return err
		}
		defer stop()
		uf.opts.Server = "http://" + addr
		uf.opts.Embedded = true
		fmt.Fprintf(os.Stderr, "sonde: no server given: testing against an embedded reflector on %s (loopback: this measures the host, not a network)\n", addr)
	}
	if uf.out.raw != "" {
		w, closeRaw, err := openOutput(uf.out.raw, stdout)
		if err != nil {
			return err
		}
		defer closeRaw()
		uf.opts.Raw = w
	}
	res, runErr := udptest.Run(ctx, uf.opts)
	if res == nil {
		return runErr
	}
	var errs []error
	if o := uf.out.json; o != "" {
		errs = append(errs, writeOutput("--json", o, stdout, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		}))
	}
	if o := uf.out.html; o != "" {
		errs = append(errs, writeOutput("--html", o, stdout, func(w io.Writer) error { return writeUDPHTML(w, res) }))
	}
	// An output that could not be written: the summary is written even
	// with --quiet, so the measurement is not lost.
	if w := uf.out.textTo(stdout, os.Stderr, errors.Join(errs...) != nil); w != nil {
		errs = append(errs, writeUDPText(w, res))
	}
	return errors.Join(runErr, errors.Join(errs...))
}

func openOutput(name string, stdout io.Writer) (io.Writer, func(), error) {
	if name == "-" {
		return stdout, func() {}, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", name, err)
	}
	return f, func() { f.Close() }, nil
}

// writeUDPText prints the summary of a UDP run.
func writeUDPText(w io.Writer, res *model.UDPResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sonde udp %s  %s  interval %s  %d bytes  %.1f s\n", res.Config.Server, res.Start.Format(time.RFC3339),
		time.Duration(res.Config.IntervalUs*1e3), res.Config.PacketBytes, res.Config.DurationS)
	for _, f := range res.Flows {
		fmt.Fprintf(&b, "\nflow %s  DSCP %d ECN %d  reflector %s  sent %d  replies %d\n", f.Name, f.DSCP, f.ECN, f.ReflectorAddr, f.Sent, f.Replies)
		if f.ReflectorFormat != "" {
			fmt.Fprintf(&b, "  reflector       %s\n", formatLine(f.ReflectorFormat))
		}
		for _, u := range f.UnparsedReplies {
			fmt.Fprintf(&b, "  unparsed        %s\n", unparsedLine(u))
		}
		if f.RTTMs.N > 0 {
			fmt.Fprintf(&b, "  RTT             %s\n", statsLine(f.RTTMs, "ms"))
		}
		switch {
		case f.Clock.SharedClock:
			b.WriteString("  clock           shared with the reflector: one-way delays measured\n")
		case f.Clock.Samples > 0:
			fmt.Fprintf(&b, "  clock           offset %+.3f ms ± %.3f ms, drift %+.1f ppm: one-way delays are estimates\n",
				f.Clock.OffsetMs, f.Clock.UncertaintyMs, f.Clock.DriftPPM)
		}
		for _, d := range []model.UDPDirectionStats{f.Forward, f.Backward} {
			fmt.Fprintf(&b, "  %-8s OWD     %s\n", d.Direction, statsLine(d.OWDMs, "ms"))
			fmt.Fprintf(&b, "           jitter  %.3f ms (RFC 3550)  |IPDV| p50 %.3f p99 %.3f ms  PDV p99 %.3f ms\n",
				d.JitterMs, d.IPDVAbsMs.P50, d.IPDVAbsMs.P99, d.PDVMs.P99)
			known := ""
			if !d.Known {
				known = " (round trip: reflector report missing)"
			}
			fmt.Fprintf(&b, "           loss    %d of %d (%.2f%%)%s  late %d  duplicates %d  reordered %.2f%% (max extent %d)\n",
				d.Lost, d.Sent, d.LossPct, known, d.Late, d.Duplicates, d.Reordering.RatioPct, d.Reordering.MaxExtent)
			if lp := d.LossPattern; lp.Periods > 0 {
				fmt.Fprintf(&b, "           loss periods %d, length mean %.2f max %.0f, gap mean %.1f packets\n",
					lp.Periods, lp.PeriodLength.Mean, lp.PeriodLength.Max, lp.InterPeriodLength.Mean)
			}
		}
		if m := f.Marks; m != nil {
			fmt.Fprintf(&b, "  marks           sent DSCP %d ECN %d; %s; %s\n", m.SentDSCP, m.SentECN,
				markLine("at reflector", m.AtReflectorDSCP, m.AtReflectorECN, m.ForwardOK),
				markLine("at client", m.AtClientDSCP, m.AtClientECN, m.BackwardOK))
		}
		if f.ScheduleErrorUs.N > 0 {
			fmt.Fprintf(&b, "  send schedule   error p50 %.1f µs, p99 %.1f µs, max %.1f µs\n", f.ScheduleErrorUs.P50, f.ScheduleErrorUs.P99, f.ScheduleErrorUs.Max)
		}
		if v := f.Voice; v != nil {
			fmt.Fprintf(&b, "  voice           MOS %.2f (R %.1f; %s, delay %.1f ms, loss %.2f%%)\n", v.MOS, v.R, v.Codec, v.DelayMs, v.LossPct)
		}
		for _, e := range f.Errors {
			fmt.Fprintf(&b, "  error: %s\n", e)
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatLine explains a flow's reflector format.
func formatLine(format string) string {
	switch format {
	case "stamp":
		return "speaks STAMP (RFC 8762)"
	case "twamp-light":
		return "speaks TWAMP-Light (RFC 5357 §4.2.1): no TLVs, so the marks it received are unknown"
	case "stamp-or-twamp-light":
		return "speaks STAMP or TWAMP-Light (44-byte replies read the same in both)"
	case "mixed":
		return "answered in both STAMP and TWAMP-Light formats"
	}
	return format
}

// unparsedLine says what a kind of unreadable reply was.
func unparsedLine(u model.UnparsedReplies) string {
	if u.Bytes == 0 {
		return fmt.Sprintf("%d more replies of other sizes, not STAMP or TWAMP-Light", u.Count)
	}
	return fmt.Sprintf("%d replies of %d bytes, not STAMP or TWAMP-Light (%s)", u.Count, u.Bytes, u.Reason)
}

func statsLine(s model.Stats, unit string) string {
	if s.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("min %.3f  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f %s  (n %d)", s.Min, s.P50, s.P90, s.P99, s.Max, unit, s.N)
}

func markLine(where string, dscp, ecn *int, ok *bool) string {
	if dscp == nil {
		return where + " unknown"
	}
	verdict := "unchanged"
	if ok != nil && !*ok {
		verdict = "CHANGED"
	}
	return fmt.Sprintf("%s DSCP %d ECN %d %s", where, *dscp, *ecn, verdict)
}

var udpHTML = template.Must(template.New("udp").Funcs(template.FuncMap{
	"bars": histBars,
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>sonde udp {{.Config.Server}}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}
td,th{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:right}th{text-align:left}</style></head><body>
<h1>sonde udp</h1><p>{{.Config.Server}} · {{.Start}} · interval {{.Config.IntervalUs}} µs · {{.Config.PacketBytes}} bytes · {{.Config.DurationS}} s</p>
{{range .Flows}}<h2>{{.Name}} (DSCP {{.DSCP}}, ECN {{.ECN}})</h2>
<p>sent {{.Sent}}, replies {{.Replies}}{{if .ReflectorFormat}}, reflector format {{.ReflectorFormat}}{{end}}{{range .UnparsedReplies}}; {{.Count}} unparsed replies of {{.Bytes}} bytes ({{.Reason}}){{end}}{{if .Clock.SharedClock}}; shared clock: one-way delays measured{{else}}; clock offset {{printf "%.3f" .Clock.OffsetMs}} ± {{printf "%.3f" .Clock.UncertaintyMs}} ms: one-way delays estimated{{end}}</p>
<table><tr><th></th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>n</th></tr>
<tr><th>RTT ms</th><td>{{printf "%.3f" .RTTMs.Min}}</td><td>{{printf "%.3f" .RTTMs.P50}}</td><td>{{printf "%.3f" .RTTMs.P90}}</td><td>{{printf "%.3f" .RTTMs.P99}}</td><td>{{printf "%.3f" .RTTMs.Max}}</td><td>{{.RTTMs.N}}</td></tr>
{{with .Forward}}<tr><th>forward OWD ms</th><td>{{printf "%.3f" .OWDMs.Min}}</td><td>{{printf "%.3f" .OWDMs.P50}}</td><td>{{printf "%.3f" .OWDMs.P90}}</td><td>{{printf "%.3f" .OWDMs.P99}}</td><td>{{printf "%.3f" .OWDMs.Max}}</td><td>{{.OWDMs.N}}</td></tr>{{end}}
{{with .Backward}}<tr><th>backward OWD ms</th><td>{{printf "%.3f" .OWDMs.Min}}</td><td>{{printf "%.3f" .OWDMs.P50}}</td><td>{{printf "%.3f" .OWDMs.P90}}</td><td>{{printf "%.3f" .OWDMs.P99}}</td><td>{{printf "%.3f" .OWDMs.Max}}</td><td>{{.OWDMs.N}}</td></tr>{{end}}
</table>
<table><tr><th>direction</th><th>loss</th><th>late</th><th>dup</th><th>jitter ms</th><th>reordered %</th><th>loss periods</th></tr>
<tr><th>forward</th><td>{{.Forward.Lost}}/{{.Forward.Sent}}</td><td>{{.Forward.Late}}</td><td>{{.Forward.Duplicates}}</td><td>{{printf "%.3f" .Forward.JitterMs}}</td><td>{{printf "%.2f" .Forward.Reordering.RatioPct}}</td><td>{{.Forward.LossPattern.Periods}}</td></tr>
<tr><th>backward</th><td>{{.Backward.Lost}}/{{.Backward.Sent}}</td><td>{{.Backward.Late}}</td><td>{{.Backward.Duplicates}}</td><td>{{printf "%.3f" .Backward.JitterMs}}</td><td>{{printf "%.2f" .Backward.Reordering.RatioPct}}</td><td>{{.Backward.LossPattern.Periods}}</td></tr>
</table>
<h3>RTT histogram (ms)</h3>{{bars .RTTHistogram}}
{{if .Voice}}<p>Voice: MOS {{printf "%.2f" .Voice.MOS}} (R {{printf "%.1f" .Voice.R}}) — {{.Voice.Assumption}}</p>{{end}}
{{range .Errors}}<p>error: {{.}}</p>{{end}}
{{end}}{{range .Errors}}<p>error: {{.}}</p>{{end}}{{range .Notes}}<p>note: {{.}}</p>{{end}}
</body></html>
`))

// histBars draws a histogram as an inline SVG bar chart.
func histBars(h []model.HistBin) template.HTML {
	if len(h) == 0 {
		return ""
	}
	peak := 1
	for _, b := range h {
		peak = max(peak, b.Count)
	}
	const w, ht = 600, 120
	bw := float64(w) / float64(len(h))
	var s strings.Builder
	fmt.Fprintf(&s, `<svg width="%d" height="%d" role="img">`, w, ht+16)
	for i, b := range h {
		bh := float64(ht) * float64(b.Count) / float64(peak)
		fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4a7"><title>%.3f–%.3f: %d</title></rect>`,
			float64(i)*bw, float64(ht)-bh, bw*0.9, bh, b.Lo, b.Hi, b.Count)
	}
	fmt.Fprintf(&s, `<text x="0" y="%d" font-size="11">%.3f</text><text x="%d" y="%d" font-size="11" text-anchor="end">%.3f</text></svg>`,
		ht+14, h[0].Lo, w, ht+14, h[len(h)-1].Hi)
	return template.HTML(s.String())
}

func writeUDPHTML(w io.Writer, res *model.UDPResult) error {
	return udpHTML.Execute(w, res)
}
