//go:build !monitoronly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/mbm/mbmrun"
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
	out                report.Outputs

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
	f.BoolVar(&o.ecn, "ect", true, "send ECT(0), so that an AQM marks CE instead of dropping (marks = losses + CE)")
	deprecatedAlias(f, "ecn", "ect")
	f.StringVar(&o.subpath, "subpath", "", "name of the part of the path measured, for sonde mbm compose (e.g. access)")
	f.StringVar(&o.token, "token", "", "bearer token for a private server")
	f.BoolVarP(&o.insecure, "insecure", "k", false, "accept any TLS certificate")
	registerOutputs(cmd, &o.out, "the result (schema sonde.mbm/v1)", false)
	f.StringVar(&o.out.CSV, "csv", "", "write one row per test as CSV to `FILE`, - for stdout (no text summary then)")
	f.StringVar(&o.lab, "lab", "", "run across an emulated path: build lab profile `PROFILE` (sonde lab profiles, or a scenario .json file), serve in its server namespace, run the tests from its client namespace (client → server, the direction measured), and record the profile and its configured path in the result; needs root; no SERVER")
	f.StringVar(&o.truthFile, "ground-truth", "", "JSON file with the path's configured properties (set by --lab)")
	_ = f.MarkHidden("ground-truth")
	cmd.AddCommand(newMBMComposeCmd(), newMBMSummaryCmd())
	return cmd
}

// newPlan checks the model's flags and the outputs (usage errors) and makes
// the plan.
func (o *mbmFlags) newPlan(rttSet bool) (mbm.Plan, error) {
	if err := usageErr(o.out.Check()); err != nil {
		return mbm.Plan{}, err
	}
	p, err := mbm.Settings{Rate: o.rate, RTTGiven: rttSet, ForPlan: o.plan, Inputs: mbm.Inputs{Target: mbm.Target{RTT: o.rtt, MTU: o.mtu, HeaderOverhead: o.header},
		Model: o.model, Alpha: o.alpha, Beta: o.beta, FloorPackets: o.floor, TruncFactor: o.trunc, Budget: o.budget}}.Plan()
	return p, usageErr(err)
}

func runMBMPlan(stdout io.Writer, o *mbmFlags, rttSet bool) error {
	if o.out.CSV != "" {
		return usagef("--csv: a plan has no tests; use --json or --html")
	}
	plan, err := o.newPlan(rttSet)
	if err != nil {
		return err
	}
	res := mbm.Result(plan)
	res.Plan = true
	res.Subpath = o.subpath
	return o.out.Write(stdout, os.Stderr, report.Forms{JSON: res,
		HTML: func(w io.Writer) error { return report.WriteMBMHTML(w, &res) },
		Text: func(w io.Writer) error { return report.WriteMBMPlanText(w, plan) }}) // nothing is lost
}

// runMBM runs the tests against server (internal/mbm/mbmrun) and writes
// the result; exit 5 if a test FAILed, 1 if one could not run (what was
// measured is written).
func runMBM(ctx context.Context, stdout io.Writer, server string, o *mbmFlags, rttSet bool) error {
	plan, err := o.newPlan(rttSet)
	if err != nil {
		return err
	}
	truth, err := lab.ReadTruthFile(o.truthFile) // from a lab parent (labrun.go)
	if err != nil {
		return usageErr(err)
	}
	cfg := mbmrun.Config{Plan: plan, Server: server, Token: o.token, Insecure: o.insecure, Software: "sonde/" + version,
		Mode: o.mode, Derate: o.derate, MinRate: o.minRate, Burst: o.burst, BurstSet: o.burstSet, ECN: o.ecn,
		Subpath: o.subpath, Truth: truth,
		Progress: func(id string) {
			name, _ := udprun.TestName(id)
			fmt.Fprintf(os.Stderr, "sonde mbm: %s %s at %s…\n", id, name, units.FormatRate(plan.RateBps))
		}}
	if err := cfg.SetTests(o.tests); err != nil {
		return usageErr(err)
	}
	if err := mbmrun.Validate(cfg); err != nil {
		return usageErr(err)
	}
	res, runErr := mbmrun.Run(ctx, cfg)
	if res == nil {
		return runErr // refused, unreachable, no MBM: nothing measured
	}
	if runErr != nil {
		runErr = measuredErr(runErr) // tests ran: not a refused run
	}
	f := report.FormsOf(res)
	f.CSV = func(w io.Writer) error { return report.WriteMBMCSV(w, res) }
	if err := errors.Join(runErr, o.out.Write(stdout, os.Stderr, f)); err != nil {
		return err
	}
	return mbmExit(res.Tests)
}

// mbmExit is a run's exit: 1 if a test could not run, 5 if one FAILed.
func mbmExit(tests []model.MBMTest) error {
	switch v, t := mbmrun.Worst(tests); v {
	case model.MBMError:
		return &exitError{code: exitFailure, err: fmt.Errorf("test %s: %s", t.ID, t.Reason)}
	case model.MBMFail:
		return &exitError{code: exitVerdict, err: errSilent}
	}
	return nil
}

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

func runMBMCompose(stdout io.Writer, paths []string, e2ePath, jsonOut string, quiet bool) error {
	if quiet && jsonOut == "" {
		return usagef("--quiet without --json would discard the composition")
	}
	out := report.Outputs{JSON: jsonOut, Quiet: quiet}
	if err := usageErr(out.Check()); err != nil {
		return err
	}
	c, err := report.ComposeMBMFiles(paths, e2ePath)
	if err != nil {
		return usageErr(err)
	}
	if err := out.Write(stdout, os.Stderr, report.FormsOf(&c)); err != nil {
		return err
	}
	for _, t := range c.Tests {
		if t.Verdict == model.MBMFail {
			return &exitError{code: exitVerdict, err: errSilent}
		}
	}
	return nil
}
