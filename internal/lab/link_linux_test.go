package lab

import "testing"

// The seeds and packet sizes of a link are part of a run's reproducibility
// (a recorded seed must replay the same losses): these are the values the
// lab and `sonde emulate` used before they shared this builder.
func TestLinkSeedsReplay(t *testing.T) {
	const golden, mix uint64 = 0x9e3779b97f4a7c15, 0xd1b54a32d192ed03
	two := uint64(2)
	for _, c := range []struct {
		seed     uint64
		i        int
		up, down uint64
	}{
		{1, 0, 1, 1 ^ mix},
		{42, 0, 42, 42 ^ mix},
		{42, 2, 42 + two*golden, (42 + two*golden) ^ mix},
	} {
		up, down := LinkSeeds(c.seed, c.i)
		if up != c.up || down != c.down {
			t.Errorf("LinkSeeds(%d, %d) = %#x, %#x, want %#x, %#x", c.seed, c.i, up, down, c.up, c.down)
		}
	}
	for mtu, want := range map[int]int{576: 1564, 1500: 1564, 9000: 9064} {
		if got := MaxPacket(mtu); got != want {
			t.Errorf("MaxPacket(%d) = %d, want %d", mtu, got, want)
		}
	}
	if s := RandomSeed(); s&1 == 0 {
		t.Errorf("RandomSeed() = %d, want odd (never 0)", s)
	}
}
