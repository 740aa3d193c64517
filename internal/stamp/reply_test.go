package stamp

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// twampLightVector is a 41-octet TWAMP-Light reflector packet (RFC 5357
// §4.2.1, unauthenticated, no padding) answering probe 1 of senderVector,
// laid out by hand.
const twampLightVector = `
00000009 1122334455667788 8001 0000
99aabbccddeeff00 00000001 0102030405060708 8001 0000 ff`

func TestParseReplyTWAMPLight(t *testing.T) {
	probe := unhex(t, senderVector) // SSID abcd, CoS TLV
	base := unhex(t, twampLightVector)
	for _, tc := range []struct {
		name  string
		reply []byte
	}{
		{"no padding", base},
		// Same size as the probe: the probe's padding from octet 14, less 27.
		{"same size", append(bytes.Clone(base), probe[14:len(probe)-27]...)},
		// All the probe's padding: 27 octets longer than the probe.
		{"all padding", append(bytes.Clone(base), probe[14:]...)},
	} {
		p, f, err := ParseReply(tc.reply, probe)
		if err != nil || f != FormatTWAMPLight {
			t.Errorf("%s (%d octets): format %v err %v", tc.name, len(tc.reply), f, err)
			continue
		}
		if p.Seq != 9 || p.Timestamp != 0x1122334455667788 || p.Receive != 0x99aabbccddeeff00 || p.SenderSeq != 1 ||
			p.SenderTimestamp != 0x0102030405060708 || p.SenderError != 0x8001 || p.SenderTTL != 0xff || p.SSID != 0 || p.TLVs != nil {
			t.Errorf("%s: decoded %+v", tc.name, p)
		}
	}
}

func TestParseReplySTAMP(t *testing.T) {
	probe := unhex(t, senderVector)
	out := make([]byte, len(probe))
	Reflect(out, probe, ReflectInfo{Seq: 7, TTL: 64, TOS: 0})
	p, f, err := ParseReply(out, probe)
	if err != nil || f != FormatSTAMP || p.SSID != 0xabcd || p.SenderSeq != 1 {
		t.Fatalf("format %v err %v packet %+v", f, err, p)
	}
	if _, ok := FindCoS(p.TLVs); !ok {
		t.Error("reflected CoS TLV lost")
	}
	// Without an SSID, the reflected TLV alone tells STAMP.
	probe[14], probe[15] = 0, 0
	Reflect(out, probe, ReflectInfo{TTL: 64, TOS: 0})
	if _, f, err := ParseReply(out, probe); err != nil || f != FormatSTAMP {
		t.Fatalf("SSID 0: format %v err %v", f, err)
	}
	// A 44-octet probe and reply with zero MBZ octets read the same both ways.
	bare := probe[:BaseLen]
	Reflect(out[:BaseLen], bare, ReflectInfo{TTL: 64, TOS: 0})
	if _, f, err := ParseReply(out[:BaseLen], bare); err != nil || f != FormatEither {
		t.Fatalf("44 octets: format %v err %v", f, err)
	}
	out[42] = 0x5a // padding where STAMP has MBZ
	if _, f, _ := ParseReply(out[:BaseLen], bare); f != FormatTWAMPLight {
		t.Fatalf("non-zero octet 42: format %v", f)
	}
}

func TestParseReplyErrors(t *testing.T) {
	probe := unhex(t, senderVector)
	if _, _, err := ParseReply(make([]byte, 40), probe); !errors.Is(err, ErrReplyShort) {
		t.Errorf("40 octets: %v", err)
	}
	if _, _, err := ParseReply(make([]byte, MaxReplyLen+1), probe); !errors.Is(err, ErrReplyLong) {
		t.Errorf("%d octets: %v", MaxReplyLen+1, err)
	}
	if _, f, err := ParseReply(make([]byte, MaxReplyLen), probe); err != nil || f != FormatTWAMPLight {
		t.Errorf("%d octets: %v %v", MaxReplyLen, f, err)
	}
}

func TestUnparsedBounded(t *testing.T) {
	var u Unparsed
	for i := range 1000 {
		u.Add(i%50, "why")
	}
	u.Add(3, "other reason")
	if len(u.Kinds) != maxUnparsedKinds || u.Total() != 1001 {
		t.Fatalf("%d kinds, total %d", len(u.Kinds), u.Total())
	}
	if s := u.String(); !strings.Contains(s, "20 replies of 0 bytes, not STAMP or TWAMP-Light (why)") || !strings.Contains(s, "more of other sizes") {
		t.Fatalf("%s", s)
	}
}

// FuzzParseReply checks the reply parser on arbitrary replies and probes:
// no panic, a format for every reply it accepts, and the fields every
// format shares at their offsets.
func FuzzParseReply(f *testing.F) {
	probe := unhex(f, senderVector)
	f.Add(unhex(f, twampLightVector), probe)
	out := make([]byte, len(probe))
	Reflect(out, probe, ReflectInfo{TTL: 1, TOS: 2})
	f.Add(out, probe)
	f.Add(make([]byte, BaseLen), make([]byte, BaseLen))
	f.Add(make([]byte, 38), probe)
	f.Fuzz(func(t *testing.T, b, probe []byte) {
		p, format, err := ParseReply(b, probe)
		if err != nil && !errors.Is(err, ErrMalformTLV) {
			if format != FormatUnknown {
				t.Fatalf("error %v with format %v", err, format)
			}
			return
		}
		if format == FormatUnknown || len(b) < TWAMPLightBaseLen || len(b) > MaxReplyLen {
			t.Fatalf("%d octets accepted as %v", len(b), format)
		}
		if p.SenderSeq != uint32(b[24])<<24|uint32(b[25])<<16|uint32(b[26])<<8|uint32(b[27]) || p.SenderTTL != b[40] {
			t.Fatalf("shared fields misread: %+v", p)
		}
		if format == FormatTWAMPLight && (p.SSID != 0 || p.TLVs != nil) {
			t.Fatalf("TWAMP-Light reply with SSID %d, TLVs %v", p.SSID, p.TLVs)
		}
	})
}
