package passive

import (
	"math/rand/v2"
	"testing"
)

// The table agrees with a map through random inserts and removals (which
// shift probe runs back), and never fills beyond half.
func TestFlowTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tab := newFlowTable()
	ref := map[flowKey]*flow{}
	key := func() flowKey {
		// Few distinct values, so that keys repeat and runs collide.
		return flowKey{lo: [2]uint64{0, uint64(rng.IntN(50))}, hi: [2]uint64{0, uint64(rng.IntN(50))},
			loPort: uint16(rng.IntN(20)), hiPort: 443, proto: 6}
	}
	for i := range 200000 {
		k := key()
		h := tab.hash(&k)
		got := tab.get(&k, h)
		if got != ref[k] {
			t.Fatalf("op %d: get %+v = %p, want %p", i, k, got, ref[k])
		}
		switch {
		case got == nil:
			f := &flow{key: k, hash: h}
			tab.put(f)
			ref[k] = f
		case rng.IntN(2) == 0:
			tab.remove(got)
			delete(ref, k)
		}
		if tab.len() != len(ref) || 2*tab.len() > len(tab.slots) {
			t.Fatalf("op %d: %d flows in %d slots, want %d", i, tab.len(), len(tab.slots), len(ref))
		}
	}
	if n := len(tab.flows()); n != len(ref) {
		t.Fatalf("flows() lists %d, want %d", n, len(ref))
	}
	for k, f := range ref {
		if got := tab.get(&k, tab.hash(&k)); got != f {
			t.Fatalf("%+v: %p, want %p", k, got, f)
		}
	}
}
