package passive

import (
	"testing"
)

// TestQUICLossBits marks the synthetic spinning flow's short headers with
// the Q square wave (and L on a few server packets), drops some server
// packets before the observer, and checks the flow's loss_bits report; the
// unmarked flow reports nothing.
func TestQUICLossBits(t *testing.T) {
	p := &path{delay: wave}
	p.quicSpin(500e3, 3e9, nil, 0)
	plain, _, _ := analyse(t, p)
	if len(plain.QUIC) != 1 || plain.QUIC[0].LossBits != nil {
		t.Fatalf("unmarked flow: %+v", plain.QUIC)
	}

	var n [2]int
	dropped, marks := 0, 0
	var kept []pkt
	for _, q := range p.out {
		payload := q.data[20+8:]
		if payload[0]&0x80 != 0 {
			kept = append(kept, q)
			continue
		}
		i := n[q.dir]
		n[q.dir]++
		if (i/64)%2 == 1 {
			payload[0] |= 0x10
		}
		// Server → client: lose every 97th packet upstream of the
		// observer, away from the first and last blocks.
		if q.dir == 1 && i > 128 && i%97 == 0 && q.t < 2.5e9 {
			dropped++
			continue
		}
		if q.dir == 1 && i%500 == 7 {
			payload[0] |= 0x08
			marks++
		}
		kept = append(kept, q)
	}
	p.out = kept
	res, _, _ := analyse(t, p)
	if len(res.QUIC) != 1 {
		t.Fatalf("%d QUIC flows", len(res.QUIC))
	}
	lb := res.QUIC[0].LossBits
	if len(lb) != 2 || lb[0].Direction != "up" || lb[1].Direction != "down" {
		t.Fatalf("loss bits %+v", lb)
	}
	if lb[0].UpstreamLost != 0 || lb[0].EndToEndLost != 0 {
		t.Errorf("up: %+v", lb[0])
	}
	if lb[1].UpstreamLost != dropped || lb[1].EndToEndLost != marks || lb[1].UpstreamLossPct <= 0 {
		t.Errorf("down: dropped %d, marked %d: %+v", dropped, marks, lb[1])
	}
}
