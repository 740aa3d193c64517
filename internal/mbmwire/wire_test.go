package mbmwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDataRoundTrip(t *testing.T) {
	b := make([]byte, 1200)
	d := Data{Token: 0xdeadbeef01020304, Seq: 12345, SendNs: 1_700_000_000_123_456_789, Pos: 3, Burst: 77}
	PutData(b, d)
	got, err := ParseData(b)
	if err != nil || got != d {
		t.Fatalf("got %+v, %v; want %+v", got, err, d)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", b[:DataHeaderLen-1], ErrShort},
		{"magic", append([]byte("XMBD"), b[4:]...), ErrMagic},
		{"version", append(append([]byte{}, b[:4]...), append([]byte{2}, b[5:]...)...), ErrVersion},
		{"flags", withByte(b, 6, 0x01), ErrReserved},
		{"high flag", withByte(b, 6, 0x80), ErrReserved},
		{"reserved byte", withByte(b, 7, 0x01), ErrReserved},
	} {
		if _, err := ParseData(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	PutData(b, Data{Seq: MaxPackets})
	if _, err := ParseData(b); !errors.Is(err, ErrField) {
		t.Errorf("seq beyond MaxPackets: err %v, want ErrField", err)
	}
}

// withByte is a copy of b with b[i] = v.
func withByte(b []byte, i int, v byte) []byte {
	c := append([]byte(nil), b...)
	c[i] = v
	return c
}

func TestFeedbackRoundTrip(t *testing.T) {
	f := Feedback{Token: 9, First: 100, Count: 11, Next: 140, Received: 105, CE: 2, Duplicates: 1, Reordered: 4, Late: 1,
		Arrived: []byte{0xff, 0x05}, CEMarks: []byte{0x01, 0x04}}
	b, err := AppendFeedback(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != FeedbackLen(11) {
		t.Fatalf("len %d, want %d", len(b), FeedbackLen(11))
	}
	g, err := ParseFeedback(b)
	if err != nil {
		t.Fatal(err)
	}
	if g.Token != 9 || g.First != 100 || g.Count != 11 || g.Next != 140 || g.Received != 105 || g.Late != 1 || !bytes.Equal(g.Arrived, f.Arrived) || !bytes.Equal(g.CEMarks, f.CEMarks) {
		t.Fatalf("got %+v", g)
	}
	if a, ce := g.Fate(0); !a || !ce {
		t.Errorf("packet 0: arrived %v ce %v", a, ce)
	}
	if a, _ := g.Fate(9); a {
		t.Errorf("packet 9 should be lost")
	}
	if a, ce := g.Fate(10); !a || !ce {
		t.Errorf("packet 10: arrived %v ce %v", a, ce)
	}
	if _, err := ParseFeedback(b[:len(b)-1]); err == nil {
		t.Error("truncated feedback accepted")
	}
	if _, err := AppendFeedback(nil, &Feedback{Count: MaxFeedbackPackets + 1}); err == nil {
		t.Error("oversized feedback written")
	}
}

func TestRequestValidate(t *testing.T) {
	ok := SessionRequest{Test: "8.1.1", RateBps: 10e6, PacketBytes: 1448, TargetRTTMs: 50, TargetMTU: 1500, DurationS: 10, Packets: 9000, ReorderPackets: 64, LossTimeoutMs: 200}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, mut := range []func(*SessionRequest){
		func(q *SessionRequest) { q.RateBps = 0 },
		func(q *SessionRequest) { q.PacketBytes = 10 },
		func(q *SessionRequest) { q.Packets = MaxPackets + 1 },
		func(q *SessionRequest) { q.DurationS = 1e300 },
		func(q *SessionRequest) { q.ReorderPackets = 0 },
		func(q *SessionRequest) { q.LossTimeoutMs = 0 },
	} {
		q := ok
		mut(&q)
		if q.Validate() == nil {
			t.Errorf("accepted %+v", q)
		}
	}
	e := EndRequest{Sent: 10, From: 11}
	if e.Validate(100) == nil {
		t.Error("from > sent accepted")
	}
	e = EndRequest{Sent: 101}
	if e.Validate(100) == nil {
		t.Error("sent > granted accepted")
	}
}

func TestReportFate(t *testing.T) {
	r := Report{Sent: 20, From: 10, Arrived: []byte{0x03, 0x00}, CEMarks: []byte{0x02, 0x00}}
	if a, ce, ok := r.Fate(10); !ok || !a || ce {
		t.Errorf("10: %v %v %v", a, ce, ok)
	}
	if a, ce, ok := r.Fate(11); !ok || !a || !ce {
		t.Errorf("11: %v %v %v", a, ce, ok)
	}
	if _, _, ok := r.Fate(9); ok {
		t.Error("9 is before From")
	}
	if _, _, ok := r.Fate(20); ok {
		t.Error("20 is not sent")
	}
}

func FuzzParseData(f *testing.F) {
	b := make([]byte, DataHeaderLen)
	PutData(b, Data{Token: 1, Seq: 2, SendNs: 3})
	f.Add(b)
	f.Add([]byte("SMBD"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseData(b)
		if err != nil {
			return
		}
		if d.Seq >= MaxPackets {
			t.Fatalf("seq %d accepted", d.Seq)
		}
		out := make([]byte, DataHeaderLen)
		PutData(out, d)
		if !bytes.Equal(out, b[:DataHeaderLen]) && b[6] == 0 && b[7] == 0 {
			t.Fatalf("round trip: %x != %x", out, b[:DataHeaderLen])
		}
	})
}

func FuzzParseFeedback(f *testing.F) {
	fb, _ := AppendFeedback(nil, &Feedback{Token: 1, First: 5, Count: 9, Arrived: []byte{1, 2}, CEMarks: []byte{0, 0}})
	f.Add(fb)
	f.Add(fb[:FeedbackHeaderLen])
	f.Add([]byte("SMBF\x01\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseFeedback(b)
		if err != nil {
			return
		}
		if g.Count > MaxFeedbackPackets || g.First+uint64(g.Count) > MaxPackets {
			t.Fatalf("bounds: %+v", g)
		}
		for i := uint32(0); i < g.Count; i++ {
			g.Fate(i) // must not panic
		}
	})
}

func FuzzSessionRequest(f *testing.F) {
	f.Add([]byte(`{"test":"8.1.1","rate_bps":1e7,"packet_bytes":1448,"duration_s":10,"packets":100,"reorder_packets":3,"loss_timeout_ms":100}`))
	f.Add([]byte(`{"rate_bps":1e400}`))
	f.Add([]byte(`{"test":"8.1.2","transport":"tcp","rate_bps":1e7,"duration_s":10,"receive_window_bytes":26064}`))
	f.Add([]byte(`{"transport":"tcp","rate_bps":1e7,"duration_s":10,"receive_window_bytes":26064,"receive_buffer_bytes":-1}`))
	f.Add([]byte(`{"transport":"quic"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var q SessionRequest
		if json.Unmarshal(b, &q) != nil || q.Validate() != nil {
			return
		}
		if q.DurationS > 86400 || q.DurationS <= 0 {
			t.Fatalf("accepted out of bounds: %+v", q)
		}
		if q.Transport == TransportTCP {
			if q.ReceiveWindowBytes < MinReceiveWindowBytes || q.ReceiveWindowBytes > MaxReceiveWindowBytes || q.ReceiveBufferBytes < 0 || q.ReceiveBufferBytes > MaxReceiveBufferBytes {
				t.Fatalf("accepted a TCP window out of bounds: %+v", q)
			}
			return
		}
		if q.Packets > MaxPackets || q.PacketBytes > MaxPacketBytes {
			t.Fatalf("accepted out of bounds: %+v", q)
		}
	})
}

// TestValidateTCP: a TCP session needs its window in bounds, not the UDP
// sink's fields; an unknown transport is refused.
func TestValidateTCP(t *testing.T) {
	ok := SessionRequest{Test: "8.1.2", Transport: TransportTCP, RateBps: 1e7, DurationS: 10, ReceiveWindowBytes: 26064}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid TCP request: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(*SessionRequest)
		want string
	}{
		{"window small", func(q *SessionRequest) { q.ReceiveWindowBytes = MinReceiveWindowBytes - 1 }, "receive_window_bytes"},
		{"window large", func(q *SessionRequest) { q.ReceiveWindowBytes = MaxReceiveWindowBytes + 1 }, "4194304"},
		{"buffer", func(q *SessionRequest) { q.ReceiveBufferBytes = 100 }, "receive_buffer_bytes"},
		{"transport", func(q *SessionRequest) { q.Transport = "sctp" }, "transport"},
		{"udp fields", func(q *SessionRequest) { q.Transport = "" }, "packet_bytes"},
	} {
		q := ok
		c.mod(&q)
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// TestReceiveBufferFor: the rule reproduces the measurements it was fit
// to (advertised segments at MSS 1448, rounded down) within a segment,
// grows with the window and stays in bounds.
func TestReceiveBufferFor(t *testing.T) {
	const mss = 1448
	for _, m := range []struct{ rcvbuf, segs int }{{4096, 2}, {8192, 6}, {13000, 10}, {16384, 13}, {20000, 16}, {32768, 27}} {
		model := (rcvbufSlope*float64(m.rcvbuf) - 2270) / mss
		if d := model - float64(m.segs); d < -1 || d > 1 {
			t.Errorf("SO_RCVBUF %d: the fit gives %.2f segments, measured %d", m.rcvbuf, model, m.segs)
		}
	}
	prev := 0
	for w := 2; w <= 64; w++ {
		b := ReceiveBufferFor(w * mss)
		if b <= prev {
			t.Fatalf("window %d segments: buffer %d not above %d", w, b, prev)
		}
		prev = b
		// The fit's window for that buffer is between W and W+1 segments.
		if got := (rcvbufSlope*float64(b) - 2270) / mss; got < float64(w) || got >= float64(w)+1 {
			t.Errorf("window %d segments: buffer %d advertises %.2f segments by the fit", w, b, got)
		}
	}
	for _, w := range []int{-1 << 30, 0, MinReceiveWindowBytes, MaxReceiveWindowBytes, 1 << 40} {
		if b := ReceiveBufferFor(w); b < MinReceiveBufferBytes || b > MaxReceiveBufferBytes {
			t.Errorf("window %d: buffer %d out of bounds", w, b)
		}
	}
}
