package stamp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// senderVector is a Session-Sender packet with a CoS TLV asking for EF,
// laid out by hand from RFC 8762 §4.2.1 and RFC 8972 §3, §4.4.
const senderVector = `
00000001 0102030405060708 8001 abcd
00000000 00000000 00000000 00000000 00000000 00000000 00000000
80040004 b8000000`

func TestSenderPacketVector(t *testing.T) {
	p := SenderPacket{Seq: 1, Timestamp: 0x0102030405060708, Error: 0x8001, SSID: 0xabcd,
		TLVs: []TLV{CoS{DSCP1: 46}.TLV(FlagU)}}
	got, err := p.AppendTo(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, senderVector)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", got, want)
	}
	q, err := ParseSender(want)
	if err != nil {
		t.Fatal(err)
	}
	if q.Seq != 1 || q.Timestamp != 0x0102030405060708 || q.Error != 0x8001 || q.SSID != 0xabcd || len(q.TLVs) != 1 {
		t.Fatalf("decoded %+v", q)
	}
	if c, err := ParseCoS(q.TLVs[0].Value); err != nil || c.DSCP1 != 46 || q.TLVs[0].Flags != FlagU {
		t.Fatalf("CoS %+v %v flags %x", c, err, q.TLVs[0].Flags)
	}
}

func TestSenderPadding(t *testing.T) {
	p := SenderPacket{Seq: 9}
	b, err := p.AppendTo(nil, 172) // G.711 RTP packet size
	if err != nil || len(b) != 172 {
		t.Fatalf("len %d err %v", len(b), err)
	}
	q, err := ParseSender(b)
	if err != nil || len(q.TLVs) != 1 || q.TLVs[0].Type != TypeExtraPadding || len(q.TLVs[0].Value) != 172-BaseLen-4 {
		t.Fatalf("padding TLV %+v %v", q.TLVs, err)
	}
	if _, err := p.AppendTo(nil, BaseLen+2); err == nil {
		t.Error("size with no room for a TLV header accepted")
	}
	if _, err := p.AppendTo(nil, MaxPacketLen+1); !errors.Is(err, ErrLong) {
		t.Errorf("oversized: %v", err)
	}
}

func TestCoSVectors(t *testing.T) {
	for _, tc := range []struct {
		c    CoS
		want string
	}{
		{CoS{DSCP1: 46}, "b8000000"},
		{CoS{DSCP1: 46, DSCP2: 10, ECN: 1}, "b8a40000"},
		{CoS{DSCP1: 46, DSCP2: 63, ECN: 3, RP: 1}, "bbfd0000"},
		{CoS{DSCP1: 0, DSCP2: 0x21, ECN: 2, RP: 0}, "02180000"},
	} {
		tl := tc.c.TLV(0)
		if got := hex.EncodeToString(tl.Value); got != tc.want {
			t.Errorf("%+v encoded %s, want %s", tc.c, got, tc.want)
		}
		back, err := ParseCoS(tl.Value)
		if err != nil || back != tc.c {
			t.Errorf("%+v decoded %+v %v", tc.c, back, err)
		}
	}
	if _, err := ParseCoS([]byte{1, 2}); !errors.Is(err, ErrMalformTLV) {
		t.Errorf("short CoS: %v", err)
	}
}

func TestReflectVector(t *testing.T) {
	in := unhex(t, senderVector)
	out := make([]byte, len(in))
	tos := Reflect(out, in, ReflectInfo{
		Seq: 7, Receive: 0x1111111111111111, Error: 0x0001, TTL: 64,
		TOS: 10<<2 | 1, DSCP: 0, ECN: 2,
	})
	want := unhex(t, `
00000007 0000000000000000 0001 abcd
1111111111111111 00000001 0102030405060708 8001 0000 40 000000
00040004 b8a40000`)
	if !bytes.Equal(out, want) {
		t.Fatalf("reflected\n%x\nwant\n%x", out, want)
	}
	if tos != 46<<2|2 {
		t.Errorf("reply TOS %#x, want DSCP1 46 with ECN 2", tos)
	}
	p, err := ParseReflector(out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Seq != 7 || p.SenderSeq != 1 || p.SenderTimestamp != 0x0102030405060708 || p.SenderError != 0x8001 ||
		p.SenderTTL != 64 || p.Receive != 0x1111111111111111 || p.SSID != 0xabcd {
		t.Fatalf("decoded %+v", p)
	}
	c, ok := FindCoS(p.TLVs)
	if !ok || c.DSCP2 != 10 || c.ECN != 1 || c.DSCP1 != 46 {
		t.Fatalf("CoS %+v %v", c, ok)
	}
	// Round trip through AppendTo.
	if b := p.AppendTo(nil); !bytes.Equal(b, out) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", b, out)
	}
}

func TestReflectUnknownAndMalformedTLVs(t *testing.T) {
	in := make([]byte, BaseLen)
	in = append(in, 0x00, 200, 0x00, 0x02, 0xaa, 0xbb) // unknown type 200
	in = append(in, 0x80, TypeCoS, 0x00, 0x09, 0x01)   // length beyond the packet
	out := make([]byte, len(in))
	Reflect(out, in, ReflectInfo{TTL: -1, TOS: -1})
	if out[BaseLen]&FlagU == 0 {
		t.Error("unknown TLV not flagged U")
	}
	if out[BaseLen+6]&FlagM == 0 {
		t.Error("truncated TLV not flagged M")
	}
	if !bytes.Equal(out[BaseLen+4:BaseLen+6], []byte{0xaa, 0xbb}) {
		t.Error("unknown TLV value not copied")
	}
	if _, err := ParseReflector(out); !errors.Is(err, ErrMalformTLV) {
		t.Errorf("parse: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := ParseSender(make([]byte, 43)); !errors.Is(err, ErrShort) {
		t.Errorf("43 octets: %v", err)
	}
	if _, err := ParseReflector(nil); !errors.Is(err, ErrShort) {
		t.Errorf("empty: %v", err)
	}
	b := make([]byte, BaseLen+3) // trailing bytes shorter than a TLV header
	p, err := ParseSender(b)
	if !errors.Is(err, ErrMalformTLV) || len(p.TLVs) != 0 {
		t.Errorf("short TLV area: %v %+v", err, p)
	}
}

func TestTimestampNTP(t *testing.T) {
	if got := TimestampFromNs(0); got != 0x83aa7e8000000000 {
		t.Errorf("Unix epoch = %#x, want 0x83aa7e8000000000", uint64(got))
	}
	if got := TimestampFromNs(500_000_000); got != 0x83aa7e8080000000 {
		t.Errorf("0.5 s = %#x", uint64(got))
	}
	for _, ns := range []int64{0, 1, 999_999_999, 1_700_000_000_123_456_789, -5} {
		back := TimestampFromNs(ns).Ns()
		if d := back - ns; d < -1 || d > 1 {
			t.Errorf("round trip %d → %d", ns, back)
		}
	}
}

func TestErrorEstimate(t *testing.T) {
	e := NewErrorEstimate(true, 1)
	if !e.Synced() || e.PTP() {
		t.Errorf("flags of %#x", uint16(e))
	}
	if s := e.Seconds(); s < 1 || s > 1.01 {
		t.Errorf("1 s encoded as %v s", s)
	}
	if s := NewErrorEstimate(false, 100e-6).Seconds(); s < 100e-6 || s > 101e-6 {
		t.Errorf("100 µs encoded as %v", s)
	}
	if e := NewErrorEstimate(false, 0); e&0xff == 0 {
		t.Error("multiplier 0 is not allowed (RFC 4656)")
	}
}

func FuzzParseSender(f *testing.F) {
	f.Add(unhex(f, senderVector))
	f.Add(make([]byte, BaseLen))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseSender(b)
		if err != nil && !errors.Is(err, ErrMalformTLV) {
			return
		}
		// A packet that parses re-encodes to its own bytes, bar MBZ.
		if err == nil {
			out, err := p.AppendTo(nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(b) || !bytes.Equal(out[:16], b[:16]) || !bytes.Equal(out[BaseLen:], b[BaseLen:]) {
				t.Fatalf("re-encoding differs:\n%x\n%x", out, b)
			}
		}
	})
}

func FuzzParseReflector(f *testing.F) {
	in := unhex(f, senderVector)
	out := make([]byte, len(in))
	Reflect(out, in, ReflectInfo{TTL: 1, TOS: 2})
	f.Add(out)
	f.Add(make([]byte, 50))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseReflector(b)
		if err == nil {
			if got := p.AppendTo(nil); len(got) != len(b) {
				t.Fatalf("re-encoded length %d, want %d", len(got), len(b))
			}
		}
	})
}

// FuzzReflect checks the reflector's hot path on arbitrary probes: no
// panic, and the reply is exactly as long as the probe.
func FuzzReflect(f *testing.F) {
	f.Add(unhex(f, senderVector), 46)
	f.Add(make([]byte, BaseLen+7), -1)
	f.Fuzz(func(t *testing.T, in []byte, tos int) {
		if len(in) < BaseLen || len(in) > MaxPacketLen {
			return
		}
		out := make([]byte, len(in)+8)
		for i := range out {
			out[i] = 0xee
		}
		Reflect(out[:len(in)], in, ReflectInfo{TOS: tos % 256, TTL: 64})
		for _, c := range out[len(in):] {
			if c != 0xee {
				t.Fatal("reply written beyond the probe's length")
			}
		}
	})
}
