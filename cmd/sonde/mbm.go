//go:build !monitoronly

package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/mbm/tcprun"
	"github.com/sonde-project/sonde/internal/mbm/udprun"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/units"
)

const mbmHelp = `Model Based Metrics (RFC 8337, docs/mbm.md). From a target rate, RTT and MTU,
--plan computes the model without sending anything: the target window W, the
run length R (RFC 8337's reference 3W² and the other models with their ratio
to it), the pass and fail loss rates p0 = 1/R and p1 = 4/R, the SPRT's lines,
the packets a PASS and a FAIL are expected to take, and the truncation point
after which an undecided test is INCONCLUSIVE. A target with R ≤ 4 is refused.

sonde mbm SERVER --rate R --rtt T runs RFC 8337's tests against a sonde
server. --mode udp (the default): an open-loop UDP sender, every packet's
fate fed to the SPRT, which stops the test as soon as it decides. --mode
tcp: a TCP upload counted from the sender's TCP_INFO (8.1.1 paced, 8.1.2
with the server's receive window bounded to W packets before the handshake,
8.4 and 8.5.1; docs/mbm.md). --mode auto: TCP for those four, UDP for
the rest, one transport after the other; each test names the transport
that measured it. The UDP tests: --tests 8.1.1 (paced full
data rate, the default), 8.1.2 (full data windowed rate: at most W packets in
flight), 8.1.3 (background packet transfer statistics: 8.1.1 at a tenth of
the rate), 8.2.1, 8.2.2, 8.2.3, 8.2.4 (the standing queue tests: congestion
avoidance, bufferbloat, non excessive loss, duplex self-interference, from
one window scan), 8.3.1 (full window slowstart), 8.3.2 (slowstart AQM),
8.4 (sender rate bursts, --burst packets), 8.5.1 (sustained full-rate
bursts, --derate), or all. Each test gives PASS, FAIL (exit 5), INCONCLUSIVE or ERROR with its
reason; a sender that could not produce a pattern gives ERROR or
INCONCLUSIVE, never a verdict on the path.

sonde mbm --lab PROFILE --rate R --rtt T runs them across an emulated path
(root, no SERVER; docs/mbm.md, "In the lab"): the result records the
profile and its configured path.

sonde mbm compose composes saved per-subpath results into a path verdict;
sonde mbm summary aggregates many saved results and compositions.`

// mbmFlags are the inputs of the model and of a run.
type mbmFlags struct {
	plan               bool
	rate, model        string
	rtt                time.Duration
	mtu, header        int
	alpha, beta, trunc float64
	budget             float64
	floor              int64
	out                outputs

	// The run mode.
	mode, tests, subpath, token string
	insecure, ecn               bool
	derate, minRate             float64
	burst                       int64
	burstSet                    bool

	// The lab (mbm_lab*.go): --lab, and the hidden --ground-truth it
	// passes to the client it re-runs.
	lab, truthFile string
}

// newMBMCmd is `sonde mbm`: the model and plan of RFC 8337's tests, a run
// of them against a server, and the composition of subpath results.
func newMBMCmd() *cobra.Command {
	var o mbmFlags
	cmd := &cobra.Command{
		Use:   "mbm [SERVER] --rate RATE --rtt DURATION",
		Short: "Model Based Metrics (RFC 8337): run the tests against a server, plan a target, compose subpath results",
		Long:  mbmHelp,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.lab != "" {
				return runMBMLab(cmd.Context(), args, &o, cmd.Flags().Changed("rtt"))
			}
			if o.plan {
				if len(args) > 0 {
					return usagef("--plan sends nothing: give no SERVER")
				}
				return runMBMPlan(cmd.OutOrStdout(), &o, cmd.Flags().Changed("rtt"))
			}
			if len(args) == 0 {
				return usagef("sonde mbm: want SERVER (a run), --plan (the model, nothing sent), or the compose or summary command")
			}
			o.burstSet = cmd.Flags().Changed("burst")
			return runMBM(cmd.Context(), cmd.OutOrStdout(), args[0], &o, cmd.Flags().Changed("rtt"))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.plan, "plan", false, "print the model and the SPRT plan; nothing is sent")
	f.StringVar(&o.rate, "rate", "", "target rate `RATE` in bit/s (e.g. 10M)")
	f.DurationVar(&o.rtt, "rtt", 0, "target round-trip time (e.g. 50ms)")
	f.IntVar(&o.mtu, "mtu", 1500, "target MTU in bytes (the UDP mode sends datagrams of MTU − 28 bytes)")
	f.IntVar(&o.header, "header-overhead", mbm.DefaultHeaderOverhead, "bytes of each packet that are not payload (52: IPv4 + TCP + timestamps; 72 for IPv6)")
	f.StringVar(&o.model, "model", mbm.ModelReference, "run-length model that sets p0: reference (3W²), mathis, mathis-delack, cubic")
	f.Float64Var(&o.alpha, "alpha", mbm.DefaultAlpha, "probability of a false FAIL at p0 (1e-6 to 0.25)")
	f.Float64Var(&o.beta, "beta", mbm.DefaultBeta, "probability of a false PASS at p1 (1e-6 to 0.25)")
	f.Int64Var(&o.floor, "floor", 0, "no FAIL before this many packets (0: none), against early false FAILs on bursty loss")
	f.Float64Var(&o.trunc, "trunc-factor", mbm.DefaultTruncFactor, "truncation point as a multiple of the largest expected packets to a decision (1 to 100)")
	f.Float64Var(&o.budget, "budget", 0, "this subpath's loss budget b, used as p0 (0: the whole path's 1/R)")
	f.StringVar(&o.mode, "mode", "udp", "transport of a run: udp (an open-loop UDP sender, every RFC 8337 pattern), tcp (a TCP upload: 8.1.1, 8.1.2, 8.4, 8.5.1) or auto (TCP for those, UDP for the rest; each test says which)")
	f.StringVar(&o.tests, "tests", udprun.TestPaced, "tests of a run, comma-separated RFC 8337 sections (udp: 8.1.1, 8.1.2, 8.1.3, 8.2.1-8.2.4, 8.3.1, 8.3.2, 8.4, 8.5.1; tcp: 8.1.1, 8.1.2, 8.4, 8.5.1) or all")
	f.Float64Var(&o.derate, "derate", 1, "8.5.1's derating: bursts of W·derate packets every RTT·derate (more than 0, at most 1)")
	f.Int64Var(&o.burst, "burst", udprun.DefaultBurstPackets, "8.4's burst size in packets, sent back to back (1 to 10000; tcp's default: one 64 KiB TSO segment)")
	f.Float64Var(&o.minRate, "min-rate", udprun.DefaultMinRateFraction, "precondition: the sustained rate must reach this share of the target (more than 0, at most 1)")
	f.BoolVar(&o.ecn, "ecn", true, "send ECT(0), so that an AQM marks CE instead of dropping (marks = losses + CE)")
	f.StringVar(&o.subpath, "subpath", "", "name of the part of the path measured, for sonde mbm compose (e.g. access)")
	f.StringVar(&o.token, "token", "", "bearer token for a private server")
	f.BoolVarP(&o.insecure, "insecure", "k", false, "accept any TLS certificate")
	o.out.register(cmd, "the result (schema sonde.mbm/v1)", false)
	f.StringVar(&o.out.csv, "csv", "", "write one row per test as CSV to `FILE`, - for stdout (no text summary then)")
	f.StringVar(&o.lab, "lab", "", "run across an emulated path: build lab profile `PROFILE` (sonde lab profiles, or a scenario .json file), serve in its server namespace, run the tests from its client namespace (client → server, the direction measured), and record the profile and its configured path in the result; needs root; no SERVER")
	f.StringVar(&o.truthFile, "ground-truth", "", "JSON file with the path's configured properties (set by --lab)")
	_ = f.MarkHidden("ground-truth")
	cmd.AddCommand(newMBMComposeCmd(), newMBMSummaryCmd())
	return cmd
}

// inputs checks the model's flags and turns them into the model's inputs.
func (o *mbmFlags) inputs(rttSet bool) (mbm.Inputs, error) {
	if o.rate == "" || !rttSet {
		if o.plan {
			return mbm.Inputs{}, usagef("--plan needs --rate and --rtt")
		}
		return mbm.Inputs{}, usagef("a run needs --rate and --rtt")
	}
	rate, err := units.ParseRate(o.rate)
	if err != nil {
		return mbm.Inputs{}, usagef("--rate: %w", err)
	}
	if err := o.out.check(); err != nil {
		return mbm.Inputs{}, err
	}
	if o.trunc == 0 {
		return mbm.Inputs{}, usagef("--trunc-factor: want 1 to 100, got 0")
	}
	return mbm.Inputs{
		Target:       mbm.Target{RateBps: rate, RTT: o.rtt, MTU: o.mtu, HeaderOverhead: o.header},
		Model:        o.model,
		Alpha:        o.alpha,
		Beta:         o.beta,
		FloorPackets: o.floor,
		TruncFactor:  o.trunc,
		Budget:       o.budget,
	}, nil
}

func runMBMPlan(stdout io.Writer, o *mbmFlags, rttSet bool) error {
	if o.out.csv != "" {
		return usagef("--csv: a plan has no tests; use --json or --html")
	}
	in, err := o.inputs(rttSet)
	if err != nil {
		return err
	}
	plan, err := mbm.NewPlan(in)
	if err != nil {
		return usageErr(err)
	}
	res := mbmResult(plan)
	res.Plan = true
	res.Subpath = o.subpath
	var errs []error
	if o.out.json != "" {
		errs = append(errs, writeOutput("--json", o.out.json, stdout, func(w io.Writer) error { return writeMBMJSON(w, res) }))
	}
	if o.out.html != "" {
		errs = append(errs, writeOutput("--html", o.out.html, stdout, func(w io.Writer) error { return report.WriteMBMHTML(w, &res) }))
	}
	failed := errors.Join(errs...) != nil
	if w := o.out.textTo(stdout, os.Stderr, failed); w != nil {
		errs = append(errs, writeMBMPlanText(w, plan)) // nothing is lost
	}
	return errors.Join(errs...)
}

// runMBM runs the tests against server and writes the result; exit 5 if a
// test FAILed, 1 if one could not run (what was measured is written).
func runMBM(ctx context.Context, stdout io.Writer, server string, o *mbmFlags, rttSet bool) error {
	in, err := o.inputs(rttSet)
	if err != nil {
		return err
	}
	if o.mode != "udp" && o.mode != "tcp" && o.mode != "auto" {
		return usagef("--mode: want udp, tcp or auto, got %q", o.mode)
	}
	tests, err := mbmTests(o.tests, o.mode)
	if err != nil {
		return err
	}
	switch {
	case !(o.derate > 0 && o.derate <= 1):
		return usagef("--derate: want more than 0, at most 1, got %g", o.derate)
	case !(o.minRate > 0 && o.minRate <= 1):
		return usagef("--min-rate: want more than 0, at most 1, got %g", o.minRate)
	case o.burst < 1 || o.burst > 10000:
		return usagef("--burst: want 1 to 10000 packets, got %d", o.burst)
	case len(o.subpath) > 64:
		return usagef("--subpath: at most 64 bytes")
	}
	plan, err := mbm.NewPlan(in)
	if err != nil {
		return usageErr(err)
	}
	truth, err := o.labTruth()
	if err != nil {
		return usageErr(err)
	}
	progress := func(id string) {
		name, _ := udprun.TestName(id)
		fmt.Fprintf(os.Stderr, "sonde mbm: %s %s at %s…\n", id, name, units.FormatRate(plan.RateBps))
	}
	// The tests each transport runs: --mode auto gives TCP the tests it
	// can produce on Linux and UDP the rest.
	var tcpTests, udpTests []string
	for _, id := range tests {
		if o.mode == "tcp" || o.mode == "auto" && slices.Contains(tcprun.Tests, id) {
			tcpTests = append(tcpTests, id)
		} else {
			udpTests = append(udpTests, id)
		}
	}
	// One runner per transport, each Run(ctx, Config) ([]model.MBMTest, error).
	type runner func(context.Context) ([]model.MBMTest, error)
	var runners []runner
	fillEnv := func(env *model.MBMEnv) { env.Kernel = kernelRelease() }
	if len(tcpTests) > 0 {
		cfg := tcprun.Config{Plan: plan, Tests: tcpTests, Derate: o.derate, Precondition: o.minRate}
		if o.burstSet {
			cfg.SenderBurst = o.burst // else tcprun's: one 64 KiB TSO segment
		}
		var tlsCfg *tls.Config
		if o.insecure {
			tlsCfg = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --insecure asks for it
		}
		runners = append(runners, func(ctx context.Context) ([]model.MBMTest, error) {
			for _, id := range tcpTests {
				progress(id)
			}
			sess, err := tcprun.Dial(ctx, tcprun.Server{URL: server, Token: o.token, TLS: tlsCfg,
				Software: "sonde/" + version, MSS: plan.MTU - plan.HeaderOverhead})
			if err != nil {
				return nil, err
			}
			defer sess.Close()
			cfg.Streams = sess
			ctx, cancel := context.WithDeadline(ctx, sess.Deadline())
			defer cancel()
			return tcprun.Run(ctx, cfg)
		})
		fillEnv = func(env *model.MBMEnv) { tcprun.FillEnv(env, cfg) }
	}
	if len(udpTests) > 0 {
		cfg := udprun.Config{Server: server, Token: o.token, Software: "sonde/" + version, Insecure: o.insecure, Plan: plan,
			Tests: udpTests, Derate: o.derate, BurstPackets: o.burst, MinRateFraction: o.minRate, ECN: o.ecn, Progress: progress}
		if err := udprun.Validate(cfg); err != nil {
			return usageErr(err)
		}
		runners = append(runners, func(ctx context.Context) ([]model.MBMTest, error) { return udprun.Run(ctx, cfg) })
	}
	// The transports run one after the other (together they would load
	// the path for each other); a transport that fails does not stop the
	// other, and the tests are reported in the order asked for.
	runTests := func(ctx context.Context) ([]model.MBMTest, error) {
		var ran []model.MBMTest
		var errs []error
		for _, run := range runners {
			if ctx.Err() != nil {
				errs = append(errs, ctx.Err())
				break
			}
			got, err := run(ctx)
			ran = append(ran, got...)
			errs = append(errs, err)
		}
		slices.SortStableFunc(ran, func(a, b model.MBMTest) int {
			return slices.Index(tests, a.ID) - slices.Index(tests, b.ID)
		})
		return ran, errors.Join(errs...)
	}
	res := mbmResult(plan)
	res.Subpath = o.subpath
	res.Start = time.Now().UTC()
	ran, runErr := runTests(ctx)
	res.End = time.Now().UTC()
	if runErr != nil && len(ran) == 0 {
		return runErr // refused, unreachable, no MBM: nothing measured
	}
	res.Tests = ran
	res.Env = &model.MBMEnv{}
	fillEnv(res.Env)
	recordLab(&res, truth)
	if runErr != nil {
		res.Errors = append(res.Errors, runErr.Error())
	}
	var errs []error
	if o.out.json != "" {
		errs = append(errs, writeOutput("--json", o.out.json, stdout, func(w io.Writer) error { return writeMBMJSON(w, res) }))
	}
	if o.out.html != "" {
		errs = append(errs, writeOutput("--html", o.out.html, stdout, func(w io.Writer) error { return report.WriteMBMHTML(w, &res) }))
	}
	if o.out.csv != "" {
		errs = append(errs, writeOutput("--csv", o.out.csv, stdout, func(w io.Writer) error { return report.WriteMBMCSV(w, &res) }))
	}
	if w := o.out.textTo(stdout, os.Stderr, errors.Join(errs...) != nil); w != nil {
		errs = append(errs, report.WriteMBMText(w, &res))
	}
	if err := errors.Join(runErr, errors.Join(errs...)); err != nil {
		return err
	}
	for _, t := range res.Tests {
		if t.Verdict == "ERROR" {
			return &exitError{code: exitFailure, err: fmt.Errorf("test %s: %s", t.ID, t.Reason)}
		}
	}
	for _, t := range res.Tests {
		if t.Verdict == mbm.Fail.String() {
			return &exitError{code: exitVerdict, err: errSilent}
		}
	}
	return nil
}

// mbmTests reads --tests: "all" or a comma-separated list of sections,
// each one the mode runs.
func mbmTests(s, mode string) ([]string, error) {
	known := tcprun.Tests
	if mode != "tcp" { // udp, and auto: TCP where it can, UDP the rest
		known = nil
		for _, t := range udprun.Tests {
			known = append(known, t.ID)
		}
	}
	if strings.TrimSpace(s) == "all" {
		return known, nil
	}
	var ids []string
	seen := map[string]bool{}
	for _, id := range strings.Split(s, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if !slices.Contains(known, id) {
			return nil, usagef("--tests: %q is not a test of the %s mode (%s or all)", clipText(id), mode, strings.Join(known, ", "))
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, usagef("--tests: no test given")
	}
	return ids, nil
}

// kernelRelease names the sending host's kernel, for the result's record.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// writeMBMJSON writes an MBM document indented, like every saved result.
func writeMBMJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// mbmResult is the schema's record of a plan: every parameter.
func mbmResult(p mbm.Plan) model.MBMResult {
	r := model.MBMResult{
		Schema: model.MBMSchemaVersion,
		Target: model.MBMTarget{RateBps: p.RateBps, RTTMs: float64(p.RTT) / 1e6, MTUBytes: p.MTU, HeaderOverheadBytes: p.HeaderOverhead},
		Model: model.MBMModel{WindowPackets: p.W, RunLengthModel: p.Model, RunLengthPackets: p.R,
			P0: p.P0, P1: p.P1, LossBudget: p.Budget, PathP0: 1 / p.R},
		SPRT: model.MBMSPRT{Alpha: p.Alpha, Beta: p.Beta, K: p.Lines.K, S: p.Lines.S, H1: p.Lines.H1, H2: p.Lines.H2,
			FloorPackets: p.FloorPackets, TruncFactor: p.TruncFactor, MaxPackets: p.MaxPackets,
			ASNAtP0: p.ASNAtP0, ASNAtP1: p.ASNAtP1, MaxASN: p.MaxASN, CheapestPass: p.CheapestPass, CheapestFail: p.CheapestFail},
	}
	for _, m := range p.Models {
		r.Model.Models = append(r.Model.Models, model.MBMRunLength{Model: m.Model, Packets: m.Packets, RatioTo3W2: m.Ratio, About: m.About})
	}
	return r
}

func writeMBMPlanText(w io.Writer, p mbm.Plan) error {
	var b strings.Builder
	payload := p.MTU - p.HeaderOverhead
	fmt.Fprintf(&b, "MBM plan (RFC 8337): nothing sent\n")
	fmt.Fprintf(&b, "target        %s, RTT %s, MTU %d B (%d B headers, %d B payload)\n", units.FormatRate(p.RateBps), p.RTT, p.MTU, p.HeaderOverhead, payload)
	fmt.Fprintf(&b, "window W      %d packets = ceil(rate × RTT / (8 × %d))\n", p.W, payload)
	fmt.Fprintf(&b, "run length R  %.6g packets (model %s)\n", p.R, p.Model)
	for _, m := range p.Models {
		fmt.Fprintf(&b, "  %-14s %12.6g packets  %.3f × 3W²\n", m.Model, m.Packets, m.Ratio)
	}
	if p.Budget != 0 {
		fmt.Fprintf(&b, "loss budget   b = %.4g of the path's 1/R = %.4g: p0 = b\n", p.Budget, 1/p.R)
	}
	fmt.Fprintf(&b, "p0            %.4g (%.4g %%): PASS threshold\n", p.P0, 100*p.P0)
	fmt.Fprintf(&b, "p1 = 4·p0     %.4g (%.4g %%): FAIL threshold\n", p.P1, 100*p.P1)
	l := p.Lines
	fmt.Fprintf(&b, "SPRT          α %g, β %g, per packet, marks m = losses + ECN CE in n packets\n", p.Alpha, p.Beta)
	fmt.Fprintf(&b, "              k %.6g, s %.6g, h1 %.6g, h2 %.6g\n", l.K, l.S, l.H1, l.H2)
	fmt.Fprintf(&b, "              PASS if m ≤ −%.6g + %.6g·n; FAIL if m ≥ %.6g + %.6g·n\n", l.H1, l.S, l.H2, l.S)
	fmt.Fprintf(&b, "to PASS       at least %d packets, none marked (%.3f·R, %s at the target rate); Wald's average at p0: %.0f\n",
		p.CheapestPass, float64(p.CheapestPass)/p.R, p.Duration(float64(p.CheapestPass)).Round(time.Millisecond), p.ASNAtP0)
	fmt.Fprintf(&b, "to FAIL       at least %d packets, all marked; Wald's average at p1: %.0f\n", p.CheapestFail, p.ASNAtP1)
	fmt.Fprintf(&b, "truncation    %d packets (%g × the worst average %.0f, at p = s; %s): INCONCLUSIVE if undecided\n",
		p.MaxPackets, p.TruncFactor, p.MaxASN, p.Duration(float64(p.MaxPackets)).Round(time.Millisecond))
	if p.FloorPackets > 0 {
		fmt.Fprintf(&b, "floor         no FAIL before %d packets\n", p.FloorPackets)
	} else {
		b.WriteString("floor         none\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxMBMFile bounds a saved result read by compose.
const maxMBMFile = 16 << 20

func newMBMComposeCmd() *cobra.Command {
	var jsonOut, e2ePath string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "compose RESULT.json... [--path E2E.json]",
		Short: "Compose saved per-subpath MBM results (sonde.mbm/v1) into a path verdict",
		Long: `Compose saved results of the subpaths of one path (schema sonde.mbm/v1, all for
the same target) into the path's verdict per test: the composed loss
1 − Π(1 − p_i), and PASS only if every subpath PASSed against a loss budget
b_i with Π(1 − b_i) ≥ 1 − p0. A subpath that FAILed its budget makes the path
FAIL (exit 5); one that did not decide, or budgets that do not fit the path's
p0, make it INCONCLUSIVE.

--path names the end-to-end result measured on the same path (same target):
each test then records its measured loss beside the composed one, which
sonde mbm summary draws as a Q-Q plot.`,
		Args: cobra.RangeArgs(1, mbm.MaxSubpaths),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMBMCompose(cmd.OutOrStdout(), args, e2ePath, jsonOut, quiet)
		},
	}
	cmd.Flags().StringVar(&jsonOut, "json", "", "write the composition as JSON (schema sonde.mbm-compose/v1) to `FILE`, - for stdout (no text then)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no text summary on stdout (with --json)")
	cmd.Flags().StringVar(&e2ePath, "path", "", "the end-to-end result (sonde.mbm/v1) measured on the same path: its loss is recorded beside the composed one")
	return cmd
}

// loadMBM reads one saved result, bounded in size.
func loadMBM(path string) (model.MBMResult, error) {
	var r model.MBMResult
	b, err := readBounded(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: not a saved MBM result: %w", path, err)
	}
	return r, checkMBM(path, r)
}

// checkMBM refuses what is not a measured result: another schema, a
// plan, no tests or too many.
func checkMBM(path string, r model.MBMResult) error {
	switch {
	case r.Schema != model.MBMSchemaVersion:
		return fmt.Errorf("%s: schema %q, want %s", path, clipText(r.Schema), model.MBMSchemaVersion)
	case r.Plan:
		return fmt.Errorf("%s: a plan, not a result: nothing was measured", path)
	case len(r.Tests) == 0:
		return fmt.Errorf("%s: no tests", path)
	case len(r.Tests) > 64:
		return fmt.Errorf("%s: %d tests, more than 64", path, len(r.Tests))
	}
	return nil
}

func clipText(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func runMBMCompose(stdout io.Writer, paths []string, e2ePath, jsonOut string, quiet bool) error {
	if quiet && jsonOut == "" {
		return usagef("--quiet without --json would discard the composition")
	}
	if err := checkOutput("--json", jsonOut); err != nil {
		return err
	}
	var rs []model.MBMResult
	for _, p := range paths {
		r, err := loadMBM(p)
		if err != nil {
			return usageErr(err)
		}
		if len(rs) > 0 && (r.Target != rs[0].Target || r.Model.PathP0 != rs[0].Model.PathP0) {
			return usagef("%s: target or path p0 differs from %s: subpaths compose only for one target", p, paths[0])
		}
		rs = append(rs, r)
	}
	c, err := composeMBM(paths, rs)
	if err != nil {
		return usageErr(err)
	}
	if e2ePath != "" {
		e2e, err := loadMBM(e2ePath)
		if err != nil {
			return usagef("--path: %w", err)
		}
		if e2e.Target != rs[0].Target || e2e.Model.PathP0 != rs[0].Model.PathP0 {
			return usagef("--path %s: target or path p0 differs from %s: not the same path's target", e2ePath, paths[0])
		}
		addMeasured(&c, e2ePath, e2e)
	}
	if jsonOut != "" {
		if err := writeOutput("--json", jsonOut, stdout, func(w io.Writer) error { return writeMBMJSON(w, c) }); err != nil {
			writeMBMComposeText(os.Stderr, c)
			return err
		}
	}
	if jsonOut != "-" && !quiet {
		if err := writeMBMComposeText(stdout, c); err != nil {
			return err
		}
	}
	for _, t := range c.Tests {
		if t.Verdict == mbm.Fail.String() {
			return &exitError{code: exitVerdict, err: errSilent}
		}
	}
	return nil
}

// composeMBM composes every test the first result holds; a test missing
// from another subpath is composed as INCONCLUSIVE.
func composeMBM(paths []string, rs []model.MBMResult) (model.MBMComposition, error) {
	c := model.MBMComposition{Schema: model.MBMComposeSchemaVersion, Target: rs[0].Target, PathP0: rs[0].Model.PathP0}
	for i, r := range rs {
		name := paths[i]
		if r.Subpath != "" {
			name += " (" + r.Subpath + ")"
		}
		c.Inputs = append(c.Inputs, name)
	}
	for _, t0 := range rs[0].Tests {
		var subs []mbm.Subpath
		var budgets []float64
		missing := ""
		for i, r := range rs {
			t, ok := findMBMTest(r, t0.ID)
			if !ok {
				missing = paths[i]
				break
			}
			subs = append(subs, mbm.Subpath{Decision: parseVerdict(t.Verdict), Budget: r.Model.P0, Packets: t.Packets, Marks: t.Marks})
			budgets = append(budgets, r.Model.P0)
		}
		if missing != "" {
			c.Tests = append(c.Tests, model.MBMComposedTest{ID: t0.ID, Verdict: mbm.Inconclusive.String(), Reason: "no result for this test in " + missing})
			continue
		}
		comp, err := mbm.Compose(c.PathP0, subs)
		if err != nil {
			return c, fmt.Errorf("test %s: %w", clipText(t0.ID), err)
		}
		c.Tests = append(c.Tests, model.MBMComposedTest{ID: t0.ID, Verdict: comp.Decision.String(), Reason: comp.Reason,
			Loss: comp.Loss, LossLow: comp.LossLow, LossHigh: comp.LossHigh, Budgets: budgets, BudgetsFit: mbm.BudgetsFit(c.PathP0, budgets),
			SubpathPackets: subpathPackets(subs)})
	}
	return c, nil
}

func subpathPackets(subs []mbm.Subpath) []int64 {
	n := make([]int64, len(subs))
	for i, s := range subs {
		n[i] = s.Packets
	}
	return n
}

// addMeasured records, beside each composed test, the same test measured
// end to end (e2e, read from path).
func addMeasured(c *model.MBMComposition, path string, e2e model.MBMResult) {
	c.Path = path
	for i := range c.Tests {
		ct := &c.Tests[i]
		if t, ok := findMBMTest(e2e, ct.ID); ok {
			ct.Measured = &model.MBMMeasured{Verdict: t.Verdict, Packets: t.Packets, Marks: t.Marks, Loss: t.Loss, LossLow: t.LossLow, LossHigh: t.LossHigh}
		}
	}
}

func findMBMTest(r model.MBMResult, id string) (model.MBMTest, bool) {
	for _, t := range r.Tests {
		if t.ID == id {
			return t, true
		}
	}
	return model.MBMTest{}, false
}

// parseVerdict reads a saved verdict; ERROR and anything unknown count
// as undecided.
func parseVerdict(s string) mbm.Decision {
	for _, d := range []mbm.Decision{mbm.Pass, mbm.Fail, mbm.Inconclusive} {
		if s == d.String() {
			return d
		}
	}
	return mbm.Continue
}

func writeMBMComposeText(w io.Writer, c model.MBMComposition) error {
	var b strings.Builder
	fmt.Fprintf(&b, "MBM composition: %d subpaths, path p0 %.4g (target %s, RTT %g ms)\n", len(c.Inputs), c.PathP0, units.FormatRate(c.Target.RateBps), c.Target.RTTMs)
	for i, in := range c.Inputs {
		fmt.Fprintf(&b, "  #%d %s\n", i+1, in)
	}
	for _, t := range c.Tests {
		fmt.Fprintf(&b, "%-8s %-12s loss %.4g (bounds %.4g to %.4g)  %s\n", t.ID, t.Verdict, t.Loss, t.LossLow, t.LossHigh, t.Reason)
		if m := t.Measured; m != nil {
			fmt.Fprintf(&b, "%-8s measured end to end: %s, loss %.4g (%d of %d packets; 95 %% %.4g to %.4g)\n", "", m.Verdict, m.Loss, m.Marks, m.Packets, m.LossLow, m.LossHigh)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
