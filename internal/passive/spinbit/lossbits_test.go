package spinbit

import (
	"math/rand/v2"
	"testing"
)

// lossSender renders n packets of one direction with the Q square wave
// (starting mid-block at offset) and L set on the packets in marks.
func lossSender(n, offset int, marks map[int]bool) []byte {
	out := make([]byte, n)
	for i := range n {
		b := byte(0x40)
		if (i+offset)/QPeriod%2 == 1 {
			b |= QBit
		}
		if marks[i] {
			b |= LBit
		}
		out[i] = b
	}
	return out
}

func TestLossBitsUpstream(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, offset = 64 * 50, 20
	marks := map[int]bool{}
	for range 37 {
		marks[rng.IntN(n)] = true
	}
	sent := lossSender(n, offset, marks)
	// Drop 2% upstream of the observer, but not inside the first
	// (partial) and last (incomplete) blocks, which are not counted.
	first, last := QPeriod-offset, n-(n+offset)%QPeriod
	var seen []byte
	dropped, lSeen := 0, 0
	for i, b := range sent {
		if i >= first && i < last && rng.Float64() < 0.02 {
			dropped++
			continue
		}
		if b&LBit != 0 {
			lSeen++
		}
		seen = append(seen, b)
	}
	// Reorder: swap a few neighbours, some across block boundaries.
	for i := 100; i+1 < len(seen); i += 97 {
		seen[i], seen[i+1] = seen[i+1], seen[i]
	}
	var o LossObserver
	for _, b := range seen {
		o.Packet(0, b)
	}
	r := o.Result(0)
	if !r.Present || r.Upstream != dropped || r.LMarks != lSeen || r.Blocks != (last-first)/QPeriod {
		t.Errorf("dropped %d, %d L marks, %d blocks: got %+v", dropped, lSeen, (last-first)/QPeriod, r)
	}
	if r2 := o.Result(1); r2.Present || r2.Packets != 0 {
		t.Errorf("silent direction: %+v", r2)
	}
}

// TestLossBitsWholeBlockLost: a lost run as long as a block merges two
// blocks; the loss is still counted.
func TestLossBitsWholeBlockLost(t *testing.T) {
	sent := lossSender(64*20, 0, nil)
	var o LossObserver
	for i, b := range sent {
		if i >= 64*8 && i < 64*9 {
			continue // the whole ninth block
		}
		o.Packet(1, b)
	}
	if r := o.Result(1); !r.Present || r.Upstream != 64 {
		t.Errorf("one block lost: %+v", r)
	}
}

// TestLossBitsAbsent: header-protected (random) reserved bits and bits
// never set report nothing.
func TestLossBitsAbsent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var random, zero LossObserver
	for range 5000 {
		random.Packet(0, 0x40|byte(rng.IntN(32)))
		zero.Packet(0, 0x40)
	}
	if r := random.Result(0); r.Present || r.LMarks != 0 {
		t.Errorf("random bits: %+v", r)
	}
	if r := zero.Result(0); r.Present || r.LMarks != 0 || r.Packets != 5000 {
		t.Errorf("zero bits: %+v", r)
	}
}
