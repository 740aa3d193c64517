package spinbit

import (
	"math/rand/v2"
	"slices"
	"testing"
)

const ms = int64(1e6)

// pkt is one observed short-header packet.
type pkt struct {
	t    int64
	dir  uint8
	spin bool
}

// wave is a spinning connection seen by an observer: direction 0 (client →
// server) flips at t0, t0+R, ...; direction 1 reflects each flip side later
// (observer → server → observer), so the full RTT is R and the components
// are side and R−side. Packets leave every gap in both directions.
type wave struct {
	r, side, gap, dur int64
	// extra returns an additional delay of edge k (both directions from
	// there on), to model a path change or a late endpoint.
	extra func(k int) int64
}

// edges lists direction d's edge times.
func (w wave) edges(d uint8) []int64 {
	var e []int64
	t := int64(10 * ms)
	for k := 0; t < w.dur; k++ {
		if w.extra != nil {
			t += w.extra(k)
		}
		if d == 1 {
			e = append(e, t+w.side)
		} else {
			e = append(e, t)
		}
		t += w.r
	}
	return e
}

// packets renders the wave: each packet carries the parity of the edges at
// or before it.
func (w wave) packets() []pkt {
	var out []pkt
	for d := range uint8(2) {
		e := w.edges(d)
		for t := int64(d) * w.gap / 2; t < w.dur; t += w.gap {
			n, _ := slices.BinarySearch(e, t+1)
			out = append(out, pkt{t, d, n%2 == 1})
		}
	}
	slices.SortStableFunc(out, func(a, b pkt) int { return int(a.t - b.t) })
	return out
}

func run(ps []pkt) *Observer {
	o := &Observer{}
	for i, p := range ps {
		o.Packet(p.dir, p.t, p.spin, uint64(i))
	}
	return o
}

// valid returns the valid samples of one kind and direction.
func valid(o *Observer, k Kind, dir uint8) []int64 {
	var v []int64
	for _, s := range o.Samples {
		if s.Kind == k && s.Dir == dir && s.Flag == Valid {
			v = append(v, s.RTT)
		}
	}
	return v
}

func flags(o *Observer) map[Flag]int {
	m := map[Flag]int{}
	for _, s := range o.Samples {
		m[s.Flag]++
	}
	return m
}

func near(t *testing.T, what string, got []int64, want, tol int64) {
	t.Helper()
	if len(got) == 0 {
		t.Errorf("%s: no valid samples", what)
		return
	}
	for _, g := range got {
		if g < want-tol || g > want+tol {
			t.Errorf("%s: sample %.3f ms, want %.3f ± %.3f", what, float64(g)/1e6, float64(want)/1e6, float64(tol)/1e6)
			return
		}
	}
}

func TestFullAndComponents(t *testing.T) {
	w := wave{r: 20 * ms, side: 15 * ms, gap: ms / 10, dur: 1000 * ms}
	o := run(w.packets())
	if st := o.Finish(); st != Spinning {
		t.Fatalf("state %v", st)
	}
	tol := w.gap
	near(t, "full up", valid(o, Full, 0), w.r, tol)
	near(t, "full down", valid(o, Full, 1), w.r, tol)
	near(t, "server side", valid(o, Component, 0), w.side, tol)
	near(t, "client side", valid(o, Component, 1), w.r-w.side, tol)
	// ~50 periods: nearly all samples valid, the first ones flagged.
	if n := len(valid(o, Full, 0)); n < 45 {
		t.Errorf("%d valid full-up samples of ~50", n)
	}
	f := flags(o)
	if f[FirstEdge] == 0 || f[TooLow]+f[TooHigh]+f[AppLimited]+f[CIDChange]+f[NotSpinning] != 0 {
		t.Errorf("flags %v", f)
	}
	// The first sample of each kind is flagged: the handshake's timing.
	for _, s := range o.Samples[:2] {
		if s.Flag != FirstEdge {
			t.Errorf("first samples: %+v", o.Samples[:2])
		}
	}
	// Full samples with a reflection name three packets in time order.
	for _, s := range o.Samples {
		if s.Kind == Full && s.N == 3 && !(s.IDs[0] < s.IDs[1] && s.IDs[1] < s.IDs[2]) {
			t.Fatalf("ids %v", s.IDs)
		}
	}
}

// TestReorderingGlitch: a packet with the old value just after an edge (or
// a new value just before it) is reordering, not two more edges.
func TestReorderingGlitch(t *testing.T) {
	w := wave{r: 20 * ms, side: 10 * ms, gap: ms / 10, dur: 500 * ms}
	ps := w.packets()
	clean := run(slices.Clone(ps))
	clean.Finish()
	// Swap the spin value of the packet right after every direction-0
	// edge with the one before it: the edge packet arrives late.
	glitched := slices.Clone(ps)
	type pair struct{ before, at int }
	var edges []pair
	prev := -1
	for i, p := range ps {
		if p.dir != 0 {
			continue
		}
		if prev >= 0 && ps[prev].spin != p.spin {
			edges = append(edges, pair{prev, i})
		}
		prev = i
	}
	for _, e := range edges {
		glitched[e.before].spin, glitched[e.at].spin = glitched[e.at].spin, glitched[e.before].spin
	}
	swaps := len(edges)
	o := run(glitched)
	if st := o.Finish(); st != Spinning {
		t.Fatalf("state %v", st)
	}
	_, e0, g0 := o.Counts(0)
	_, ce0, _ := clean.Counts(0)
	if g0 < swaps/2 || e0 != ce0 {
		t.Errorf("%d swaps: %d glitches, %d edges (clean %d)", swaps, g0, e0, ce0)
	}
	near(t, "full up", valid(o, Full, 0), w.r, 2*w.gap)
}

// TestTooLowTooHigh: a single implausible period is rejected; a change
// that persists is accepted on its third sample.
func TestTooLowTooHigh(t *testing.T) {
	high := wave{r: 20 * ms, side: 10 * ms, gap: ms / 10, dur: 1500 * ms, extra: func(k int) int64 {
		switch k {
		case 30:
			return 60 * ms // one period 80 ms: > 3 × 20 ms median
		}
		return 0
	}}
	o := run(high.packets())
	o.Finish()
	if f := flags(o); f[TooHigh] == 0 {
		t.Errorf("one 80 ms period in 20 ms ones: flags %v", f)
	}
	for _, v := range valid(o, Full, 0) {
		if v > 30*ms {
			t.Errorf("valid %.1f ms sample", float64(v)/1e6)
		}
	}
	// The RTT jumps from 10 to 50 ms for good: after persistCount
	// samples the new level is accepted.
	jump := wave{r: 10 * ms, side: 5 * ms, gap: ms / 10, dur: 600 * ms}
	ps := jump.packets()
	later := wave{r: 50 * ms, side: 25 * ms, gap: ms / 10, dur: 2000 * ms}
	for _, p := range later.packets() {
		if p.t > 700*ms {
			ps = append(ps, pkt{p.t, p.dir, p.spin})
		}
	}
	o = run(ps)
	o.Finish()
	v := valid(o, Full, 0)
	if len(v) == 0 || v[len(v)-1] < 45*ms {
		t.Errorf("50 ms level not accepted: last valid %v", v[max(0, len(v)-3):])
	}
	// Too low: two edges 1 ms apart would need spurious confirmation;
	// a period a third of the others is a late-seen edge.
	low := wave{r: 30 * ms, side: 15 * ms, gap: ms / 10, dur: 1500 * ms, extra: func(k int) int64 {
		if k == 30 {
			return -20 * ms // one 10 ms period
		}
		return 0
	}}
	o = run(low.packets())
	o.Finish()
	if f := flags(o); f[TooLow] == 0 {
		t.Errorf("one 10 ms period in 30 ms ones: flags %v", f)
	}
}

// TestAppLimited: the server stops sending for a while and reflects the
// edge only when it resumes; that sample is flagged, the others are not.
func TestAppLimited(t *testing.T) {
	w := wave{r: 20 * ms, side: 10 * ms, gap: ms / 10, dur: 1000 * ms}
	ps := w.packets()
	// Direction 1 (server → client) is silent for 12 ms before the
	// reflected edge at 10+20·25+10 = 520 ms; the edge itself is then
	// seen 8 ms late, when the server resumes.
	edge := int64(520 * ms)
	var out []pkt
	for _, p := range ps {
		if p.dir == 1 && p.t > edge-12*ms && p.t < edge+8*ms {
			continue
		}
		out = append(out, p)
	}
	o := run(out)
	o.Finish()
	if f := flags(o); f[AppLimited] == 0 {
		t.Fatalf("flags %v", f)
	}
	for _, s := range o.Samples {
		if s.Flag == Valid && s.RTT > w.r+w.gap && s.Kind == Full {
			t.Errorf("late sample %.2f ms is valid", float64(s.RTT)/1e6)
		}
	}
}

func TestNotSpinning(t *testing.T) {
	// Constant: spin disabled and zero (or greased to a constant).
	var ps []pkt
	for i := range 400 {
		ps = append(ps, pkt{int64(i) * ms, uint8(i % 2), false})
	}
	o := run(ps)
	if st := o.Finish(); st != Constant || len(o.Samples) != 0 {
		t.Errorf("constant: %v, %d samples", st, len(o.Samples))
	}
	// Random per-packet values (quinn's "disabled" spin).
	rng := rand.New(rand.NewPCG(1, 2))
	ps = ps[:0]
	for i := range 2000 {
		ps = append(ps, pkt{int64(i) * ms / 4, uint8(i % 2), rng.IntN(2) == 1})
	}
	o = run(ps)
	if st := o.Finish(); st != Random {
		t.Fatalf("random: %v", st)
	}
	if f := flags(o); f[NotSpinning] != len(o.Samples) || len(o.Samples) == 0 {
		t.Errorf("random: flags %v of %d samples", f, len(o.Samples))
	}
	// Too few packets: unknown, nothing rejected for that.
	o = run(ps[:10])
	if st := o.Finish(); st != Unknown {
		t.Errorf("10 packets: %v", st)
	}
}

func TestCIDChange(t *testing.T) {
	w := wave{r: 20 * ms, side: 10 * ms, gap: ms / 10, dur: 600 * ms}
	o := &Observer{}
	reset := false
	for i, p := range w.packets() {
		if !reset && p.t >= 300*ms && p.dir == 0 {
			o.ResetDir(0)
			reset = true
		}
		o.Packet(p.dir, p.t, p.spin, uint64(i))
	}
	o.Finish()
	n := 0
	for _, s := range o.Samples {
		if s.Flag == CIDChange {
			n++
			if s.Kind != Full || s.Dir != 0 || s.T < 300*ms {
				t.Errorf("cid-change sample %+v", s)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d cid-change samples, want 1", n)
	}
}

// TestSparseReflection: one direction sends rarely (an ACK-only stream
// seen every 4 ms); full samples still find the reflected edge.
func TestSparseReflection(t *testing.T) {
	w := wave{r: 20 * ms, side: 12 * ms, gap: ms / 10, dur: 800 * ms}
	var ps []pkt
	for _, p := range w.packets() {
		if p.dir == 1 && p.t%(4*ms) >= w.gap {
			continue
		}
		ps = append(ps, p)
	}
	o := run(ps)
	o.Finish()
	withRefl := 0
	for _, s := range o.Samples {
		if s.Kind == Full && s.Dir == 0 && s.Flag == Valid && s.N == 3 {
			withRefl++
		}
	}
	if v := valid(o, Full, 0); len(v) == 0 || withRefl < len(v)*9/10 {
		t.Errorf("%d of %d valid full-up samples have the reflected edge", withRefl, len(v))
	}
}

// FuzzObserver: arbitrary packet sequences never panic and samples and
// loss-bit reports are consistent.
func FuzzObserver(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0xff, 0x80, 7})
	f.Fuzz(func(t *testing.T, b []byte) {
		o := &Observer{}
		var lo LossObserver
		var tm int64
		for i, c := range b {
			lo.Packet(c>>7, c)
			tm += int64(c&0x1f) * ms / 4
			if c == 0xee {
				o.ResetDir(uint8(i))
			}
			o.Packet(c>>7, tm, c&0x40 != 0, uint64(i))
		}
		o.Finish()
		for _, s := range o.Samples {
			if s.RTT < 0 || s.T > tm || s.N < 2 || s.N > 3 {
				t.Fatalf("%+v", s)
			}
		}
		for d := range uint8(2) {
			r := lo.Result(d)
			if r.Present && (r.Blocks < 3 || r.Expected < r.Blocks*QPeriod || r.Seen > r.Packets) {
				t.Fatalf("loss bits %+v", r)
			}
		}
	})
}

// TestLateConfirmation: the server → client direction is sparse (a packet
// every 4 ms, one of them right at each server edge) and the client
// reflects within 2 ms, so the client's edge is confirmed before the
// server's edge it reflects (which waits 4 ms for its second packet). Both
// component samples must still be produced for every period.
func TestLateConfirmation(t *testing.T) {
	w := wave{r: 20 * ms, side: 18 * ms, gap: ms / 20, dur: 1000 * ms}
	var ps []pkt
	for _, p := range w.packets() {
		if p.dir == 1 && p.t%(4*ms) >= w.gap {
			continue
		}
		ps = append(ps, p)
	}
	o := run(ps)
	o.Finish()
	full, server, client := len(valid(o, Full, 0)), valid(o, Component, 0), valid(o, Component, 1)
	if len(server) < full*9/10 || len(client) < full*9/10 {
		t.Errorf("%d full-up samples, %d server-side, %d client-side", full, len(server), len(client))
	}
	near(t, "server side", server, w.side, w.gap)
	near(t, "client side", client, w.r-w.side, w.gap)
}

// TestDirectionClassification: each direction is judged on its own, and a
// flow spins only when both flip at RTT scale with alternating edges.
func TestDirectionClassification(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// Packets alternate between the directions every 250 µs; val gives a
	// direction's spin value for packet i.
	gen := func(n int, val func(d uint8, i int) bool) []pkt {
		var ps []pkt
		for i := range n {
			d := uint8(i % 2)
			ps = append(ps, pkt{int64(i) * ms / 4, d, val(d, i)})
		}
		return ps
	}
	random := func(uint8, int) bool { return rng.IntN(2) == 1 }
	cases := []struct {
		name    string
		ps      []pkt
		flow    State
		d0, d1  State
		rejects bool
	}{
		{"random up, constant down", gen(4000, func(d uint8, i int) bool { return d == 0 && random(d, i) }), Random, Random, Constant, false},
		{"constant up, random down", gen(4000, func(d uint8, i int) bool { return d == 1 && random(d, i) || d == 0 }), Random, Constant, Random, true},
		{"both random", gen(4000, random), Random, Random, Random, true},
		// The random side sends one packet in nine (a browser's ACKs
		// against a busy constant server): flips are a small fraction
		// of all packets, which a flow-wide rate test took for a spin.
		{"sparse random ACKs, busy constant server", func() []pkt {
			var ps []pkt
			for i := range 9000 {
				p := pkt{int64(i) * ms / 4, 1, false}
				if i%9 == 0 {
					p.dir, p.spin = 0, random(0, i)
				}
				ps = append(ps, p)
			}
			return ps
		}(), Random, Random, Constant, true},
		{"both constant", gen(4000, func(d uint8, _ int) bool { return d == 1 }), Constant, Constant, Constant, false},
		// One packet in 16 random (the RFC's minimum for stacks that
		// disable the spin on some paths), the rest constant.
		{"sparse random up", gen(8000, func(d uint8, i int) bool { return d == 0 && i%32 == 0 && random(d, i) }), Random, Random, Constant, false},
	}
	for _, c := range cases {
		o := run(c.ps)
		st := o.Finish()
		if st != c.flow || o.DirState(0) != c.d0 || o.DirState(1) != c.d1 {
			t.Errorf("%s: flow %v (%v/%v), want %v (%v/%v); alternation %d of %d", c.name, st, o.DirState(0), o.DirState(1),
				c.flow, c.d0, c.d1, o.alt, o.pairs)
		}
		if f := flags(o); f[NotSpinning] != len(o.Samples) || c.rejects && len(o.Samples) == 0 {
			t.Errorf("%s: flags %v of %d samples", c.name, f, len(o.Samples))
		}
	}
}

// TestSpinWithLossAndReordering: a real spin survives 5 % loss and
// reordering of adjacent packets in both directions, with a sparse
// direction too.
func TestSpinWithLossAndReordering(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(5, 6))
		w := wave{r: 25 * ms, side: 10 * ms, gap: ms / 4, dur: 3000 * ms}
		var ps []pkt
		for _, p := range w.packets() {
			if rng.IntN(20) == 0 || sparse && p.dir == 1 && p.t%(2*ms) >= w.gap {
				continue // lost before the observer, or an ACK-only direction
			}
			ps = append(ps, p)
		}
		// Reorder: swap the values of two packets of one direction in
		// a row less than 1 ms apart (the times stay: the observer sees
		// them swapped); a quarter of the packets.
		prev := [2]int{-1, -1}
		for i := range ps {
			d := ps[i].dir
			if j := prev[d]; j >= 0 && ps[i].t-ps[j].t < ms && rng.IntN(4) == 0 {
				ps[j].spin, ps[i].spin = ps[i].spin, ps[j].spin
			}
			prev[d] = i
		}
		o := run(ps)
		if st := o.Finish(); st != Spinning || o.DirState(0) != Spinning || o.DirState(1) != Spinning {
			t.Errorf("sparse %v: %v (%v/%v), alternation %d of %d", sparse, st, o.DirState(0), o.DirState(1), o.alt, o.pairs)
		}
		_, _, g0 := o.Counts(0)
		_, _, g1 := o.Counts(1)
		if g0+g1 == 0 {
			t.Errorf("sparse %v: no reordering glitch: the test reorders nothing", sparse)
		}
		near(t, "full up", valid(o, Full, 0), w.r, 2*w.gap+ms)
	}
}

// TestFilterMedian: the median kept in order as samples come, go and the
// history restarts is that of the last historyLen accepted samples.
func TestFilterMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var f filter
	var all []int64
	for i := range 2000 {
		if i%300 == 299 {
			f.nhist, all = 0, nil // a path change restarts the history
		}
		v := 1e6 + rng.Int64N(5e6)
		if i%7 == 0 && len(all) > 0 {
			v = all[len(all)-1] // repeated values
		}
		f.accept(v)
		all = append(all, v)
		last := slices.Clone(all[max(len(all)-historyLen, 0):])
		slices.Sort(last)
		if got, want := f.median(), last[len(last)/2]; got != want {
			t.Fatalf("after %d samples: median %d, want %d", i+1, got, want)
		}
	}
}
