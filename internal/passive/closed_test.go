package passive

import "testing"

// TestClosedKeysForget: the after-close table holds the closes of the
// last closedLinger only, however long the capture, and still knows them.
func TestClosedKeysForget(t *testing.T) {
	var c closedKeys
	const every = int64(10e6) // a close every 10 ms, for 1000 s
	var now int64
	for i := range 100000 {
		now = int64(i) * every
		c.add(flowKey{lo: [2]uint64{0, uint64(i)}, proto: 6}, now)
	}
	window := int(closedLinger/every) + 1
	if len(c.at) > window || len(c.order)-c.head > window {
		t.Errorf("%d keys kept (%d in order), want at most %d (the linger's)", len(c.at), len(c.order)-c.head, window)
	}
	if cap(c.order) > 4*window {
		t.Errorf("order's capacity %d for %d live keys", cap(c.order), window)
	}
	if !c.recent(flowKey{lo: [2]uint64{0, 99999}, proto: 6}, now) || !c.recent(flowKey{lo: [2]uint64{0, uint64(100000 - window + 1)}, proto: 6}, now) {
		t.Error("a key within the linger forgotten")
	}
	if c.recent(flowKey{lo: [2]uint64{0, 5}, proto: 6}, now) {
		t.Error("a key past the linger remembered")
	}
}
