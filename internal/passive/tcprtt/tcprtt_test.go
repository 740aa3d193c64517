package tcprtt

import "testing"

const ms = int64(1e6)

// An observer next to A sees A's packet leave, B's echo come back 30 ms
// later (A→B→A component), then A's echo of B's TSval 2 ms after that (the
// B→A→B component, short because the observer is near A). The full RTT is
// the sum.
func TestTimestampsComponentsAndFull(t *testing.T) {
	var m Timestamps
	if _, _, c, f := m.Packet(0, 0, 100, 0, 1, false, false); c || f {
		t.Fatal("first packet produced a sample")
	}
	comp, _, c, f := m.Packet(1, 30*ms, 500, 100, 2, false, false)
	if !c || f || comp.RTT != 30*ms || comp.Dir != 0 || comp.StartID != 1 || comp.EndID != 2 {
		t.Fatalf("B's echo: comp %+v got %v full %v", comp, c, f)
	}
	comp, full, c, f := m.Packet(0, 32*ms, 101, 500, 3, false, false)
	if !c || !f || comp.RTT != 2*ms || comp.Dir != 1 || full.RTT != 32*ms {
		t.Fatalf("A's echo: comp %+v full %+v", comp, full)
	}
}

// Only the first packet carrying a TSval starts a sample, and only the first
// echo of it ends one (pping): later packets with the same values are not
// samples, so delayed or repeated ACKs do not inflate the count.
func TestTimestampsFirstOnly(t *testing.T) {
	var m Timestamps
	m.Packet(0, 0, 100, 0, 1, false, false)
	m.Packet(0, 1*ms, 100, 0, 2, false, false) // same TSval: not recorded again
	if comp, _, c, _ := m.Packet(1, 10*ms, 500, 100, 3, false, false); !c || comp.RTT != 10*ms || comp.StartID != 1 {
		t.Fatalf("echo matched %+v (got %v), want the first packet at 10 ms", comp, c)
	}
	if _, _, c, _ := m.Packet(1, 11*ms, 500, 100, 4, false, false); c {
		t.Fatal("a second echo of the same TSval made another sample")
	}
}

// A retransmission's TSval must not start a sample, and a pure duplicate
// ACK's TSecr must not end one.
func TestTimestampsSkips(t *testing.T) {
	var m Timestamps
	m.Packet(0, 0, 100, 0, 1, true, false) // retransmission: not recorded
	if _, _, c, _ := m.Packet(1, 10*ms, 500, 100, 2, false, false); c {
		t.Fatal("the echo of a retransmission made a sample")
	}
	m.Packet(0, 20*ms, 101, 0, 3, false, false)
	if _, _, c, _ := m.Packet(1, 25*ms, 501, 101, 4, false, true); c {
		t.Fatal("a duplicate ACK ended a sample")
	}
}

// TSval wraps at 2^32; serial arithmetic keeps matching across it.
func TestTimestampsWrap(t *testing.T) {
	var m Timestamps
	m.Packet(0, 0, 0xfffffffe, 0, 1, false, false)
	m.Packet(1, 5*ms, 7, 0xfffffffe, 2, false, false)
	m.Packet(0, 6*ms, 3, 7, 3, false, false) // TSval wrapped
	if comp, _, c, _ := m.Packet(1, 16*ms, 8, 3, 4, false, false); !c || comp.RTT != 10*ms {
		t.Fatalf("after wrap: %+v (got %v), want 10 ms", comp, c)
	}
}

// SEQ/ACK: an ACK ending exactly at a segment gives a sample; a segment that
// was resent gives none (Karn's rule).
func TestSeqAckKarn(t *testing.T) {
	var m SeqAck
	m.Data(0, 0, 1000, 2000, 1)
	m.Data(0, 1*ms, 2000, 3000, 2)
	s, ok := m.Ack(1, 20*ms, 2000, 3)
	if !ok || s.RTT != 20*ms || s.StartID != 1 {
		t.Fatalf("ACK of the first segment: %+v %v", s, ok)
	}
	if !m.Data(0, 30*ms, 2000, 3000, 4) {
		t.Fatal("resent segment not flagged as a retransmission")
	}
	if _, ok := m.Ack(1, 50*ms, 3000, 5); ok {
		t.Fatal("ACK of a retransmitted segment gave a sample")
	}
	m.Data(0, 60*ms, 3000, 4000, 6)
	if s, ok := m.Ack(1, 75*ms, 4000, 7); !ok || s.RTT != 15*ms {
		t.Fatalf("after the retransmission: %+v %v, want 15 ms", s, ok)
	}
	// An ACK in the middle of a segment ends no sample.
	m.Data(0, 80*ms, 4000, 5000, 8)
	if _, ok := m.Ack(1, 90*ms, 4500, 9); ok {
		t.Fatal("partial ACK gave a sample")
	}
}
