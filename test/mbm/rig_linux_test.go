package mbm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
	"github.com/sonde-project/sonde/internal/testbin"
)

// sondeBin is the binary under test, built once by TestMain (or SONDE_BIN).
var sondeBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &sondeBin, true)) }

func needLab(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces and TUN devices (run go test as root)")
	}
	if testing.Short() {
		t.Skip("lab test")
	}
}

// runsEnv sets how many times each point is measured (bench/mbm_lab.sh
// sets more than the test's default).
const runsEnv = "SONDE_MBM_LAB_RUNS"

// runs is the number of runs of each point: runsEnv, or def.
func runs(t *testing.T, def int) int {
	t.Helper()
	s := os.Getenv(runsEnv)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 50 {
		t.Fatalf("%s=%q: want 1 to 50", runsEnv, s)
	}
	return n
}

// labOutEnv names a directory where every result the proofs accept, and
// every composition, is also written (bench/mbm_lab.sh gives it to sonde
// mbm summary); unset, nothing is written.
const labOutEnv = "SONDE_MBM_LAB_OUT"

// keep writes a copy of a saved file into labOutEnv's directory under a
// name unique to the test, lab and sequence number; it returns that
// path, "" when labOutEnv is unset.
func keep(t *testing.T, labID string, seq int, kind string, raw []byte) string {
	t.Helper()
	dir := os.Getenv(labOutEnv)
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%s: %v", labOutEnv, err)
	}
	name := fmt.Sprintf("%s-%s-%s-%03d.json", strings.ReplaceAll(t.Name(), "/", "_"), labID, kind, seq)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatalf("%s: %v", labOutEnv, err)
	}
	return path
}

// maxLateness is the lab forwarder's p99 lateness beyond which the host
// counts as overloaded (as in test/accuracy and tcprun's lab tests).
const maxLateness = 10 * time.Millisecond

// rig is a running lab with its ground-truth file.
type rig struct {
	t       *testing.T
	lab     *lab.Lab
	profile lab.Profile
	truth   string
	dir     string
	seq     int
}

func upLab(t *testing.T, sc lab.Scenario) *rig {
	t.Helper()
	p, err := sc.Parse()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &rig{t: t, profile: p, truth: filepath.Join(dir, "truth.sgt"), dir: dir}
	// A random seed (logged): repeated runs, and repeated invocations,
	// draw new random losses; a fixed one made each invocation repeat
	// the last one's figures.
	r.lab, err = lab.UpProfile(context.Background(), p, lab.Options{TruthPath: r.truth, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lab %s: profile %s, seed %d", r.lab.ID, p.Name, r.lab.Seed)
	t.Cleanup(func() { _ = r.lab.Down() })
	return r
}

// nodeName is node k of the chain (0 the client, the last the server).
func (r *rig) nodeName(k int) string { return r.lab.Nodes()[k] }

// serve starts `sonde serve` on node k, listening on its end of link i
// (1-based), and returns its address once it accepts connections.
func (r *rig) serve(k, link int) string {
	r.t.Helper()
	node := r.nodeName(k)
	addr, err := r.lab.AddrOn(node, link)
	if err != nil {
		r.t.Fatal(err)
	}
	hp := net.JoinHostPort(addr, "8080")
	log, err := os.Create(filepath.Join(r.dir, "serve-"+node+".log"))
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := r.lab.Command(ctx, node, sondeBin, "serve", "--addr", hp, "--store", ":memory:", "--per-ip-rate", "off",
		"--udp-addr", "off", "--webrtc-port", "off", "--server-records=false")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { cancel(); _ = cmd.Wait(); log.Close() })
	ns, _ := r.lab.Namespace(node)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := netns.Do(ns, func() error {
			c, err := net.DialTimeout("tcp", hp, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		if err == nil {
			return hp
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			r.t.Fatalf("sonde serve on %s at %s does not answer: %v\n%s", node, hp, err, b)
		}
	}
}

// run is one `sonde mbm` invocation: its saved result, its one test, and
// the stretch of lab time it took.
type run struct {
	file     string
	kept     string // its copy in labOutEnv's directory ("": none)
	res      model.MBMResult
	x        model.MBMTest
	from, to time.Duration
}

// mbm runs `sonde mbm SERVER --json FILE -q ARGS…` on node k; exit 0
// (PASS, INCONCLUSIVE), 5 (FAIL) and 1 (ERROR, result still written) are
// results, anything else fails the test.
func (r *rig) mbm(k int, server string, args ...string) run {
	r.t.Helper()
	r.seq++
	out := run{file: filepath.Join(r.dir, fmt.Sprintf("mbm-%d.json", r.seq))}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := append([]string{"mbm", server, "--json", out.file, "-q"}, args...)
	out.from = time.Since(r.lab.Start)
	b, err := r.lab.Command(ctx, r.nodeName(k), sondeBin, argv...).CombinedOutput()
	out.to = time.Since(r.lab.Start)
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && slices.Contains([]int{1, 5}, ee.ExitCode())) {
		r.t.Fatalf("sonde %s: %v\n%s", strings.Join(argv, " "), err, b)
	}
	raw, rerr := os.ReadFile(out.file)
	if rerr != nil {
		r.t.Fatalf("sonde %s: %v; no result: %v\n%s", strings.Join(argv, " "), err, rerr, b)
	}
	if err := json.Unmarshal(raw, &out.res); err != nil || len(out.res.Tests) != 1 {
		r.t.Fatalf("%s: %v, %d tests", out.file, err, len(out.res.Tests))
	}
	out.kept = keep(r.t, r.lab.ID, r.seq, "mbm", raw)
	out.x = out.res.Tests[0]
	return out
}

// truth is what the emulator did to one run's data packets (client to
// server direction, longer than 1000 bytes, of protocol proto) on the
// links a run crossed: its ground truth.
type truth struct {
	packets, delivered, randomLoss, queueDrops int
	maxQueue                                   uint32        // backlog an arriving packet found
	lateP99                                    time.Duration // the forwarder's p99 lateness
	// patternFault, set by a test that knows the pattern, says that the
	// link did not see the pattern sent (bursts merged by a stalled host).
	patternFault string
}

// truthOf reads the ground truth of links from+1 … to (1-based, the
// subpath between nodes from and to) over a run's stretch of lab time.
func (r *rig) truthOf(x run, proto uint8, from, to int) truth {
	r.t.Helper()
	if err := r.lab.FlushTruth(); err != nil {
		r.t.Fatal(err)
	}
	_, recs, err := emulator.ReadTruthFile(r.truth)
	if err != nil {
		r.t.Fatal(err)
	}
	var tr truth
	var late []time.Duration
	for _, rec := range recs {
		if rec.Dir != emulator.Up || rec.Proto != proto || rec.Length < 1000 || rec.Arrival < x.from || rec.Arrival > x.to ||
			int(rec.Link) < from || int(rec.Link) >= to {
			continue
		}
		if int(rec.Link) == from {
			tr.packets++
		}
		tr.maxQueue = max(tr.maxQueue, rec.QPackets)
		switch rec.Fate {
		case emulator.Delivered:
			if int(rec.Link) == to-1 {
				tr.delivered++
			}
			late = append(late, rec.Lateness())
		case emulator.DropLoss:
			tr.randomLoss++
		case emulator.DropQueue:
			tr.queueDrops++
		}
	}
	if len(late) > 0 {
		slices.Sort(late)
		tr.lateP99 = late[len(late)*99/100]
	}
	return tr
}

// subTruth is the configured path between nodes from and to.
func (r *rig) subTruth(from, to int) model.GroundTruth {
	r.t.Helper()
	s, err := r.profile.Subpath(from, to)
	if err != nil {
		r.t.Fatal(err)
	}
	return s.GroundTruth()
}

// plan is the model of a target (MTU 1500, 52 bytes of headers, α = β =
// 0.05), computed here from the inputs, not read from the result.
func plan(t *testing.T, rate float64, rtt time.Duration, budget float64) mbm.Plan {
	t.Helper()
	p, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: rate, RTT: rtt, MTU: 1500, HeaderOverhead: mbm.DefaultHeaderOverhead},
		Alpha: mbm.DefaultAlpha, Beta: mbm.DefaultBeta, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// expected is the verdict the configured path must give a paced test:
// FAIL if its rate is below the precondition or its loss at least p1,
// PASS if it carries the target with room (a paced flow then never
// queues) and its loss is at most p0, "" otherwise.
func expected(gt model.GroundTruth, p mbm.Plan) string {
	switch {
	case gt.UpRateBps > 0 && gt.UpRateBps < precondition*p.RateBps:
		return "FAIL"
	case gt.UpLoss >= p.P1:
		return "FAIL"
	case (gt.UpRateBps == 0 || gt.UpRateBps >= 1.2*p.RateBps) && gt.UpLoss <= p.P0:
		return "PASS"
	}
	return ""
}

// hostFault says why a run measured the host rather than the path ("" if
// it did not): the runner's own conformance check gave no path verdict,
// or the lab's forwarder ran late.
func hostFault(x run, tr truth) string {
	switch {
	case tr.patternFault != "":
		return tr.patternFault
	case tr.lateP99 > maxLateness:
		return fmt.Sprintf("the lab forwarder's p99 lateness %v > %v", tr.lateP99.Round(10*time.Microsecond), maxLateness)
	case x.x.Verdict == "ERROR" || (x.x.Verdict == "INCONCLUSIVE" && strings.Contains(x.x.Reason, "pattern")):
		return fmt.Sprintf("%s: %s", x.x.Verdict, x.x.Reason)
	}
	return ""
}

// checked runs one measurement, checks it with check (which returns what
// is wrong, "" if nothing), and when it is wrong on a host that did not
// keep time runs it once more; twice so, it returns ok false and the
// reason, with the lab's measured lateness, in skips (the test goes on
// with its other points, then skips: see skipIf). A wrong verdict on a
// host that kept time fails the test.
func checked(t *testing.T, skips *[]string, name string, measure func() (run, truth), check func(run, truth) string) (run, truth, bool) {
	t.Helper()
	var why string
	for try := range 2 {
		x, tr := measure()
		bad := check(x, tr)
		if bad == "" {
			return x, tr, true
		}
		host := hostFault(x, tr)
		if host == "" {
			t.Fatalf("%s: %s (lab p99 lateness %v)", name, bad, tr.lateP99)
		}
		if x.kept != "" { // it measured the host: not a result to summarize
			if err := os.Remove(x.kept); err != nil {
				t.Fatal(err)
			}
		}
		why = fmt.Sprintf("%s (%s)", bad, host)
		t.Logf("%s, try %d: %s", name, try+1, why)
	}
	*skips = append(*skips, fmt.Sprintf("%s: %s", name, why))
	return run{}, truth{}, false
}

// skipIf skips the test when some of its runs measured the host twice,
// after the others were checked and printed.
func skipIf(t *testing.T, skips []string, total int) {
	t.Helper()
	if len(skips) > 0 {
		t.Skipf("the host was too busy for the lab twice in %d of %d runs; first: %s", len(skips), total, skips[0])
	}
}

// verdictCheck checks a run's verdict against the configured path's and
// its counted losses against the emulator's drops.
func verdictCheck(want string) func(run, truth) string {
	return func(x run, tr truth) string {
		switch {
		case want != "" && string(x.x.Verdict) != want:
			return fmt.Sprintf("verdict %s (%s), want %s from the configured path", x.x.Verdict, x.x.Reason, want)
		case x.x.Transport == "udp" && x.x.Losses > int64(tr.randomLoss+tr.queueDrops):
			return fmt.Sprintf("%d losses counted, the emulator dropped %d", x.x.Losses, tr.randomLoss+tr.queueDrops)
		}
		return ""
	}
}

// zFamily is the normal quantile of a two-sided interval that a correct
// sonde leaves about once in a thousand runs of a test, however many loss
// checks the test makes: Bonferroni's split of 0.001 over checks. A fixed
// 99.9 % per check failed a correct composition run about once in 30
// (30 checks in bench/mbm_lab.sh's default).
func zFamily(checks int) float64 {
	return math.Sqrt2 * math.Erfinv(1-0.001/float64(max(checks, 1)))
}

// near reports whether a loss m/n measured over n packets is within z
// standard errors of p.
func near(measured float64, n int64, p, z float64) bool {
	if n <= 0 {
		return false
	}
	return math.Abs(measured-p) <= z*math.Sqrt(max(p*(1-p), 1/float64(n))/float64(n))
}

// precondition is `sonde mbm --min-rate`'s default: the sustained rate a
// test must reach, as a share of the target.
const precondition = 0.9
