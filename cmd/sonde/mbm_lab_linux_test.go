//go:build !monitoronly

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
)

// exitOf is a finished command's exit code (-1: it did not exit).
func exitOf(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("did not run: %v", err)
	return -1
}

// TestMBMLabUsage: --lab's own mistakes, and the model's, are one line
// and exit 2 before any lab is built (so without root too), for sonde mbm
// and, through the same runner, sonde test. Each runs as its own process:
// a check that let one through would build a lab, not re-run this test.
func TestMBMLabUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mbm", "--lab", "nosuch", "--rate", "5M", "--rtt", "20ms"}, `--lab: unknown lab profile "nosuch"; valid profiles: `},
		{[]string{"mbm", "--lab", filepath.Join(dir, "none.json"), "--rate", "5M", "--rtt", "20ms"}, "--lab: scenario: open "},
		{[]string{"mbm", "--lab", "wire", "127.0.0.1:9", "--rate", "5M", "--rtt", "20ms"}, "--lab runs its own server in the lab: give no SERVER with it"},
		{[]string{"mbm", "--lab", "wire", "--plan", "--rate", "5M", "--rtt", "20ms"}, "--plan sends nothing: give no --lab with it"},
		{[]string{"mbm", "--lab", "wire", "--rate", "5M"}, "a run needs --rate and --rtt"},
		{[]string{"mbm", "--lab", "wire", "--rate", "5M", "--rtt", "1ms"}, "target run length too short"},
		{[]string{"mbm", "--lab", "wire", "--rate", "5M", "--rtt", "20ms", "--json", filepath.Join(dir, "no", "r.json")}, "--json: open "},
		{[]string{"test", "--lab", "wire", "127.0.0.1:9"}, "--lab runs its own server in the lab: give no SERVER with it"},
		{[]string{"test", "--lab", "nosuch"}, `--lab: unknown lab profile "nosuch"`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var stdout, stderr strings.Builder
		cmd := sonde(t, ctx, c.args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := exitOf(t, cmd.Run())
		cancel()
		line := strings.TrimSuffix(stderr.String(), "\n")
		if code != exitUsage || strings.Contains(line, "\n") || !strings.HasPrefix(line, "sonde: ") || !strings.Contains(line, c.want) {
			t.Errorf("sonde %s: exit %d, stderr %q; want exit 2 and one line with %q", strings.Join(c.args, " "), code, stderr.String(), c.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("sonde %s: stdout %q", strings.Join(c.args, " "), stdout.String())
		}
	}
}

// TestMBMLab: sonde mbm --lab runs 8.1.1 across a built-in profile (wire:
// no limit, no loss; UDP and TCP) and a scenario file (3 % loss on the
// uplink; UDP), and its
// result records the profile and the lab's configured path; the verdict is
// the one the configured path calls for: PASS for a loss at most p0 with
// the rate to spare, FAIL for a loss of at least p1. Each run ends in about
// a second (the SPRT decides within a few hundred packets).
func TestMBMLab(t *testing.T) {
	needRootLab(t)
	if testing.Short() {
		t.Skip("builds labs")
	}
	dir := t.TempDir()
	lossy := filepath.Join(dir, "lossy.json")
	if err := os.WriteFile(lossy, []byte(`{"name": "lossy", "links": [{"both": "rate=20Mbit delay=5ms limit=100p", "up": "loss=0.03"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		profile, name, mode, rate, rtt string
		verdict                        model.MBMVerdict
	}{
		{"wire", "wire", "udp", "5M", "20ms", "PASS"},
		{lossy, "lossy", "udp", "5M", "100ms", "FAIL"},
		{"wire", "wire", "tcp", "5M", "20ms", "PASS"},
	} {
		t.Run(c.name+"/"+c.mode, func(t *testing.T) {
			p, err := lab.Resolve(c.profile)
			if err != nil {
				t.Fatal(err)
			}
			truth := p.GroundTruth()
			var res model.MBMResult
			var x model.MBMTest
			// A sender that could not keep the pattern on a busy host gives
			// ERROR or INCONCLUSIVE, no verdict on the path: run once more.
			for attempt := 1; attempt <= 2; attempt++ {
				res, x = mbmLabRun(t, dir, c.profile, "--mode", c.mode, "--rate", c.rate, "--rtt", c.rtt)
				if x.Verdict == "PASS" || x.Verdict == "FAIL" {
					break
				}
				t.Logf("attempt %d: %s: %s", attempt, x.Verdict, x.Reason)
			}
			if res.Env == nil || res.Env.LabProfile != c.name {
				t.Errorf("environment %+v, want lab_profile %q", res.Env, c.name)
			}
			if res.Truth == nil || *res.Truth != truth {
				t.Fatalf("ground_truth %+v, want the profile's %+v", res.Truth, truth)
			}
			// The verdict the configured path calls for, from the recorded
			// truth and model (the tests' packets go client → server).
			var want model.MBMVerdict
			switch up := res.Truth.UpRateBps; {
			case res.Truth.UpLoss >= res.Model.P1:
				want = model.MBMFail
			case res.Truth.UpLoss <= res.Model.P0 && (up == 0 || up >= res.Target.RateBps):
				want = model.MBMPass
			default:
				t.Fatalf("the profile (loss %g, rate %g) is between p0 %g and p1 %g: no verdict to expect", res.Truth.UpLoss, up, res.Model.P0, res.Model.P1)
			}
			if want != c.verdict || x.Verdict != want {
				t.Errorf("8.1.1 %s (%s), want %s (case: %s); up loss %g, p0 %g, p1 %g", x.Verdict, x.Reason, want, c.verdict, res.Truth.UpLoss, res.Model.P0, res.Model.P1)
			}
			if x.Transport != c.mode {
				t.Errorf("transport %q, want %q", x.Transport, c.mode)
			}
			if x.Verdict == "FAIL" && x.Losses == 0 {
				t.Errorf("a FAIL with no loss counted: %+v", x)
			}
		})
	}
}

// mbmLabRun runs `sonde mbm --lab PROFILE --tests 8.1.1 ARGS…` and returns
// its saved result and test; it checks that the exit code is the
// verdict's and that the lab is gone afterwards.
func mbmLabRun(t *testing.T, dir, profile string, args ...string) (model.MBMResult, model.MBMTest) {
	t.Helper()
	out := filepath.Join(dir, "r.json")
	_ = os.Remove(out)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append([]string{"mbm", "--lab", profile, "--tests", "8.1.1", "--json", out, "-q"}, args...)
	cmd := sonde(t, ctx, argv...)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	code := exitOf(t, err)
	t.Logf("sonde %s: exit %d in %v\n%s", strings.Join(argv, " "), code, time.Since(start).Round(time.Millisecond), b)
	states, _ := lab.ListStates(lab.DefaultStateDir)
	for _, s := range states {
		if s.PID == cmd.Process.Pid {
			t.Errorf("lab %s of sonde mbm --lab (pid %d) still recorded after it ended", s.ID, s.PID)
		}
	}
	raw, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("no result: %v", rerr)
	}
	var res model.MBMResult
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Tests) != 1 {
		t.Fatalf("%s: %v, %d tests", out, err, len(res.Tests))
	}
	x := res.Tests[0]
	want := map[model.MBMVerdict]int{"PASS": 0, "INCONCLUSIVE": 0, "FAIL": exitVerdict, "ERROR": exitFailure}[x.Verdict]
	if code != want {
		t.Errorf("exit %d for %s, want %d", code, x.Verdict, want)
	}
	return res, x
}
