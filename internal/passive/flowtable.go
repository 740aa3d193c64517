package passive

import (
	"math/bits"
	"math/rand/v2"
)

// flowTable maps flow keys to live flows: open addressing with linear
// probing over (hash, flow) slots, four to a cache line. It replaces a Go
// map, whose 40-byte inline keys cost a cache line and a memory compare
// per probe before the flow itself was reached; here a probe compares
// hashes, and only a matching hash reads the flow (which the packet needs
// next anyway). The hash is keyed with a random seed, so a crafted capture
// cannot line its flows up in one probe sequence.
type flowTable struct {
	slots []flowSlot // a power of two long, at most half full
	n     int
	seed  uint64
}

type flowSlot struct {
	h uint64
	f *flow // nil: empty
}

func newFlowTable() *flowTable {
	return &flowTable{slots: make([]flowSlot, 1024), seed: rand.Uint64() | 1}
}

// hash mixes a key's words (multiply and fold, as wyhash does).
func (t *flowTable) hash(k *flowKey) uint64 {
	const m1, m2 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db
	mix := func(a, b uint64) uint64 {
		hi, lo := bits.Mul64(a^m1, b^m2)
		return hi ^ lo
	}
	ports := uint64(k.loPort)<<24 | uint64(k.hiPort)<<8 | uint64(k.proto)
	h := mix(k.lo[0]^t.seed, k.lo[1])
	h = mix(h^k.hi[0], k.hi[1]^ports)
	return mix(h, t.seed)
}

func (t *flowTable) len() int { return t.n }

// get returns the flow with key k (hash h), or nil.
func (t *flowTable) get(k *flowKey, h uint64) *flow {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.f == nil {
			return nil
		}
		if s.h == h && s.f.key.equal(k) {
			return s.f
		}
	}
}

// peek returns the first flow of h's probe run with hash h, without
// comparing keys (reading the flow): likely h's flow, for a prefetch.
func (t *flowTable) peek(h uint64) *flow {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.f == nil || s.h == h {
			return s.f
		}
	}
}

// put adds a flow that is not in the table; f.hash must be set.
func (t *flowTable) put(f *flow) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.insert(f)
	t.n++
}

func (t *flowTable) insert(f *flow) {
	mask := uint64(len(t.slots) - 1)
	i := f.hash & mask
	for t.slots[i].f != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = flowSlot{h: f.hash, f: f}
}

func (t *flowTable) grow() {
	old := t.slots
	t.slots = make([]flowSlot, 2*len(old))
	for _, s := range old {
		if s.f != nil {
			t.insert(s.f)
		}
	}
}

// remove deletes f, shifting later slots of its probe run back so that
// no lookup stops early at the hole.
func (t *flowTable) remove(f *flow) {
	mask := uint64(len(t.slots) - 1)
	i := f.hash & mask
	for t.slots[i].f != f {
		if t.slots[i].f == nil {
			return
		}
		i = (i + 1) & mask
	}
	t.n--
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := t.slots[j]
		if s.f == nil {
			break
		}
		// s may move to the hole at i if its home slot is not in (i, j].
		if home := s.h & mask; (j-home)&mask >= (j-i)&mask {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = flowSlot{}
}

// flows returns the live flows (a copy: the caller may remove them).
func (t *flowTable) flows() []*flow {
	out := make([]*flow, 0, t.n)
	for _, s := range t.slots {
		if s.f != nil {
			out = append(out, s.f)
		}
	}
	return out
}
