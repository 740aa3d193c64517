package lab

import (
	"math"
	"testing"
)

// TestNodeAddr: every node's address on each link it touches matches the
// addressing in doc.go, and a link it does not touch is refused.
func TestNodeAddr(t *testing.T) {
	for _, c := range []struct {
		k, n, i int
		want    string
	}{
		{0, 1, 1, "198.18.1.1"}, // the client
		{1, 1, 1, "198.18.1.2"}, // the server of one link
		{1, 3, 1, "198.18.1.2"}, // router-1, on link 1
		{1, 3, 2, "198.18.2.1"}, // router-1, on link 2
		{2, 3, 2, "198.18.2.2"}, // router-2, on link 2
		{3, 3, 3, "198.18.3.2"}, // the server of three links
	} {
		a, err := NodeAddr(c.k, c.n, c.i)
		if err != nil || a.String() != c.want {
			t.Errorf("NodeAddr(%d, %d, %d) = %v, %v; want %s", c.k, c.n, c.i, a, err, c.want)
		}
	}
	for _, c := range [][3]int{{0, 3, 2}, {1, 3, 3}, {3, 3, 4}, {4, 3, 4}, {-1, 3, 0}, {0, 0, 1}, {0, MaxLinks + 1, 1}} {
		if a, err := NodeAddr(c[0], c[1], c[2]); err == nil {
			t.Errorf("NodeAddr%v = %v, want an error", c, a)
		}
	}
}

// TestSubpathTruth: the interconnect profile's middle link alone has its
// own rate, delay, loss and queue as ground truth, and the whole chain
// composes its links.
func TestSubpathTruth(t *testing.T) {
	p, err := Resolve("interconnect")
	if err != nil {
		t.Fatal(err)
	}
	mid, err := p.Subpath(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	g := mid.GroundTruth()
	if len(mid.Links) != 1 || g.UpRateBps != 10e6 || g.BaseRTTMs != 2 || math.Abs(g.UpLoss-0.001) > 1e-12 || g.UpQueuePackets != 100 {
		t.Errorf("interconnect link: %+v", g)
	}
	if len(p.Links) != 3 {
		t.Fatalf("profile changed: %d links", len(p.Links))
	}
	all, err := p.Subpath(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if all.GroundTruth().BaseRTTMs != 82 || all.GroundTruth().UpRateBps != 10e6 {
		t.Errorf("whole chain: %+v", all.GroundTruth())
	}
	for _, c := range [][2]int{{1, 1}, {2, 1}, {-1, 2}, {0, 4}} {
		if _, err := p.Subpath(c[0], c[1]); err == nil {
			t.Errorf("Subpath%v: want an error", c)
		}
	}
}
