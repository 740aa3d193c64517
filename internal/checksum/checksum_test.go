package checksum

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// reference is RFC 1071's loop: 16-bit words, folded at the end.
func reference(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func TestChecksumMatchesRFC1071(t *testing.T) {
	// RFC 1071 section 3's example bytes: their one's complement sum is
	// 0xddf2, so the checksum is 0x220d.
	if got := Checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0); got != 0x220d {
		t.Errorf("RFC 1071 example: %#04x, want 0x220d", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 70 {
		for range 20 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.UintN(256))
			}
			if r.UintN(4) == 0 { // long runs of 0xff carry the most
				for i := range b {
					b[i] = 0xff
				}
			}
			if got, want := Checksum(b, 0), reference(b); got != want {
				t.Fatalf("%d bytes % x: %#04x, want %#04x", n, b, got, want)
			}
		}
	}
}

func TestSumInPieces(t *testing.T) {
	b := make([]byte, 1501)
	for i := range b {
		b[i] = byte(i * 7)
	}
	if got, want := Checksum(b[40:], Sum(b[:40], 0)), Checksum(b, 0); got != want {
		t.Errorf("in two pieces %#04x, whole %#04x", got, want)
	}
}

// A valid header sums, checksum included, to 0xffff: its checksum over
// itself is 0.
func TestUpdate(t *testing.T) {
	h := []byte{0x45, 0x00, 0x00, 0x54, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x01, 0, 0, 0xc6, 0x12, 0x01, 0x01, 0xc6, 0x12, 0x01, 0x02}
	binary.BigEndian.PutUint16(h[10:], Checksum(h, 0))
	for _, tos := range []byte{0x00, 0xb8, 0xff, 0x03, 0x20} {
		old := binary.BigEndian.Uint16(h[0:2])
		h[1] = tos
		Update(h[10:12], old, binary.BigEndian.Uint16(h[0:2]))
		if c := Checksum(h, 0); c != 0 {
			t.Errorf("TOS %#02x: header checksum over itself %#04x after Update, want 0", tos, c)
		}
	}
}

func BenchmarkChecksum1500(b *testing.B) {
	buf := make([]byte, 1500)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		Checksum(buf, 0)
	}
}
