package emulator

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"
)

// fullDuplexDigest runs one direction with every model in play (rate,
// jitter with reordering off, loss, duplication, CoDel with ECN, a
// schedule) on a fixed seed and hashes each packet's fate and times.
// With half, the same direction is the Up side of a half-duplex link
// whose Down side carries nothing.
func fullDuplexDigest(t *testing.T, half bool) string {
	t.Helper()
	p := Params{RateBps: 10e6, Delay: 5 * time.Millisecond, Jitter: time.Millisecond, JitterDist: Normal,
		Loss: 0.01, Duplicate: 0.01, Qdisc: CoDel, ECN: true, LimitPackets: 200, HalfDuplex: half}
	step := p
	step.RateBps = 5e6
	s := newDSim(t, p, p, []Step{{At: 500 * time.Millisecond, Params: step}}, 7)
	for i := range 3000 {
		s.send(Up, time.Duration(i)*400*time.Microsecond, ipv4UDP(1000+i%500, uint16(1+i%3), byte(i%3), uint16(i)))
	}
	s.drain()
	if c := s.dirs[Up].Counters(); c.DropLoss == 0 || c.DropAQM == 0 || c.Marked == 0 || c.Duplicated == 0 || c.MediumWaits != 0 {
		t.Fatalf("the digest's run must lose, drop, mark and duplicate, and never wait for the medium: %+v", c)
	}
	h := sha256.New()
	var b [8]byte
	for _, set := range [][]*Packet{s.out[Up], s.dropped} {
		for _, pk := range set {
			for _, v := range []int64{int64(pk.Seq), int64(pk.Arrival), int64(pk.Dequeue), int64(pk.Due), int64(pk.Fate), int64(pk.Flags)} {
				binary.LittleEndian.PutUint64(b[:], uint64(v))
				h.Write(b[:])
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestFullDuplexUnchanged: with duplex off (the default) a direction
// behaves exactly as before the half-duplex medium existed: the digest
// was taken from the model before that change.
func TestFullDuplexUnchanged(t *testing.T) {
	const want = "97313304f76eb37adc4626288e338a8e0e00ab6b34f9aca8e8e72177d42c41ce"
	if got := fullDuplexDigest(t, false); got != want {
		t.Fatalf("full-duplex model changed: digest %s, want %s", got, want)
	}
	// A half-duplex medium nobody else uses changes nothing either.
	if got := fullDuplexDigest(t, true); got != want {
		t.Fatalf("half duplex with no reverse traffic: digest %s, want %s", got, want)
	}
}

// direction is what a driver needs of a direction: a Link or a
// HalfDuplex's Side.
type direction interface {
	Enqueue(p *Packet, now time.Duration) bool
	Release(now time.Duration, out []*Packet) []*Packet
	Next() (time.Duration, bool)
	Counters() Counters
}

// dsim drives both directions of a link with a virtual clock, in time
// order, as sim does one.
type dsim struct {
	t       *testing.T
	dirs    [2]direction
	now     time.Duration
	out     [2][]*Packet
	dropped []*Packet
}

func newDSim(t *testing.T, up, down Params, upSched []Step, seed uint64) *dsim {
	t.Helper()
	s := &dsim{t: t}
	drop := func(p *Packet) { s.dropped = append(s.dropped, p) }
	cu := Config{Params: up, Schedule: upSched, Seed: seed, Dropped: drop}
	cd := Config{Params: down, Seed: seed ^ 0x5555, Dropped: drop}
	if up.HalfDuplex {
		h, err := NewHalfDuplex(cu, cd)
		if err != nil {
			t.Fatal(err)
		}
		s.dirs = [2]direction{h.Dir(Up), h.Dir(Down)}
		return s
	}
	for i, c := range []Config{cu, cd} {
		l, err := NewLink(c)
		if err != nil {
			t.Fatal(err)
		}
		s.dirs[i] = l
	}
	return s
}

func (s *dsim) runTo(t time.Duration) {
	for range 10_000_000 {
		next := never
		for _, d := range s.dirs {
			if n, ok := d.Next(); ok {
				next = min(next, n)
			}
		}
		if next > t {
			break
		}
		s.step(next)
	}
	s.step(t)
}

func (s *dsim) step(t time.Duration) {
	if t < s.now {
		s.t.Fatalf("time went back: %v < %v", t, s.now)
	}
	s.now = t
	for i, d := range s.dirs {
		n := len(s.out[i])
		s.out[i] = d.Release(t, s.out[i])
		for _, p := range s.out[i][n:] {
			p.Sent = t
		}
	}
}

func (s *dsim) send(dir uint8, t time.Duration, data []byte) *Packet {
	s.runTo(t)
	p := &Packet{Data: data}
	s.dirs[dir].Enqueue(p, t)
	return p
}

func (s *dsim) drain() { s.runTo(s.now + 1000*time.Second) }

// dataAndACKs: 20 data packets of 1500 bytes at once one way (3 ms each
// at 4 Mbit/s: 60 ms of backlog) and a 96-byte ACK every 3 ms from 1 ms
// the other way.
func dataAndACKs(t *testing.T, spec string) *dsim {
	t.Helper()
	p, err := ParseParams("rate=4Mbit delay=10ms "+spec, Params{})
	if err != nil {
		t.Fatal(err)
	}
	s := newDSim(t, p, p, nil, 1)
	for i := range 20 {
		s.send(Up, 0, ipv4UDP(1500, 1, 0, uint16(i)))
	}
	for i := range 10 {
		s.send(Down, time.Millisecond+time.Duration(i)*3*time.Millisecond, ipv4UDP(96, 2, 0, uint16(i)))
	}
	s.drain()
	if len(s.out[Up]) != 20 || len(s.out[Down]) != 10 {
		t.Fatalf("%s: delivered %d and %d", spec, len(s.out[Up]), len(s.out[Down]))
	}
	return s
}

const (
	dataTx = 3 * time.Millisecond
	ackTx  = 192 * time.Microsecond
)

// TestHalfDuplexOffIsFullDuplex: without duplex=half the ACKs go at once
// and the data back to back, nothing waits for a medium.
func TestHalfDuplexOffIsFullDuplex(t *testing.T) {
	s := dataAndACKs(t, "")
	for i, p := range s.out[Up] {
		if p.Dequeue != time.Duration(i)*dataTx || p.MediumWait != 0 {
			t.Fatalf("data %d: dequeue %v, medium wait %v", i, p.Dequeue, p.MediumWait)
		}
	}
	for i, p := range s.out[Down] {
		if p.Dequeue != p.Arrival || p.MediumWait != 0 {
			t.Fatalf("ACK %d: arrival %v dequeue %v, medium wait %v", i, p.Arrival, p.Dequeue, p.MediumWait)
		}
	}
}

// TestHalfDuplexDrainHold: a direction that holds the medium until its
// queue drains (RFC 8337 §8.2.4's historical links) sends its 60 ms of
// data back to back; every ACK waits for the whole backlog, and the first
// ACK's head wait is the rest of it (the others wait behind it).
func TestHalfDuplexDrainHold(t *testing.T) {
	s := dataAndACKs(t, "duplex=half hold=drain")
	for i, p := range s.out[Up] {
		if p.Dequeue != time.Duration(i)*dataTx || p.MediumWait != 0 {
			t.Fatalf("data %d: dequeue %v, medium wait %v", i, p.Dequeue, p.MediumWait)
		}
	}
	end := 20 * dataTx
	var waits time.Duration
	for i, p := range s.out[Down] {
		if want := end + time.Duration(i)*ackTx; p.Dequeue != want {
			t.Fatalf("ACK %d: dequeue %v, want %v", i, p.Dequeue, want)
		}
		waits += p.MediumWait
	}
	if w := s.out[Down][0].MediumWait; w != end-time.Millisecond || waits != w {
		t.Fatalf("ACK medium waits: first %v, total %v; want %v both", w, waits, end-time.Millisecond)
	}
	c := s.dirs[Down].Counters()
	if c.MediumWaits != 1 || c.MediumWait != waits {
		t.Fatalf("counters %+v", c)
	}
}

// TestHalfDuplexNoHold: with hold 0 the medium alternates: each ACK waits
// only for the data packet on the medium when it arrived, and delays the
// next data packet by its own time.
func TestHalfDuplexNoHold(t *testing.T) {
	s := dataAndACKs(t, "duplex=half")
	// ACK i arrives at 1 + 3i ms, while data packet i is on the medium
	// (each data packet is pushed back by the ACKs before it): it goes when
	// that packet ends.
	// Its head wait starts at its arrival, or when the ACK before it left
	// the medium if later.
	prevEnd := time.Duration(0)
	for i, p := range s.out[Down] {
		want := time.Duration(i+1)*dataTx + time.Duration(i)*ackTx
		if p.Dequeue != want || p.MediumWait != want-max(p.Arrival, prevEnd) {
			t.Fatalf("ACK %d: arrival %v dequeue %v wait %v, want dequeue %v", i, p.Arrival, p.Dequeue, p.MediumWait, want)
		}
		prevEnd = p.Dequeue + ackTx
	}
	for i, p := range s.out[Up] {
		k := time.Duration(min(i, 10)) // ACKs sent before it
		if want := time.Duration(i)*dataTx + k*ackTx; p.Dequeue != want {
			t.Fatalf("data %d: dequeue %v, want %v", i, p.Dequeue, want)
		}
		if want := time.Duration(0); i >= 1 && i <= 10 {
			want = ackTx
			if p.MediumWait != want {
				t.Fatalf("data %d: medium wait %v, want %v", i, p.MediumWait, want)
			}
		}
	}
}

// TestHalfDuplexNoOverlap: random traffic both ways under every hold:
// the medium never carries two packets at once, no head waits longer than
// the hold, one packet of the other direction and two turnarounds, and
// a packet that follows one of the other direction starts a turnaround
// after it; each direction's counters add up its packets' waits.
func TestHalfDuplexNoOverlap(t *testing.T) {
	for _, hold := range []string{"0s", "5ms", "drain", "0s turnaround=1ms", "drain turnaround=500us"} {
		p, err := ParseParams("rate=2Mbit delay=3ms limit=50p duplex=half hold="+hold, Params{})
		if err != nil {
			t.Fatal(err)
		}
		down := p
		down.RateBps = 1e6
		s := newDSim(t, p, down, nil, 3)
		rnd := newStream(9, 0)
		var at time.Duration
		for range 4000 {
			at += time.Duration(rnd.ExpFloat64() * float64(6*time.Millisecond))
			dir := uint8(rnd.IntN(2))
			s.send(dir, at, ipv4UDP(40+rnd.IntN(1460), uint16(dir), 0, 0))
		}
		s.drain()
		type span struct {
			from, to time.Duration
			dir      int
		}
		var spans []span
		maxTx := [2]time.Duration{p.TxTime(1500), down.TxTime(1500)}
		for d, out := range s.out {
			par := p
			if d == int(Down) {
				par = down
			}
			var sum time.Duration
			for _, pk := range out {
				spans = append(spans, span{pk.Dequeue, pk.Dequeue + par.TxTime(len(pk.Data)), d})
				sum += pk.MediumWait
				if p.Hold != HoldUntilDrained && pk.MediumWait > p.Hold+maxTx[1-d]+2*p.Turnaround {
					t.Fatalf("hold %s: a head waited %v, more than the hold and a packet", hold, pk.MediumWait)
				}
			}
			if c := s.dirs[d].Counters(); c.MediumWait != sum || sum == 0 {
				t.Fatalf("hold %s, dir %d: counters %v, packets %v", hold, d, c.MediumWait, sum)
			}
		}
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
		for i := 1; i < len(spans); i++ {
			gap := time.Duration(0)
			if spans[i].dir != spans[i-1].dir {
				gap = p.Turnaround
			}
			if spans[i].from < spans[i-1].to+gap {
				t.Fatalf("hold %s: two packets on the medium, or no turnaround between them: %v and %v", hold, spans[i-1], spans[i])
			}
		}
		t.Logf("hold %s: %d and %d delivered, %d dropped; medium waits %v and %v", hold, len(s.out[0]), len(s.out[1]), len(s.dropped),
			s.dirs[0].Counters().MediumWait, s.dirs[1].Counters().MediumWait)
	}
}

func TestParseDuplex(t *testing.T) {
	p, err := ParseParams("rate=4Mbit duplex=half hold=drain", Params{})
	if err != nil || !p.HalfDuplex || p.Hold != HoldUntilDrained {
		t.Fatalf("%+v, %v", p, err)
	}
	if s := p.String(); !strings.Contains(s, "duplex=half hold=drain") {
		t.Errorf("String: %s", s)
	}
	if p, err = ParseParams("rate=4Mbit duplex=half hold=2.5ms", Params{}); err != nil || p.Hold != 2500*time.Microsecond {
		t.Fatalf("%+v, %v", p, err)
	}
	if p, err = ParseParams("duplex=full", p); err == nil {
		t.Errorf("hold without half duplex accepted: %+v", p)
	}
	for _, spec := range []string{"hold=1ms", "duplex=half", "turnaround=1ms", "rate=1M duplex=half turnaround=2s", "rate=1M duplex=half turnaround=-1s", "rate=1M duplex=quarter", "rate=1M duplex=half hold=-1ms",
		"rate=1M duplex=half hold=11s", "rate=1M duplex=half hold", "rate=1M duplex"} {
		if _, err := ParseParams(spec, Params{}); err == nil {
			t.Errorf("%q accepted", spec)
		} else {
			t.Logf("%q: %v", spec, err)
		}
	}
	half, _ := ParseParams("rate=1M duplex=half", Params{})
	if _, err := ParseSchedule([]string{"1s:duplex=full"}, half); err == nil {
		t.Error("a schedule changing duplex accepted")
	}
	if _, err := ParseSchedule([]string{"1s:hold=5ms"}, half); err != nil {
		t.Errorf("a schedule changing the hold: %v", err)
	}
	if _, err := NewLink(Config{Params: half}); err == nil {
		t.Error("NewLink built a half-duplex direction without its medium")
	}
	if _, err := NewHalfDuplex(Config{Params: half}, Config{Params: Params{RateBps: 1e6}}); err == nil {
		t.Error("NewHalfDuplex accepted a full-duplex direction")
	}
}

// FuzzParseParams: a link specification (and a schedule step of it) is
// refused with an error or gives valid parameters that build a link.
func FuzzParseParams(f *testing.F) {
	for _, s := range []string{"rate=8Mbit delay=9.5ms limit=37500B qdisc=codel ecn", "rate=0.7Mbit ge=1%/30% jitter=1ms dist=pareto",
		"rate=4Mbit delay=10ms duplex=half hold=drain", "rate=1M duplex=half hold=3ms", "hold=1ms", "duplex=half", "remark=ef:cs1 mtu=1400",
		"limit=300kbit,loss=4%", "rate=off duplex=full", "hold=9223372036854775807ns duplex=half rate=1k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := ParseParams(spec, Params{})
		if err != nil {
			if strings.ContainsRune(err.Error(), '\n') {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%q parsed to invalid %+v: %v", spec, p, err)
		}
		if p.Hold < 0 || (p.Hold > MaxHold && p.Hold != HoldUntilDrained) || (p.Hold != 0 && !p.HalfDuplex) {
			t.Fatalf("%q: hold %v accepted", spec, p.Hold)
		}
		if p.HalfDuplex {
			if _, err := NewHalfDuplex(Config{Params: p}, Config{Params: p}); err != nil {
				t.Fatalf("%q: %v", spec, err)
			}
		} else if _, err := NewLink(Config{Params: p}); err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		if _, err := ParseStep("1s:"+spec, p); err != nil {
			t.Fatalf("%q as a step on itself: %v", spec, err)
		}
	})
}

// TestTruthMediumWait: the record carries the medium wait in its spare
// bytes (zero in older files), saturating at 40 bits of ns.
func TestTruthMediumWait(t *testing.T) {
	var b [TruthRecordSize]byte
	for _, c := range []struct{ in, want time.Duration }{{0, 0}, {3*time.Millisecond + 7, 3*time.Millisecond + 7}, {1 << 41, maxMediumWait}, {-5, 0}} {
		r := Record{Seq: 1, MediumWait: c.in, Proto: 17}
		r.marshal(b[:])
		var got Record
		got.unmarshal(b[:])
		if got.MediumWait != c.want || got.Seq != 1 || got.Proto != 17 {
			t.Errorf("medium wait %v: read back %+v", c.in, got)
		}
	}
}
