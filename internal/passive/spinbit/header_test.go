package spinbit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// long builds a long-header packet: type bits, version, DCID, SCID, a
// token (Initial only) and a payload of n bytes behind a Length field.
func long(first byte, version uint32, dcid, scid []byte, initial bool, n int) []byte {
	b := []byte{first}
	b = binary.BigEndian.AppendUint32(b, version)
	b = append(b, byte(len(dcid)))
	b = append(b, dcid...)
	b = append(b, byte(len(scid)))
	b = append(b, scid...)
	if initial {
		b = append(b, 0) // empty token
	}
	b = append(b, 0x40|byte(n>>8), byte(n)) // 2-byte varint length
	return append(b, make([]byte, n)...)
}

func TestParseShort(t *testing.T) {
	for _, c := range []struct {
		first     byte
		spin, fix bool
	}{{0x40, false, true}, {0x60, true, true}, {0x20, true, false}, {0x00, false, false}} {
		b := append([]byte{c.first}, 1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbb)
		var h Header
		rest, err := Parse(b, 8, &h)
		if err != nil || rest != nil {
			t.Fatalf("%#x: %v, rest %d", c.first, err, len(rest))
		}
		if h.Long || h.Type != OneRTT || h.Spin != c.spin || h.FixedBit != c.fix || !bytes.Equal(h.DCID, b[1:9]) || h.Size != len(b) {
			t.Errorf("%#x: %+v", c.first, h)
		}
	}
	var h Header
	if _, err := Parse([]byte{0x40, 1, 2}, 8, &h); !errors.Is(err, ErrShort) {
		t.Errorf("short DCID: %v", err)
	}
}

// TestParseCoalesced reads an Initial, a Handshake and a 1-RTT packet from
// one datagram (RFC 9000 §12.2), for v1, v2 and draft 29, whose long-header
// type bits differ (v2: RFC 9369 §3.2).
func TestParseCoalesced(t *testing.T) {
	dcid, scid := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9, 9, 9}
	for _, c := range []struct {
		version            uint32
		initial, handshake byte // first bytes
	}{
		{Version1, 0xc0, 0xe0},
		{0xff00001d, 0xc0, 0xe0},
		{Version2, 0xd0, 0xf0},
	} {
		d := long(c.initial, c.version, dcid, scid, true, 40)
		d = append(d, long(c.handshake, c.version, dcid, scid, false, 30)...)
		short := append([]byte{0x60}, scid...)
		short = append(short, 0xee, 0xee)
		d = append(d, short...)
		var h Header
		rest, err := Parse(d, 4, &h)
		if err != nil || !h.Long || h.Type != Initial || h.Version != c.version || !bytes.Equal(h.SCID, scid) || !bytes.Equal(h.DCID, dcid) {
			t.Fatalf("%#x initial: %v %+v", c.version, err, h)
		}
		rest, err = Parse(rest, 4, &h)
		if err != nil || h.Type != Handshake {
			t.Fatalf("%#x handshake: %v %+v", c.version, err, h)
		}
		rest, err = Parse(rest, 4, &h)
		if err != nil || h.Type != OneRTT || !h.Spin || !bytes.Equal(h.DCID, scid) || rest != nil || h.Size != len(short) {
			t.Fatalf("%#x 1-rtt: %v %+v rest %d", c.version, err, h, len(rest))
		}
	}
}

func TestParseLongKinds(t *testing.T) {
	var h Header
	// Version negotiation: version 0, whatever follows.
	vn := long(0x80, 0, []byte{1}, []byte{2}, false, 0)
	if _, err := Parse(vn, 0, &h); err != nil || h.Type != VersionNegotiation {
		t.Errorf("version negotiation: %v %+v", err, h)
	}
	// Retry (v1 type 3, v2 type 0) has no Length: it takes the datagram.
	for _, c := range []struct {
		v     uint32
		first byte
	}{{Version1, 0xf0}, {Version2, 0xc0}} {
		r := long(c.first, c.v, []byte{1}, []byte{2}, false, 20)
		if rest, err := Parse(r, 0, &h); err != nil || h.Type != Retry || rest != nil || h.Size != len(r) {
			t.Errorf("%#x retry: %v %+v", c.v, err, h)
		}
	}
	// 0-RTT: v1 type 1, v2 type 2.
	if _, err := Parse(long(0xd0, Version1, nil, nil, false, 5), 0, &h); err != nil || h.Type != ZeroRTT {
		t.Errorf("v1 0-rtt: %v %+v", err, h)
	}
	if _, err := Parse(long(0xe0, Version2, nil, nil, false, 5), 0, &h); err != nil || h.Type != ZeroRTT {
		t.Errorf("v2 0-rtt: %v %+v", err, h)
	}
	// Greased fixed bit on a long header (RFC 9287).
	if _, err := Parse(long(0x80, Version1, nil, nil, true, 5), 0, &h); err != nil || h.FixedBit || h.Type != Initial {
		t.Errorf("greased initial: %v %+v", err, h)
	}
	// Unknown version: the length is not known, ErrVersion.
	if _, err := Parse(long(0xc0, 0x1a2a3a4a, nil, nil, true, 5), 0, &h); !errors.Is(err, ErrVersion) {
		t.Errorf("unknown version: %v", err)
	}
	// Length beyond the datagram, CID over 20 bytes, truncations.
	bad := long(0xe0, Version1, nil, nil, false, 50)
	if _, err := Parse(bad[:len(bad)-1], 0, &h); !errors.Is(err, ErrShort) {
		t.Errorf("truncated payload: %v", err)
	}
	if _, err := Parse(long(0xe0, Version1, make([]byte, 21), nil, false, 1), 0, &h); !errors.Is(err, ErrShort) {
		t.Errorf("21-byte DCID: %v", err)
	}
	full := long(0xc0, Version1, []byte{1, 2, 3}, []byte{4, 5}, true, 10)
	for n := range len(full) - 10 {
		if _, err := Parse(full[:n], 0, &h); err == nil {
			t.Errorf("prefix of %d bytes parsed", n)
		}
	}
	for _, v := range []uint32{Version1, Version2, 0xff00001d, 0xff000022} {
		if !KnownVersion(v) {
			t.Errorf("%#x not known", v)
		}
	}
	for _, v := range []uint32{0, 0xff00001c, 0xff000023, 0x0a0a0a0a} {
		if KnownVersion(v) {
			t.Errorf("%#x known", v)
		}
	}
}

// FuzzParse: Parse never panics, and what it returns lies inside the input:
// Size and rest account for the datagram exactly.
func FuzzParse(f *testing.F) {
	f.Add(long(0xc0, Version1, []byte{1, 2, 3, 4}, []byte{5}, true, 8), 4)
	f.Add(long(0xd0, Version2, nil, nil, false, 3), 0)
	f.Add([]byte{0x60, 1, 2, 3, 4, 5}, 8)
	f.Fuzz(func(t *testing.T, b []byte, dcidLen int) {
		dcidLen &= 31
		var h Header
		for n := 0; len(b) > 0 && n < 16; n++ {
			rest, err := Parse(b, dcidLen, &h)
			if err != nil {
				return
			}
			if h.Size <= 0 || h.Size > len(b) || len(rest) != len(b)-h.Size {
				t.Fatalf("size %d rest %d of %d", h.Size, len(rest), len(b))
			}
			b = rest
		}
	})
}

func TestDetect(t *testing.T) {
	long := func(first byte, v string, size int) []byte {
		b := append([]byte{first}, v...)
		b = append(b, 4, 1, 2, 3, 4, 0, 0)
		return append(b, make([]byte, max(size-len(b), 0))...)
	}
	cases := []struct {
		b    []byte
		want Family
		name string
	}{
		{long(0xc0, "\x00\x00\x00\x01", 50), IETF, "v1"},
		{long(0xc0, "\xff\x00\x00\x1b", 50), Draft, "draft-27"},
		{long(0xc0, "\x00\x00\x00\x00", 50), Negotiation, "0x000000"},
		{long(0xc0, "\x1a\x2a\x3a\x4a", 50), Greased, "0x1a2a3a4a"},
		{long(0xc0, "Q046", 50), GoogleQUIC, "gquic-Q046"},
		{long(0xc0, "T051", 50), GoogleQUIC, "gquic-T051"},
		{long(0xc0, "\xfa\xce\xb0\x02", 50), Private, "mvfst-0xfaceb002"},
		{long(0xc0, "\x12\x34\x56\x78", 1200), Private, "0x12345678"},
		{long(0xc0, "\x12\x34\x56\x78", 1199), NotQUIC, ""},
		{long(0x80, "\xff\x00\x00\x1b", 50), NotQUIC, ""},  // RTP-like: no fixed bit
		{long(0x40, "\x00\x00\x00\x01", 50), NotQUIC, ""},  // short header
		{[]byte{0xc0, 0xff, 0, 0, 27, 30, 1}, NotQUIC, ""}, // DCID too long
	}
	for _, c := range cases {
		got, v := Detect(c.b)
		if got != c.want {
			t.Errorf("%x: %v, want %v", c.b[:5], got, c.want)
		}
		if got != NotQUIC && VersionName(v) != c.name && c.want != Negotiation {
			t.Errorf("%x: name %q, want %q", c.b[:5], VersionName(v), c.name)
		}
	}
}

func FuzzDetect(f *testing.F) {
	f.Add([]byte{0xc0, 'Q', '0', '4', '6', 0, 0})
	f.Add([]byte{0xc0, 0xff, 0, 0, 27, 4, 1, 2, 3, 4, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fam, v := Detect(b)
		if fam == NotQUIC && v != 0 || fam != NotQUIC && (len(b) < 7 || b[0]&0x80 == 0) {
			t.Fatalf("%v %x for %x", fam, v, b)
		}
		_ = VersionName(v)
	})
}
