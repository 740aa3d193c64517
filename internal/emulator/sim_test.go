package emulator

import (
	"encoding/binary"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/checksum"
)

// ipv4UDP builds an IPv4/UDP packet of size bytes.
func ipv4UDP(size int, sport uint16, ecn byte, id uint16) []byte {
	b := make([]byte, size)
	b[0], b[1] = 0x45, ecn&3
	binary.BigEndian.PutUint16(b[2:4], uint16(size))
	binary.BigEndian.PutUint16(b[4:6], id)
	b[6] = 0x40 // DF
	b[8], b[9] = 64, 17
	copy(b[12:16], []byte{198, 18, 1, 1})
	copy(b[16:20], []byte{198, 18, 1, 2})
	binary.BigEndian.PutUint16(b[10:12], checksum.Checksum(b[:20], 0))
	binary.BigEndian.PutUint16(b[20:22], sport)
	binary.BigEndian.PutUint16(b[22:24], 9)
	binary.BigEndian.PutUint16(b[24:26], uint16(size-20))
	return b
}

// sim drives a Link with a virtual clock: every event is processed at its
// exact time, so Sent == Due.
type sim struct {
	t       *testing.T
	l       *Link
	now     time.Duration
	out     []*Packet
	dropped []*Packet
}

func newSim(t *testing.T, p Params, sched []Step, seed uint64) *sim {
	t.Helper()
	s := &sim{t: t}
	l, err := NewLink(Config{Params: p, Schedule: sched, Seed: seed, Dropped: func(pk *Packet) {
		s.dropped = append(s.dropped, pk)
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.l = l
	return s
}

// runTo processes every event up to and including t.
func (s *sim) runTo(t time.Duration) {
	for {
		next, ok := s.l.Next()
		if !ok || next > t {
			break
		}
		s.step(next)
	}
	s.step(t)
}

func (s *sim) step(t time.Duration) {
	if t < s.now {
		s.t.Fatalf("time went back: %v < %v", t, s.now)
	}
	s.now = t
	n := len(s.out)
	s.out = s.l.Release(t, s.out)
	for _, p := range s.out[n:] {
		p.Sent = t
	}
}

func (s *sim) send(t time.Duration, data []byte) *Packet {
	s.runTo(t)
	p := &Packet{Data: data}
	s.l.Enqueue(p, t)
	return p
}

// cbr offers packets of size at rate bps from start to end, flow sport.
func (s *sim) cbr(start, end time.Duration, size int, bps float64, sport uint16) {
	gap := time.Duration(float64(size*8) / bps * 1e9)
	for t := start; t < end; t += gap {
		s.send(t, ipv4UDP(size, sport, 0, 0))
	}
}

func (s *sim) drain() { s.runTo(s.now + 1000*time.Second) }

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	return c[int(q*float64(len(c)-1))]
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}

// binomialOK reports whether k successes in n trials are within the 99%
// normal-approximation interval of probability p.
func binomialOK(k, n int, p float64) bool {
	mu := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-mu) <= 2.576*sd+1
}

// reno drives the link with a window-based source that behaves like TCP
// Reno in congestion avoidance (slow start until the first loss): one
// packet of size per window slot, ACKs after the fixed reverse delay, loss
// seen one RTT after the drop, the window halved at most once per RTT.
// It runs until end and returns nothing; the results are in s.out.
func (s *sim) reno(end time.Duration, size int, rtt time.Duration) {
	type ev struct {
		at   time.Duration
		loss bool
	}
	var pending []ev // kept sorted by at
	push := func(e ev) {
		i := sort.Search(len(pending), func(i int) bool { return pending[i].at > e.at })
		pending = append(pending, ev{})
		copy(pending[i+1:], pending[i:])
		pending[i] = e
	}
	cwnd, slowStart := 2.0, true
	inflight := 0
	lastCut := -rtt
	seenOut, seenDrop := len(s.out), len(s.dropped)
	for s.now < end {
		for inflight < int(cwnd) {
			s.send(s.now, ipv4UDP(size, 1, 0, 0))
			inflight++
		}
		for ; seenOut < len(s.out); seenOut++ {
			push(ev{at: s.out[seenOut].Sent + rtt/2})
		}
		for ; seenDrop < len(s.dropped); seenDrop++ {
			push(ev{at: s.now + rtt, loss: true})
		}
		next, ok := s.l.Next()
		if len(pending) > 0 && (!ok || pending[0].at < next) {
			next = pending[0].at
		}
		s.runTo(next)
		for len(pending) > 0 && pending[0].at <= s.now {
			e := pending[0]
			pending = pending[1:]
			inflight--
			switch {
			case e.loss && s.now-lastCut > rtt:
				cwnd, slowStart, lastCut = max(cwnd/2, 2), false, s.now
			case e.loss:
			case slowStart:
				cwnd++
			default:
				cwnd += 1 / cwnd
			}
		}
	}
}
