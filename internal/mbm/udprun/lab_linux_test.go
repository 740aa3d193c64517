package udprun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/lab/labtest"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// Lab tests: a sonde server in the lab's server namespace (in-process,
// its sockets made there), the client in the client namespace (this test
// binary re-run there as TestLabClientHelper), one emulated link between
// them. Each verdict is checked against the link's configured loss and
// queue.

const helperEnv = "SONDE_MBMUDP_LAB_CLIENT"

type helperConfig struct {
	Server string
	Inputs mbm.Inputs
	Tests  []string
	Derate float64
}

type helperResult struct {
	Tests []model.MBMTest
	Err   string
}

// TestLabClientHelper is the client of the lab tests, run in the client
// namespace; it does nothing in a normal test run.
func TestLabClientHelper(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("the lab tests' client; runs only under them")
	}
	var hc helperConfig
	if err := json.Unmarshal([]byte(raw), &hc); err != nil {
		t.Fatal(err)
	}
	p, err := mbm.NewPlan(hc.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tests, err := Run(ctx, Config{Server: hc.Server, Software: "lab-test", Plan: p, Tests: hc.Tests, Derate: hc.Derate, ECN: true})
	out := helperResult{Tests: tests}
	if err != nil {
		out.Err = err.Error()
	}
	b, _ := json.Marshal(out)
	fmt.Printf("\nMBMRESULT %s\n", b)
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces")
	}
	if testing.Short() {
		t.Skip("lab test")
	}
}

// labRun brings up one link with spec both ways, a server behind it and
// runs tests for the target in from the client side.
func labRun(t *testing.T, name, spec string, in mbm.Inputs, tests []string, derate float64) ([]model.MBMTest, linkTruth) {
	t.Helper()
	l := labtest.OneLink(t, labtest.Options{Name: name, Both: spec, Seed: 2, Truth: true})
	sns, err := l.Namespace(lab.Server)
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Run(t, server.Config{Addr: l.ServerAddr() + ":0", PerIPPerMinute: -1, UDPAddr: "off"},
		servertest.Options{Namespace: sns, Host: l.ServerAddr()})

	hc, _ := json.Marshal(helperConfig{Server: srv.Addr, Inputs: in, Tests: tests, Derate: derate})
	cctx, ccancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer ccancel()
	cmd := l.Command(cctx, lab.Client, os.Args[0], "-test.run=^TestLabClientHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(hc))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if js, ok := strings.CutPrefix(sc.Text(), "MBMRESULT "); ok {
			var hr helperResult
			if err := json.Unmarshal([]byte(js), &hr); err != nil {
				t.Fatal(err)
			}
			if hr.Err != "" {
				t.Fatalf("client: %s", hr.Err)
			}
			for _, x := range hr.Tests {
				t.Logf("%s %s: %s (%s); n %d m %d (lost %d, CE %d), sent %d, sender %.3g/%.3g bit/s, receiver %.3g/%.3g bit/s, schedule p50 %g p99 %g µs",
					x.ID, name, x.Verdict, x.Reason, x.Packets, x.Marks, x.Losses, x.CE, x.UDP.PacketsSent, x.UDP.SenderRateBps, x.UDP.SenderMinRateBps,
					x.UDP.ReceiverRateBps, x.UDP.ReceiverMinRateBps, x.UDP.ScheduleErrorP50Us, x.UDP.ScheduleErrorP99Us)
			}
			srv.Stop()
			l.Down() // flushes the truth file
			return hr.Tests, readTruth(t, l.TruthPath)
		}
	}
	t.Fatalf("client printed no result:\n%s\n%s", stdout.String(), stderr.String())
	return nil, linkTruth{}
}

// linkTruth is what the emulator did to the data datagrams (UDP, client
// to server, larger than a feedback datagram): its ground truth.
type linkTruth struct {
	Packets, Delivered, RandomLoss, QueueDrops int
	// FirstDropQueue is the queue (packets) the first dropped data packet
	// found on arrival (−1: none dropped), FirstMarkQueue the same for the
	// first dropped or CE-marked one, MaxQueue the longest any found.
	FirstDropQueue, FirstMarkQueue, MaxQueue int
	// MaxLate is the longest a delivered data packet left the emulator
	// after its model time (a forwarder starved of CPU); Late the packets
	// more than 3 ms late (a 4 Mbit/s packet time).
	MaxLate time.Duration
	Late    int
	// Half duplex: the mean medium wait of the data packets that found a
	// queue (each waited for the feedback on the medium, see
	// emulator.HalfDuplex), of the feedback datagrams (server to client),
	// and the feedback's mean size.
	DataMediumWait, FeedbackMediumWait time.Duration
	FeedbackBytes                      float64
}

func readTruth(t *testing.T, path string) linkTruth {
	t.Helper()
	_, recs, err := emulator.ReadTruthFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lt := linkTruth{FirstDropQueue: -1, FirstMarkQueue: -1}
	var firstDrop, firstMark uint64
	var queued, feedback int
	var dataWait, fbWait time.Duration
	for _, r := range recs {
		if r.Dir == emulator.Down && r.Proto == 17 && r.Length < 1000 && r.Fate == emulator.Delivered {
			feedback++
			fbWait += r.MediumWait
			lt.FeedbackBytes += float64(r.Length)
		}
		if r.Dir != emulator.Up || r.Proto != 17 || r.Length < 1000 {
			continue
		}
		if r.Fate == emulator.Delivered && r.QPackets > 0 {
			queued++
			dataWait += r.MediumWait
		}
		lt.Packets++
		lt.MaxQueue = max(lt.MaxQueue, int(r.QPackets))
		if r.Fate == emulator.Delivered && r.Sent >= 0 && r.Due >= 0 {
			lt.MaxLate = max(lt.MaxLate, r.Sent-r.Due)
			if r.Sent-r.Due > 3*time.Millisecond {
				lt.Late++
			}
		}
		if (r.Fate != emulator.Delivered || r.Flags&emulator.FlagMarked != 0) && (firstMark == 0 || r.Seq < firstMark) {
			firstMark, lt.FirstMarkQueue = r.Seq, int(r.QPackets)
		}
		if r.Fate != emulator.Delivered && (firstDrop == 0 || r.Seq < firstDrop) {
			firstDrop, lt.FirstDropQueue = r.Seq, int(r.QPackets) // records come in fate order, not arrival order
		}
		switch r.Fate {
		case emulator.Delivered:
			lt.Delivered++
		case emulator.DropLoss:
			lt.RandomLoss++
		case emulator.DropQueue:
			lt.QueueDrops++
		}
	}
	if queued > 0 {
		lt.DataMediumWait = dataWait / time.Duration(queued)
	}
	if feedback > 0 {
		lt.FeedbackMediumWait = fbWait / time.Duration(feedback)
		lt.FeedbackBytes /= float64(feedback)
	}
	t.Logf("truth: %+v", lt)
	return lt
}

func labInputs(rate float64, rtt time.Duration) mbm.Inputs {
	return mbm.Inputs{Target: mbm.Target{RateBps: rate, RTT: rtt, MTU: 1500, HeaderOverhead: mbm.DefaultHeaderOverhead},
		Alpha: mbm.DefaultAlpha, Beta: mbm.DefaultBeta}
}

// TestLabLoss: 8.1.1 at 4 Mbit/s, 10 ms (W 4, R 48, p0 2.1 %, p1 8.3 %)
// over a 50 Mbit/s link with 15 % random loss FAILs, with the configured
// loss inside the estimate's interval and no more losses than the
// emulator made; the same link without loss PASSes with no mark at all.
func TestLabLoss(t *testing.T) {
	needRoot(t)
	in := labInputs(4e6, 10*time.Millisecond)
	const configured = 0.15
	lossy, truth := labConforming(t, "mbmloss", "rate=50Mbit delay=5ms loss=15%", in, TestPaced, 1)
	if lossy.Verdict != "FAIL" {
		t.Fatalf("15 %% loss, p1 8.3 %%: %s (%s)", lossy.Verdict, lossy.Reason)
	}
	if configured < lossy.LossLow || configured > lossy.LossHigh || lossy.CE != 0 {
		t.Errorf("configured loss %g outside the estimate's interval %g to %g (m %d of n %d, CE %d)", configured, lossy.LossLow, lossy.LossHigh, lossy.Marks, lossy.Packets, lossy.CE)
	}
	if lossy.Losses == 0 || lossy.Losses > int64(truth.RandomLoss+truth.QueueDrops) {
		t.Errorf("%d losses counted, the emulator dropped %d", lossy.Losses, truth.RandomLoss+truth.QueueDrops)
	}
	clean, truth := labConforming(t, "mbmclean", "rate=50Mbit delay=5ms", in, TestPaced, 1)
	if clean.Verdict != "PASS" || clean.Marks != 0 || truth.Delivered != truth.Packets {
		t.Fatalf("no loss: %s (%s), %d marks; truth %+v", clean.Verdict, clean.Reason, clean.Marks, truth)
	}
}

// TestLabShortQueue is seed 002's sustained-burst result: a 10-packet
// queue at 6 Mbit/s carries 5 Mbit/s paced at 50 ms (W = 22: 8.1.1 PASS,
// nothing queues) but not bursts of W packets at derate 1.0 (8.5.1 FAIL:
// a burst longer than the queue loses its tail). A low rate keeps the
// pattern's timing within reach of a busy 2-core host.
func TestLabShortQueue(t *testing.T) {
	needRoot(t)
	in := labInputs(5e6, 50*time.Millisecond)
	const queue = 10
	p, _ := mbm.NewPlan(in)
	if p.W <= queue {
		t.Fatalf("W %d: the bursts must be longer than the %d-packet queue", p.W, queue)
	}
	spec := fmt.Sprintf("rate=6Mbit delay=5ms limit=%dp", queue)
	paced, truth := labConforming(t, "mbmqpaced", spec, in, TestPaced, 1)
	if paced.Verdict != "PASS" || truth.QueueDrops != 0 {
		t.Errorf("8.1.1 on a %d-packet queue: %s (%s); truth %+v", queue, paced.Verdict, paced.Reason, truth)
	}
	burst, truth := labConforming(t, "mbmqburst", spec, in, TestBursts, 1)
	if burst.Verdict != "FAIL" || burst.Losses == 0 || truth.QueueDrops == 0 || burst.Losses > int64(truth.QueueDrops) {
		t.Errorf("8.5.1 at derate 1 (bursts of %d) on a %d-packet queue: %s (%s), %d losses; truth %+v", p.W, queue, burst.Verdict, burst.Reason, burst.Losses, truth)
	}
}

// labConforming runs one test in its own lab, once more if the pattern
// did not reach the link as sent: the runner's own conformance check said
// so (INCONCLUSIVE or ERROR, never a path verdict), or the emulator's
// queue dropped packets of a paced test whose rate is below the link's
// (the lab's forwarder, starved of CPU, took in a backlog at once). If it
// happens twice the test is skipped with the reason, rather than judged
// on a pattern the link did not see.
func labConforming(t *testing.T, name, spec string, in mbm.Inputs, test string, derate float64) (model.MBMTest, linkTruth) {
	t.Helper()
	var why string
	for try := range 2 {
		res, truth := labRun(t, fmt.Sprintf("%s%d", name, try), spec, in, []string{test}, derate)
		if len(res) != 1 {
			t.Fatalf("%d results", len(res))
		}
		x := res[0]
		switch {
		case hostReason(res) != "":
			why = hostReason(res)
		case test == TestPaced && truth.QueueDrops > 0 && truth.RandomLoss == 0:
			why = fmt.Sprintf("the link's queue dropped %d packets of a paced flow below its rate: the forwarder fell behind", truth.QueueDrops)
		default:
			return x, truth
		}
		t.Logf("try %d: %s", try+1, why)
	}
	t.Skipf("the host was too busy for the lab twice: %s", why)
	return model.MBMTest{}, linkTruth{}
}

// TestLabWindowed: 8.1.2 holds W packets in flight. Over a 30 ms round
// trip, a 10 ms target (W = 4) cannot carry 4 Mbit/s: FAIL, window-
// limited; a 50 ms target (W = 18) can: PASS.
func TestLabWindowed(t *testing.T) {
	needRoot(t)
	const spec = "rate=50Mbit delay=15ms"
	short, _ := labConforming(t, "mbmwshort", spec, labInputs(4e6, 10*time.Millisecond), TestWindowed, 1)
	if short.Verdict != "FAIL" || !strings.HasPrefix(short.Reason, "window-limited") || short.Marks != 0 {
		t.Errorf("W 4 over 30 ms: %s (%s), %d marks", short.Verdict, short.Reason, short.Marks)
	}
	long, _ := labConforming(t, "mbmwlong", spec, labInputs(4e6, 50*time.Millisecond), TestWindowed, 1)
	if long.Verdict != "PASS" {
		t.Errorf("W 18 over 30 ms: %s (%s)", long.Verdict, long.Reason)
	}
}
