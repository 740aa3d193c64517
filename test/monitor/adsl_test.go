//go:build linux

package monitor

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
)

// The adsl scenario's schedule, from the lab's start (its schedules' time
// 0), in units of the scale (see scale): idle, a CUBIC upload, idle, a
// CUBIC download, idle, the link down for 30 s (both directions lose
// every packet, a lab schedule step), idle.
const (
	upAt      = 13 * time.Second
	upFor     = 20 * time.Second
	downAt    = 44 * time.Second
	downFor   = 15 * time.Second
	outageAt  = 70 * time.Second
	outageFor = 30 * time.Second // never scaled: the 30 s
	endAt     = 112 * time.Second
	// settle: a saturating CUBIC flow needs a few seconds (slow start, its
	// first overshoot) before its sawtooth holds the buffer near full;
	// drain: after a load the buffer empties (430 ms up) and the
	// classifier's 1 s hold ends.
	settle = 4 * time.Second
	drain  = 2 * time.Second
)

// scale stretches the phases: SONDE_MONITOR_LAB_SCALE (1 to 10, default
// 1), which bench/monitor_lab.sh sets. Above 1 the idle times before and
// after the outage are 6 minutes, more than the 5 steady minutes the
// baseline-step detector needs on each side, so "no step after the
// outage" is the detector's own verdict and not only the level check.
func scale(t *testing.T) time.Duration {
	v := os.Getenv("SONDE_MONITOR_LAB_SCALE")
	if v == "" {
		return 1
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 1 || k > 10 {
		t.Fatalf("SONDE_MONITOR_LAB_SCALE=%q: want an integer 1 to 10", v)
	}
	return time.Duration(k)
}

// profileWithSchedule returns a built-in profile with schedule steps added
// to every link (both directions).
func profileWithSchedule(t *testing.T, name string, steps ...string) lab.Profile {
	t.Helper()
	for _, s := range lab.Builtin() {
		if s.Name != name {
			continue
		}
		s.Links = append([]lab.ScenarioLink(nil), s.Links...)
		for i := range s.Links {
			s.Links[i].Schedule = append(append([]string(nil), s.Links[i].Schedule...), steps...)
		}
		p, err := s.Parse()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Fatalf("no built-in profile %q", name)
	return lab.Profile{}
}

// TestMonitorADSL is the lab proof on seed 001's line: the daemon
// (the built binary) probes a sonde server at 10/s across the adsl lab
// with the client's link device as --interface and the profile's rates as
// --up/--down, and the stored probes are checked against the profile.
func TestMonitorADSL(t *testing.T) {
	needLab(t)
	k := scale(t)
	preIdle, tail := outageAt-downAt-downFor, endAt-outageAt-outageFor
	if k > 1 {
		// Steady idle minutes on both sides of the outage: the step
		// detector compares 5 minutes before with 5 after.
		preIdle, tail = 6*time.Minute, 6*time.Minute
	}
	upAt, upFor, downAt, downFor := k*upAt, k*upFor, k*downAt, k*downFor
	outageAt := downAt + downFor + preIdle
	endAt := outageAt + outageFor + tail
	p := profileWithSchedule(t, "adsl",
		fmt.Sprintf("%s:loss=1", outageAt), fmt.Sprintf("%s:loss=0", outageAt+outageFor))
	r := startRig(t, p)
	start := r.lab.Start
	g := r.truth
	if len(p.Links) != 1 {
		t.Fatalf("adsl has %d links, this test reads one", len(p.Links))
	}
	link := p.Links[0]

	sleepUntil(start.Add(upAt))
	upFrom, upTo := r.load(upFor, false)
	sleepUntil(start.Add(downAt))
	downFrom, downTo := r.load(downFor, true)
	sleepUntil(start.Add(endAt))
	r.stop()
	end := time.Now()
	outFrom, outTo := start.Add(outageAt), start.Add(outageAt+outageFor)
	if upTo.After(start.Add(downAt)) || downTo.After(outFrom) {
		t.Fatalf("the loads overran their phases (upload %v-%v, download %v-%v from the lab's start): host overloaded?",
			upFrom.Sub(start), upTo.Sub(start), downFrom.Sub(start), downTo.Sub(start))
	}

	// Ground truth from the profile.
	base := time.Duration(g.BaseRTTMs * float64(time.Millisecond))
	probeSer := serialisation(probeWire, g.UpRateBps) + serialisation(probeWire, g.DownRateBps)
	idleTruth := base + probeSer
	upBufBits := float64(g.UpQueueBytes * 8)
	upBufDelay := time.Duration(upBufBits / g.UpRateBps * 1e9)
	downBufBits := float64(g.DownQueueBytes * 8)
	if upBufBits == 0 || downBufBits == 0 {
		t.Fatalf("adsl's queues are not limited in bytes (%+v): this test reads byte limits", g)
	}
	mtuUp := serialisation(g.MTU, g.UpRateBps)
	tb := &table{t: t}

	// Idle: median RTT near the base RTT (plus the probe's own
	// serialisation), before and after the loads.
	idle1 := r.report(r.started.Add(3*time.Second), upFrom)
	med1 := time.Duration(idle1.Stats[0].RTT.P50Ns)
	tb.check("idle median RTT (before the loads)", ms(med1), ms(idleTruth)+" (base "+ms(base)+")", "±1.5 ms",
		math.Abs(float64(med1-idleTruth)) <= float64(1500*time.Microsecond))

	// Upload: the median sits high in the buffer. CUBIC halves nothing:
	// after a loss its window drops to 0.7×, so with a buffer of ~22 BDP
	// the queue swings between ~0.7 and 1 × the buffer; the median
	// delay lies in [0.7 × buffer delay, buffer delay + one MTU in
	// service] above the idle RTT.
	up := r.report(upFrom.Add(settle), upTo)
	upMed := time.Duration(up.Stats[0].RTT.P50Ns) - med1
	tb.check("upload median RTT − idle", ms(upMed), ms(upBufDelay)+" (buffer)", "[0.7, 1]×buffer + 1 MTU",
		upMed >= upBufDelay*7/10 && upMed <= upBufDelay+mtuUp)

	// R(200 ms) per load state over the run before the outage (the
	// outage's lost probes are labelled idle: nothing loads the link).
	pre := r.report(r.started.Add(3*time.Second), outFrom.Add(-time.Second))
	const l200 = 200 * time.Millisecond
	if upBufDelay+base <= l200 {
		t.Fatalf("the profile's uplink buffer (%v) + base RTT is under %v: R(200 ms) would not fall", upBufDelay, l200)
	}
	if b, ok := byLoad(pre.Stats[0], model.LoadUp); !ok {
		tb.check("R(200 ms) up-saturated", "none labelled", "low", "< 0.25", false)
	} else if rel, ok := rAt(b.Reliability, l200); !ok {
		t.Fatal("no R(200 ms) in the report")
	} else {
		tb.check("R(200 ms) up-saturated", fmt.Sprintf("%.4f (n %d)", rel.R, rel.Sent), "low", "< 0.25", rel.R < 0.25)
	}
	if b, ok := byLoad(pre.Stats[0], model.LoadIdle); !ok {
		tb.check("R(200 ms) idle", "none labelled", "high", "≥ 0.99", false)
	} else if rel, ok := rAt(b.Reliability, l200); ok {
		tb.check("R(200 ms) idle", fmt.Sprintf("%.4f (n %d)", rel.R, rel.Sent), "high", "≥ 0.99", rel.R >= 0.99)
	}

	// The upload's loaded episode: inferred buffer within 10 % of the
	// configured one, drop-tail. From the analysis of the stored probes
	// with the capacities, and from the events the daemon wrote itself.
	epUp, ok := episode(pre.Events, model.LoadUp)
	if !ok {
		tb.check("upload episode", "none", "one", "present", false)
	} else {
		buf := epUp.Detail["buffer_bits"]
		tb.check("inferred uplink buffer (report)", fmt.Sprintf("%.1f kbit", buf/1e3), fmt.Sprintf("%.1f kbit", upBufBits/1e3), "±10 %",
			math.Abs(buf-upBufBits) <= 0.1*upBufBits)
		tb.check("uplink queue class (report)", queueClass(epUp), g.UpQdisc, "drop-tail", queueClass(epUp) == "drop-tail")
	}
	stored := r.storedEvents()
	if ep, ok := episode(stored, model.LoadUp); !ok {
		tb.check("upload episode (daemon's event)", "none", "one", "present", false)
	} else {
		buf := ep.Detail["buffer_bits"]
		tb.check("inferred uplink buffer (daemon)", fmt.Sprintf("%.1f kbit", buf/1e3), fmt.Sprintf("%.1f kbit", upBufBits/1e3), "±10 %",
			math.Abs(buf-upBufBits) <= 0.1*upBufBits)
		tb.check("uplink queue class (daemon)", queueClass(ep), g.UpQdisc, "drop-tail", queueClass(ep) == "drop-tail")
	}
	// The download: shown, and its episode's direction checked.
	down := r.report(downFrom.Add(settle), downTo)
	downMed := time.Duration(down.Stats[0].RTT.P50Ns) - med1
	downBufDelay := time.Duration(downBufBits / g.DownRateBps * 1e9)
	tb.check("download median RTT − idle", ms(downMed), ms(downBufDelay)+" (buffer)", "[0.7, 1]×buffer + 1 MTU",
		downMed >= downBufDelay*7/10 && downMed <= downBufDelay+serialisation(g.MTU, g.DownRateBps))
	if ep, ok := episode(pre.Events, model.LoadDown); !ok {
		tb.check("download episode", "none", "one", "present", false)
	} else {
		buf := ep.Detail["buffer_bits"]
		tb.check("inferred downlink buffer (report)", fmt.Sprintf("%.1f kbit", buf/1e3), fmt.Sprintf("%.1f kbit", downBufBits/1e3), "±10 %",
			math.Abs(buf-downBufBits) <= 0.1*downBufBits)
	}

	// The outage, through the CLI's report over the whole run: one link
	// outage. A probe fails when it or its reply meets the down link: sent
	// in [down − (up delay + its serialisation), up again), so the
	// round-trip outage lasts the scheduled span plus that one-way time;
	// the detector's figure is within one probe interval of it.
	all := r.cliReport(r.started, end)
	outs := events(all, model.EventOutage)
	dUp := link.Up.Delay + serialisation(probeWire, g.UpRateBps)
	outTruth := outageFor + dUp
	if len(outs) != 1 {
		tb.check("outage events", fmt.Sprint(len(outs)), "1", "exactly 1", false)
	} else {
		o := outs[0]
		d := time.Duration(o.EndNs - o.StartNs)
		tb.check("outage duration", fmt.Sprintf("%.3f s", d.Seconds()), fmt.Sprintf("%.3f s", outTruth.Seconds()), "± 1 probe interval",
			math.Abs(float64(d-outTruth)) <= float64(interval))
		st := time.Unix(0, o.StartNs)
		tb.check("outage start", fmt.Sprintf("%+.3f s", st.Sub(outFrom).Seconds()), fmt.Sprintf("%+.3f s", (-dUp).Seconds()), "± 1 probe interval",
			math.Abs(float64(st.Sub(outFrom)+dUp)) <= float64(interval))
	}
	// No fake baseline step after it: none reported, the idle level after
	// the outage is the level before, and no answered probe after it reads
	// a probe interval (or more) high, as a reply matched to the wrong
	// send would. (The step detector needs 5 steady minutes each side, so
	// in this 2-minute run the level and the maximum carry the check;
	// bench/monitor_lab.sh runs long enough for the detector itself.)
	steps := events(all, model.EventBaselineStep)
	tb.check("baseline steps", fmt.Sprint(len(steps)), "0", "0", len(steps) == 0)
	idle4 := r.report(outTo.Add(drain), end)
	med4 := time.Duration(idle4.Stats[0].RTT.P50Ns)
	tb.check("idle median RTT after the outage", ms(med4), ms(med1)+" (before)", "±1 ms",
		math.Abs(float64(med4-med1)) <= float64(time.Millisecond))
	max4 := time.Duration(idle4.Stats[0].RTT.MaxNs)
	tb.check("max RTT after the outage", ms(max4), ms(idleTruth), "< truth + interval/2", max4 < idleTruth+interval/2)
	tb.log(fmt.Sprintf("monitor across lab %s (seed %d): measured vs the profile's truth", p.Name, r.lab.Seed))
}
