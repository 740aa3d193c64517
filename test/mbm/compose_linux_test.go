package mbm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
)

// Target of the composition test: 10 Mbit/s (the seed's) at the two
// links' 20 ms round trip: W 18, R 972, path p0 1.03e-3, split equally
// into two subpath budgets.
const (
	coRate = 10e6
	coRTT  = 20 * time.Millisecond
)

// coSetting is one pair of configured losses (links a-b and b-c).
type coSetting struct{ ab, bc float64 }

// settings are the link losses measured: SONDE_MBM_LAB_LOSSES
// ("AB:BC,…"), or two of the seed's range (0 to 2 % each).
func settings(t *testing.T) []coSetting {
	t.Helper()
	s := os.Getenv("SONDE_MBM_LAB_LOSSES")
	if s == "" {
		return []coSetting{{0.005, 0.01}, {0.01, 0.02}}
	}
	var out []coSetting
	for _, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(f, ":")
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		if !ok || err1 != nil || err2 != nil || x < 0 || y < 0 || x > 0.2 || y > 0.2 {
			t.Fatalf("SONDE_MBM_LAB_LOSSES=%q: want AB:BC pairs of losses in [0, 0.2]", s)
		}
		out = append(out, coSetting{x, y})
	}
	return out
}

// floor is the packets before which no FAIL is declared
// (SONDE_MBM_LAB_FLOOR; default 2000): the SPRT stops a lossy run after
// a few hundred packets, and the seed compared only runs of more than
// 1000 packets, whose loss estimates are not dominated by where the
// walk happened to stop.
func floor(t *testing.T) int {
	t.Helper()
	s := os.Getenv("SONDE_MBM_LAB_FLOOR")
	if s == "" {
		return 2000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 100000 {
		t.Fatalf("SONDE_MBM_LAB_FLOOR=%q: want 0 to 100000", s)
	}
	return n
}

// TestComposition is seed 002 §4.4: two links a-b and b-c with random
// loss; 8.1.1 over UDP (exact per-packet loss) on each subpath, with an
// equal share of the path's loss budget, and end to end; `sonde mbm
// compose` composes the subpaths, 1 − Π(1 − m_i/n_i), and the composed
// loss is compared with the end-to-end loss measured (a Q-Q of the two,
// runs of more than 1000 packets). Every loss is checked against the
// configured one, every verdict against the configured path's.
func TestComposition(t *testing.T) {
	needLab(t)
	pathPlan := plan(t, coRate, coRTT, 0)
	budget := 1 - math.Sqrt(1-pathPlan.P0) // Π(1 − b) = 1 − p0 over two subpaths
	subPlan := plan(t, coRate, coRTT, budget)
	fl := floor(t)
	args := []string{"--rate", fmt.Sprint(coRate), "--rtt", coRTT.String(), "--tests", "8.1.1", "--floor", strconv.Itoa(fl)}
	type row struct {
		set                   coSetting
		ab, bc, ac            run
		composed, cLow, cHigh float64
		verdict               string
	}
	var rows []row
	var skips []string
	total := 0
	n := runs(t, 1)
	// Four loss checks per row: each subpath, the path, the composition.
	z := zFamily(4 * len(settings(t)) * n)
	for _, set := range settings(t) {
		r := upLab(t, lab.Scenario{Name: "compose", Links: []lab.ScenarioLink{
			{Name: "a-b", Both: "rate=100Mbit delay=5ms limit=1000p", Up: fmt.Sprintf("loss=%g", set.ab)},
			{Name: "b-c", Both: "rate=100Mbit delay=5ms limit=1000p", Up: fmt.Sprintf("loss=%g", set.bc)},
		}})
		bSrv, cSrv := r.serve(1, 1), r.serve(2, 2)
		for i := range n {
			var rw row
			rw.set = set
			allOK := true
			sub := func(name string, from, to int, srv string, x *run) {
				gt := r.subTruth(from, to)
				want := expected(gt, subPlan)
				total++
				var ok bool
				*x, _, ok = checked(t, &skips, fmt.Sprintf("losses %g/%g run %d: %s", set.ab, set.bc, i+1, name), func() (run, truth) {
					x := r.mbm(from, srv, append(args, "--subpath", name, "--budget", fmt.Sprint(budget))...)
					return x, r.truthOf(x, 17, from, to)
				}, verdictCheck(want))
				allOK = allOK && ok
			}
			sub("a-b", 0, 1, bSrv, &rw.ab)
			sub("b-c", 1, 2, cSrv, &rw.bc)
			e2eGT := r.subTruth(0, 2)
			total++
			var ok bool
			rw.ac, _, ok = checked(t, &skips, fmt.Sprintf("losses %g/%g run %d: a-c", set.ab, set.bc, i+1), func() (run, truth) {
				x := r.mbm(0, cSrv, args...)
				return x, r.truthOf(x, 17, 0, 2)
			}, verdictCheck(expected(e2eGT, pathPlan)))
			if !allOK || !ok {
				continue // a subpath or the path measured the host: no row
			}
			for _, c := range []struct {
				name string
				x    run
				p    float64
			}{{"a-b", rw.ab, set.ab}, {"b-c", rw.bc, set.bc}, {"a-c", rw.ac, e2eGT.UpLoss}} {
				if !near(c.x.x.Loss, c.x.x.Packets, c.p, z) {
					t.Errorf("%s: loss %.5f over %d packets, configured %.5f: outside the %.2f σ sampling interval", c.name, c.x.x.Loss, c.x.x.Packets, c.p, z)
				}
			}
			comp := compose(t, r, rw.ac.file, rw.ab.file, rw.bc.file)
			ct := comp.Tests[0]
			if m := ct.Measured; m == nil || m.Loss != rw.ac.x.Loss || m.Packets != rw.ac.x.Packets {
				t.Errorf("compose --path recorded %+v, the end-to-end run measured %.5f over %d packets", m, rw.ac.x.Loss, rw.ac.x.Packets)
			}
			rw.composed, rw.cLow, rw.cHigh, rw.verdict = ct.Loss, ct.LossLow, ct.LossHigh, string(ct.Verdict)
			wantC := model.MBMPass
			if rw.ab.x.Verdict == "FAIL" || rw.bc.x.Verdict == "FAIL" {
				wantC = "FAIL"
			} else if rw.ab.x.Verdict != "PASS" || rw.bc.x.Verdict != "PASS" {
				wantC = "INCONCLUSIVE"
			}
			if ct.Verdict != wantC {
				t.Errorf("composed verdict %s (%s) from subpaths %s and %s", ct.Verdict, ct.Reason, rw.ab.x.Verdict, rw.bc.x.Verdict)
			}
			// The composed and the measured end-to-end loss differ by
			// sampling alone when losses are independent.
			sd := math.Sqrt(variance(rw.ab.x) + variance(rw.bc.x) + variance(rw.ac.x))
			if d := math.Abs(rw.composed - rw.ac.x.Loss); d > z*sd+1e-9 {
				t.Errorf("losses %g/%g: composed %.5f, measured end to end %.5f: |difference| %.5f > %.2f σ (%.5f)", set.ab, set.bc, rw.composed, rw.ac.x.Loss, d, z, z*sd)
			}
			rows = append(rows, rw)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "composition, target %g Mbit/s at %v (W %d, path p0 %.4g; subpath budgets %.4g each), floor %d packets, UDP 8.1.1, %d run(s) a setting\n",
		coRate/1e6, coRTT, pathPlan.W, pathPlan.P0, budget, fl, n)
	fmt.Fprintf(&b, "(seed 002 §4.4: measured a-b and b-c close to configured; composed vs measured a-c near the diagonal of a Q-Q plot for runs over 1000 packets; packets to decide 40 to 86,440)\n")
	fmt.Fprintf(&b, "  %-11s %-18s %-18s %-18s %-26s %s\n", "configured", "a-b m/n (n)", "b-c m/n (n)", "a-c m/n (n)", "composed [bounds]", "verdicts a-b, b-c, a-c, composed")
	var comp, meas []float64
	var excluded int
	var decide []int64
	for _, rw := range rows {
		fmt.Fprintf(&b, "  %-11s %-18s %-18s %-18s %-26s %s, %s, %s, %s\n", fmt.Sprintf("%g/%g", rw.set.ab, rw.set.bc),
			lossN(rw.ab.x), lossN(rw.bc.x), lossN(rw.ac.x), fmt.Sprintf("%.5f [%.5f, %.5f]", rw.composed, rw.cLow, rw.cHigh),
			rw.ab.x.Verdict, rw.bc.x.Verdict, rw.ac.x.Verdict, rw.verdict)
		for _, x := range []run{rw.ab, rw.bc, rw.ac} {
			if x.x.UDP != nil && x.x.UDP.DecisionPackets > 0 {
				decide = append(decide, x.x.UDP.DecisionPackets)
			}
		}
		if rw.ab.x.Packets > 1000 && rw.bc.x.Packets > 1000 && rw.ac.x.Packets > 1000 {
			comp, meas = append(comp, rw.composed), append(meas, rw.ac.x.Loss)
		} else {
			excluded++
		}
	}
	slices.Sort(comp)
	slices.Sort(meas)
	var maxDev float64
	fmt.Fprintf(&b, "  Q-Q (sorted composed vs sorted measured a-c loss, runs over 1000 packets; %d left out):\n", excluded)
	for i := range comp {
		maxDev = max(maxDev, math.Abs(comp[i]-meas[i]))
		fmt.Fprintf(&b, "    %.5f  %.5f\n", comp[i], meas[i])
	}
	fmt.Fprintf(&b, "  max |composed − measured| over the Q-Q pairs: %.5f\n", maxDev)
	b.WriteString(histogram(decide))
	fmt.Fprintf(&b, "  %d of %d runs skipped (host too busy twice)\n", len(skips), total)
	t.Log("PROOF\n" + b.String())
	skipIf(t, skips, total)
}

// compose runs `sonde mbm compose --path E2E` on saved subpath results
// (the composition is kept in labOutEnv's directory too, numbered as the
// lab's last run, the end-to-end one).
func compose(t *testing.T, r *rig, e2e string, files ...string) model.MBMComposition {
	t.Helper()
	out := filepath.Join(t.TempDir(), "compose.json")
	b, err := exec.Command(sondeBin, append([]string{"mbm", "compose", "--json", out, "-q", "--path", e2e}, files...)...).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 5) {
		t.Fatalf("sonde mbm compose: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var c model.MBMComposition
	if err := json.Unmarshal(raw, &c); err != nil || len(c.Tests) != 1 {
		t.Fatalf("compose result: %v, %d tests", err, len(c.Tests))
	}
	keep(t, r.lab.ID, r.seq, "compose", raw)
	return c
}

// variance of a loss estimate m/n (binomial).
func variance(x model.MBMTest) float64 {
	if x.Packets <= 0 {
		return 1
	}
	p := max(x.Loss, 1/float64(x.Packets))
	return p * (1 - p) / float64(x.Packets)
}

func lossN(x model.MBMTest) string { return fmt.Sprintf("%.5f (%d)", x.Loss, x.Packets) }

// histogram of the packets the SPRT took to decide, in powers of two.
func histogram(v []int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  packets to decide (SPRT, every decided run, %d): ", len(v))
	if len(v) == 0 {
		b.WriteString("none\n")
		return b.String()
	}
	counts := map[int]int{}
	lo, hi := 64, 0
	for _, n := range v {
		k := int(math.Floor(math.Log2(float64(max(n, 1)))))
		counts[k]++
		lo, hi = min(lo, k), max(hi, k)
	}
	fmt.Fprintf(&b, "min %d, max %d\n", slices.Min(v), slices.Max(v))
	for k := lo; k <= hi; k++ {
		fmt.Fprintf(&b, "    %6d–%-6d %3d %s\n", 1<<k, 1<<(k+1)-1, counts[k], strings.Repeat("#", counts[k]))
	}
	return b.String()
}
