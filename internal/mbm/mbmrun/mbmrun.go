// Package mbmrun is the entry point of an MBM run (RFC 8337, docs/mbm.md):
// one Config in (a plan, a server, the tests), one finished
// model.MBMResult out, as tcptest is for `sonde test`. It owns what a run
// adds to the transports: the split of the tests between TCP (tcprun) and
// UDP (udprun), their order, the sending host's environment and the lab
// a result was measured across. The CLI keeps flags, outputs and exit
// codes.
package mbmrun

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/mbm/tcprun"
	"github.com/sonde-project/sonde/internal/mbm/udprun"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// The transports of a run (Config.Mode).
const (
	ModeUDP  = "udp"  // an open-loop UDP sender, every RFC 8337 pattern
	ModeTCP  = "tcp"  // a TCP upload: tcprun.Tests
	ModeAuto = "auto" // TCP for the tests it can produce, UDP for the rest
)

// MaxSubpathLen bounds Config.Subpath.
const MaxSubpathLen = 64

// Config is one run.
type Config struct {
	Plan mbm.Plan
	// Server is the sonde server's URL or host; Token its bearer token.
	Server, Token string
	Insecure      bool   // accept any TLS certificate
	Software      string // "sonde/VERSION", sent to the server
	// Mode is ModeUDP, ModeTCP or ModeAuto; Tests the RFC 8337 sections
	// to run, in order (ParseTests).
	Mode  string
	Tests []string
	// Derate is 8.5.1's derating, MinRate the rate precondition's share
	// of the target, Burst 8.4's burst in packets (TCP uses it only when
	// BurstSet; else one 64 KiB TSO segment), ECN sends ECT(0) (UDP).
	Derate, MinRate float64
	Burst           int64
	BurstSet        bool
	ECN             bool
	// Subpath names the part of the path measured, for composition.
	Subpath string
	// Truth is the lab path the run crosses (sonde mbm --lab), recorded
	// in the result; nil outside a lab.
	Truth *model.GroundTruth
	// Progress, if set, is told each test before it starts.
	Progress func(id string)
}

// Validate checks cfg's own fields (the plan was checked by mbm.NewPlan);
// its errors name the fields as sonde mbm's flags do.
func Validate(cfg Config) error {
	switch {
	case cfg.Mode != ModeUDP && cfg.Mode != ModeTCP && cfg.Mode != ModeAuto:
		return fmt.Errorf("--mode: want udp, tcp or auto, got %q", clip(cfg.Mode))
	case len(cfg.Tests) == 0:
		return errors.New("--tests: no test given")
	case !(cfg.Derate > 0 && cfg.Derate <= 1):
		return fmt.Errorf("--derate: want more than 0, at most 1, got %g", cfg.Derate)
	case !(cfg.MinRate > 0 && cfg.MinRate <= 1):
		return fmt.Errorf("--min-rate: want more than 0, at most 1, got %g", cfg.MinRate)
	case cfg.Burst < 1 || cfg.Burst > 10000:
		return fmt.Errorf("--burst: want 1 to 10000 packets, got %d", cfg.Burst)
	case len(cfg.Subpath) > MaxSubpathLen:
		return fmt.Errorf("--subpath: at most %d bytes", MaxSubpathLen)
	}
	_, udpTests := split(cfg)
	if len(udpTests) > 0 {
		return udprun.Validate(udpConfig(cfg, udpTests))
	}
	return nil
}

// SetTests sets c's tests from a list (ParseTests) in c's mode, which it
// checks first; errors name sonde mbm's flags.
func (c *Config) SetTests(list string) error {
	if c.Mode != ModeUDP && c.Mode != ModeTCP && c.Mode != ModeAuto {
		return fmt.Errorf("--mode: want udp, tcp or auto, got %q", clip(c.Mode))
	}
	tests, err := ParseTests(list, c.Mode)
	if err != nil {
		return fmt.Errorf("--tests: %w", err)
	}
	c.Tests = tests
	return nil
}

// ParseTests reads a list of tests: "all" or comma-separated sections,
// each one that mode runs; duplicates are dropped.
func ParseTests(s, mode string) ([]string, error) {
	known := tcprun.Tests
	if mode != ModeTCP { // udp, and auto: TCP where it can, UDP the rest
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
			return nil, fmt.Errorf("%q is not a test of the %s mode (%s or all)", clip(id), mode, strings.Join(known, ", "))
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("no test given")
	}
	return ids, nil
}

// split gives TCP the tests it runs in cfg's mode and UDP the rest.
func split(cfg Config) (tcpTests, udpTests []string) {
	for _, id := range cfg.Tests {
		if cfg.Mode == ModeTCP || cfg.Mode == ModeAuto && slices.Contains(tcprun.Tests, id) {
			tcpTests = append(tcpTests, id)
		} else {
			udpTests = append(udpTests, id)
		}
	}
	return tcpTests, udpTests
}

func udpConfig(cfg Config, tests []string) udprun.Config {
	return udprun.Config{Server: cfg.Server, Token: cfg.Token, Software: cfg.Software, Insecure: cfg.Insecure, Plan: cfg.Plan,
		Tests: tests, Derate: cfg.Derate, BurstPackets: cfg.Burst, MinRateFraction: cfg.MinRate, ECN: cfg.ECN, Progress: cfg.progress}
}

func (cfg Config) progress(id string) {
	if cfg.Progress != nil {
		cfg.Progress(id)
	}
}

// Run runs cfg's tests against its server. The result is nil only when
// nothing was measured (refused, unreachable, no MBM): then the error
// says why. Otherwise the result holds every test that ran, in the order
// asked for, and an error of a transport is both returned and recorded
// in the result's errors: what was measured is kept.
func Run(ctx context.Context, cfg Config) (*model.MBMResult, error) {
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	tcpTests, udpTests := split(cfg)
	// One runner per transport.
	type runner func(context.Context) ([]model.MBMTest, error)
	var runners []runner
	fillEnv := func(env *model.MBMEnv) { env.Kernel = tcpinfo.KernelRelease() }
	if len(tcpTests) > 0 {
		tc := tcprun.Config{Plan: cfg.Plan, Tests: tcpTests, Derate: cfg.Derate, Precondition: cfg.MinRate}
		if cfg.BurstSet {
			tc.SenderBurst = cfg.Burst // else tcprun's: one 64 KiB TSO segment
		}
		var tlsCfg *tls.Config
		if cfg.Insecure {
			tlsCfg = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the caller asks for it
		}
		runners = append(runners, func(ctx context.Context) ([]model.MBMTest, error) {
			for _, id := range tcpTests {
				cfg.progress(id)
			}
			sess, err := tcprun.Dial(ctx, tcprun.Server{URL: cfg.Server, Token: cfg.Token, TLS: tlsCfg,
				Software: cfg.Software, MSS: cfg.Plan.MTU - cfg.Plan.HeaderOverhead})
			if err != nil {
				return nil, err
			}
			defer sess.Close()
			tc.Streams = sess
			ctx, cancel := context.WithDeadline(ctx, sess.Deadline())
			defer cancel()
			return tcprun.Run(ctx, tc)
		})
		fillEnv = func(env *model.MBMEnv) { tcprun.FillEnv(env, tc) }
	}
	if len(udpTests) > 0 {
		uc := udpConfig(cfg, udpTests)
		runners = append(runners, func(ctx context.Context) ([]model.MBMTest, error) { return udprun.Run(ctx, uc) })
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
			return slices.Index(cfg.Tests, a.ID) - slices.Index(cfg.Tests, b.ID)
		})
		return ran, errors.Join(errs...)
	}
	res := mbm.Result(cfg.Plan)
	res.Subpath = cfg.Subpath
	res.Start = time.Now().UTC()
	ran, runErr := runTests(ctx)
	res.End = time.Now().UTC()
	if runErr != nil && len(ran) == 0 {
		return nil, runErr // refused, unreachable, no MBM: nothing measured
	}
	res.Tests = ran
	res.Env = &model.MBMEnv{}
	fillEnv(res.Env)
	RecordLab(&res, cfg.Truth)
	if runErr != nil {
		res.Errors = append(res.Errors, runErr.Error())
	}
	return &res, runErr
}

// RecordLab records the lab a result was measured across: its profile in
// the environment and its configured path as the ground truth.
func RecordLab(res *model.MBMResult, truth *model.GroundTruth) {
	if truth == nil {
		return
	}
	if res.Env == nil {
		res.Env = &model.MBMEnv{}
	}
	res.Env.LabProfile = truth.Profile
	t := *truth
	res.Truth = &t
}

// Worst is the verdict that decides a run's exit: ERROR (with the first
// test that erred) if a test could not run to its end, else FAIL if a
// test failed, else "".
func Worst(tests []model.MBMTest) (model.MBMVerdict, *model.MBMTest) {
	var worst model.MBMVerdict
	for i := range tests {
		switch tests[i].Verdict {
		case model.MBMError:
			return model.MBMError, &tests[i]
		case model.MBMFail:
			worst = model.MBMFail
		}
	}
	return worst, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
