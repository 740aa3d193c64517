package tcptest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/tcpinfo"
	"github.com/sonde-project/sonde/internal/udptest"
)

// baseline measures the idle RTT with echo probes on the probe connection.
func (t *tester) baseline(ctx context.Context, res *model.Result) error {
	n := t.cfg.BaselineSamples
	ctx, cancel := context.WithTimeout(ctx, time.Duration(n)*t.cfg.ProbeInterval+10*time.Second)
	defer cancel()
	from := t.since(time.Now())
	udp := t.startUDP(ctx, "baseline", res)
	err := t.probe.run(ctx, t.cfg.ProbeInterval, n)
	res.BaselineUDP = t.stopUDP(udp, res)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	samples, lost := t.probe.between(from, t.since(time.Now()), 3*time.Second)
	if len(samples) < 20 {
		return fmt.Errorf("baseline: only %d of %d probes answered", len(samples), n)
	}
	res.Baseline = assemble.RTT(samples, lost)
	t.baselineMs = res.Baseline.RTTMs.Min
	if smp, err := t.probe.tcpinfo(); err == nil {
		res.Baseline.ClientMinRTTMs = float64(smp.MinRTTUs) / 1000
		res.Baseline.ClientRTTMs = float64(smp.RTTUs) / 1000
	}
	return nil
}

// startUDP starts STAMP probes for a phase, or returns nil (with a note in
// the result) when the server has no reflector or they are disabled.
func (t *tester) startUDP(ctx context.Context, name string, res *model.Result) *udptest.Probes {
	if t.cfg.NoUDP {
		return nil
	}
	p, err := udptest.StartProbes(ctx, t.ep.base.String(), udptest.ProbeOptions{
		Token: t.cfg.Token, Insecure: t.cfg.Insecure, Software: t.cfg.Software,
		TestSession: t.session.ID, Interval: t.cfg.ProbeInterval, DSCP: max(t.cfg.DSCP, 0), Name: name,
	})
	if err != nil {
		note := "UDP probes unavailable, one-way delays not measured: " + err.Error()
		if !slices.Contains(res.Notes, note) {
			res.Notes = append(res.Notes, note)
		}
		return nil
	}
	return p
}

func (t *tester) stopUDP(p *udptest.Probes, res *model.Result) *model.UDPFlow {
	if p == nil {
		return nil
	}
	f, err := p.Stop()
	if err != nil {
		res.Notes = append(res.Notes, "UDP probes: "+err.Error())
	}
	return &f
}

// finishBaseline adds the server's TCP_INFO view of the probe connection.
func (t *tester) finishBaseline(ctx context.Context, res *model.Result) {
	if res.Baseline == nil {
		return
	}
	rep, err := t.report(ctx, true)
	if err != nil {
		res.Notes = append(res.Notes, "server TCP_INFO of the probe connection unavailable: "+err.Error())
		return
	}
	assemble.ServerBaseline(res.Baseline, rep.Flows)
}

// specs are the streams a phase opens first: --streams per direction, or
// for auto four per direction (as the browser page and the speed-test
// sites open at once: a loss backoff on one of few flows on a long fat
// path costs the phase's goodput), within the server's stream limit.
func (t *tester) specs(phase string) ([]flowSpec, bool) {
	dirs := phaseDirs(phase)
	auto := t.cfg.Streams == 0
	n := t.cfg.Streams
	if auto {
		n = max(min(4, t.maxStreams()/len(dirs)), 1)
	}
	var specs []flowSpec
	for _, d := range dirs {
		for i := range n {
			specs = append(specs, flowSpec{tag: streamTag(phase, d, i), mark: t.cfg.DSCP, dir: d})
		}
	}
	return specs, auto
}

// runPhase runs a load phase (a direction or phaseBidir) with its STAMP
// probes and fetches the server's report of it. measured is false when no
// stream opened (refused, e.g. the test's byte limit is spent): nothing
// was measured, so no figures, only perr.
func (t *tester) runPhase(ctx context.Context, phase string, res *model.Result) (pr *phaseResult, udpFlow *model.UDPFlow, rep protocol.Report, perr, rerr error, measured bool) {
	specs, auto := t.specs(phase)
	udp := t.startUDP(ctx, phase, res)
	pr, perr = t.loadPhase(ctx, phase, specs, auto)
	udpFlow = t.stopUDP(udp, res)
	if len(pr.flows) == 0 {
		return pr, udpFlow, rep, t.notMeasured(phase, perr), nil, false
	}
	rep, rerr = t.report(context.WithoutCancel(ctx), false)
	return pr, udpFlow, rep, perr, rerr, true
}

// bidir runs the bidirectional phase (download and upload streams at
// once) and adds its result, even a partial one.
func (t *tester) bidir(ctx context.Context, res *model.Result) error {
	pr, udpFlow, rep, perr, rerr, measured := t.runPhase(ctx, phaseBidir, res)
	if !measured {
		return perr
	}
	var parts [2]*assemble.Phase
	errs := []error{perr, rerr}
	for i, d := range phaseDirs(phaseBidir) {
		part := pr.only(d)
		if len(part.flows) == 0 {
			continue
		}
		p := t.phase(part, rep, res.Baseline)
		parts[i] = &p
		errs = append(errs, t.limitCut(part, rep))
	}
	res.Bidir = assemble.Bidir(parts[0], parts[1])
	if res.Bidir != nil {
		res.Bidir.UDPLatency = udpFlow
	}
	return errors.Join(errs...)
}

// direction runs one load phase and adds its result, even a partial one.
func (t *tester) direction(ctx context.Context, res *model.Result, dir string) error {
	pr, udpFlow, rep, perr, rerr, measured := t.runPhase(ctx, dir, res)
	if !measured {
		return perr
	}
	d := t.assemble(pr, rep, res.Baseline)
	d.UDPLatency = udpFlow
	if dir == protocol.KindDownload {
		res.Download = d
	} else {
		res.Upload = d
	}
	return errors.Join(perr, rerr, t.limitCut(pr, rep))
}

// limitCut is the error for a phase the server's limits cut short: the
// figures stand for the part that ran, but the phase did not run as asked.
func (t *tester) limitCut(pr *phaseResult, rep protocol.Report) error {
	tags := map[string]bool{}
	for _, f := range pr.flows {
		tags[f.spec.tag] = true
	}
	cut := map[string]int{}
	for _, f := range rep.Flows {
		if f.Kind == pr.dir && tags[f.Tag] && f.Limit != "" {
			cut[f.Limit]++
		}
	}
	var errs []error
	if n := cut[protocol.LimitBytes]; n > 0 || pr.unopened > 0 {
		unopened := ""
		if pr.unopened > 0 {
			unopened = fmt.Sprintf(", %d more not opened", pr.unopened)
		}
		errs = append(errs, fmt.Errorf("%s cut short by the server's byte limit (%d bytes per test, download and upload together; %d of %d streams stopped by it%s): the figures cover only what moved before it",
			pr.dir, t.session.MaxBytes, n, len(pr.flows), unopened))
	}
	if n := cut[protocol.LimitDuration]; n > 0 {
		errs = append(errs, fmt.Errorf("%s cut short by the server's test duration limit (%.0f s; %d of %d streams stopped by it)",
			pr.dir, t.session.MaxDurationS, n, len(pr.flows)))
	}
	return errors.Join(errs...)
}

// budgetSpent tells whether err is the server's refusal of a load stream
// because the test's byte limit is spent (a 403, docs/protocol.md).
func (t *tester) budgetSpent(err error) bool {
	var re *apiclient.RefusedError
	return t.session.MaxBytes > 0 && errors.As(err, &re) && re.Status == http.StatusForbidden
}

// notMeasured is the error of a phase none of whose streams opened. A
// phase refused because an earlier one spent the test's byte limit is not
// a refused test (the earlier phase was measured and is reported), so the
// refusal is not passed on as one: the run failed in part (exit 1 in the
// CLI), it was not refused (exit 4, nothing measured).
func (t *tester) notMeasured(phase string, err error) error {
	if !t.budgetSpent(err) {
		return err
	}
	return fmt.Errorf("%s not measured: the server's byte limit (%d bytes per test, download and upload together) was spent before it began",
		phase, t.session.MaxBytes)
}

// maxStreams is the client's bound, within the server's.
func (t *tester) maxStreams() int {
	m := t.cfg.MaxStreams
	if t.session.MaxStreams > 0 {
		// One stream of the server's budget is the probe stream.
		m = min(m, t.session.MaxStreams-1)
	}
	return max(m, 1)
}

// autoStreams grows the number of streams while the aggregate goodput keeps
// growing by more than 5% per added stream and the streams are limited by a
// window or buffer rather than by the network (seed 000 had to set the
// stream count by hand).
// maxN bounds the streams of this direction.
func (t *tester) autoStreams(ctx context.Context, dir string, flows func() []*loadFlow, maxN int, add func() error) error {
	step := max(500*time.Millisecond, 4*time.Duration(t.baselineMs*float64(time.Millisecond)))
	step = min(step, t.cfg.Duration/4)
	tick := time.NewTicker(step)
	defer tick.Stop()
	lastAdd := -1.0 // goodput when the last stream was added
	var prevBytes int64
	prevAt := time.Now()
	prevInfo := map[int]model.TCPSample{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			fs := flows()
			var total int64
			for _, f := range fs {
				total += f.bytes()
			}
			goodput := float64(total-prevBytes) * 8 / now.Sub(prevAt).Seconds()
			prevBytes, prevAt = total, now
			limited := t.limited(ctx, dir, fs, prevInfo)
			if len(fs) >= maxN || !limited {
				continue
			}
			if lastAdd >= 0 && goodput <= lastAdd*1.05 {
				return nil // the last stream did not help: stop growing
			}
			lastAdd = goodput
			if err := add(); err != nil {
				if ctx.Err() != nil || t.budgetSpent(err) {
					return nil
				}
				return fmt.Errorf("add stream: %w", err)
			}
		}
	}
}

// limited reports whether, since the previous call, the senders spent more
// than half of their busy time limited by the receiver window or their send
// buffer.
func (t *tester) limited(ctx context.Context, dir string, fs []*loadFlow, prev map[int]model.TCPSample) bool {
	now := map[int]model.TCPSample{}
	if dir == protocol.KindUpload {
		for i, f := range fs {
			if s, err := tcpinfo.Get(f.conn.Conn, 0); err == nil {
				now[i] = s
			}
		}
	} else {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		l, err := t.live(lctx)
		cancel()
		if err != nil {
			return false
		}
		for _, lf := range l.Flows {
			if lf.Kind == protocol.KindDownload && !lf.Done {
				now[lf.ID] = lf.TCPInfo
			}
		}
	}
	var busy, lim uint64
	for id, s := range now {
		p, ok := prev[id]
		if !ok || s.BusyTimeUs < p.BusyTimeUs {
			continue
		}
		busy += s.BusyTimeUs - p.BusyTimeUs
		lim += (s.RwndLimitedUs - p.RwndLimitedUs) + (s.SndbufLimitedUs - p.SndbufLimitedUs)
	}
	clear(prev)
	for id, s := range now {
		prev[id] = s
	}
	return busy > 0 && lim*2 > busy
}

// classes runs one stream per QoS class at the same time, per direction.
func (t *tester) classes(ctx context.Context, res *model.Result) error {
	cr := &model.ClassesResult{DurationS: t.cfg.Duration.Seconds()}
	res.Classes = cr
	for _, dir := range t.directions() {
		specs := make([]flowSpec, len(t.cfg.Classes))
		for i, c := range t.cfg.Classes {
			specs[i] = flowSpec{tag: fmt.Sprintf("class-%s-%d", dir, i), mark: c.DSCP, port: c.Port}
		}
		udp := make([]*udptest.Probes, len(t.cfg.Classes))
		for i, c := range t.cfg.Classes {
			udp[i] = t.startClassUDP(ctx, c, res)
		}
		pr, perr := t.loadPhase(ctx, dir, specs, false)
		if len(pr.flows) == 0 {
			perr = t.notMeasured("classes "+dir, perr)
		}
		rep, rerr := t.report(context.WithoutCancel(ctx), false)
		d := t.assemble(pr, rep, nil)
		if err := t.limitCut(pr, rep); err != nil && perr == nil {
			perr = err
		}
		for i, c := range t.cfg.Classes {
			cf := model.ClassFlow{Class: c, Direction: dir, UDP: t.stopUDP(udp[i], res)}
			cf.ReceivedDSCP, cf.MarksOK = classMarks(cf.UDP, dir)
			if i < len(d.Flows) {
				cf.Bytes, cf.GoodputBps = d.Flows[i].Bytes, d.Flows[i].GoodputBps
			}
			if i < len(pr.flows) && len(pr.flows[i].selfRTT) > 0 {
				s := metrics.Summarize(pr.flows[i].selfRTT)
				cf.RTTMs = &s
			}
			cr.Flows = append(cr.Flows, cf)
		}
		if perr != nil {
			return fmt.Errorf("classes: %w", perr)
		}
		if rerr != nil {
			return fmt.Errorf("classes: %w", rerr)
		}
	}
	return nil
}

// startClassUDP starts a class's STAMP probes, marked like its TCP flow.
func (t *tester) startClassUDP(ctx context.Context, c model.Class, res *model.Result) *udptest.Probes {
	if t.cfg.NoUDP {
		return nil
	}
	p, err := udptest.StartProbes(ctx, t.ep.base.String(), udptest.ProbeOptions{
		Token: t.cfg.Token, Insecure: t.cfg.Insecure, Software: t.cfg.Software,
		TestSession: t.session.ID, Interval: t.cfg.ProbeInterval, DSCP: c.DSCP, Name: c.Name,
	})
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("class %s: UDP probes unavailable, marks not checked: %v", c.Name, err))
		return nil
	}
	return p
}

// classMarks is the DSCP that arrived in the loaded direction of a class
// (upload: at the reflector; download: at the client) and whether it is
// the one sent.
func classMarks(f *model.UDPFlow, dir string) (*int, *bool) {
	if f == nil || f.Marks == nil {
		return nil, nil
	}
	if dir == protocol.KindUpload {
		return f.Marks.AtReflectorDSCP, f.Marks.ForwardOK
	}
	return f.Marks.AtClientDSCP, f.Marks.BackwardOK
}
