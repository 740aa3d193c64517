package testreflector

import (
	"testing"
	"time"
)

// FuzzReplies checks the reply builders on any datagram the socket can
// deliver: no panic, and the lengths RFC 8762 and RFC 5357 give.
func FuzzReplies(f *testing.F) {
	f.Add(make([]byte, 44), uint8(0))
	f.Add(make([]byte, 13), uint8(2))
	f.Add(make([]byte, 2048), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, pad uint8) {
		if len(in) > 2048 { // the reflector's read buffer
			in = in[:2048]
		}
		out := make([]byte, 2048+41)
		if b := stampReply(out, in, 1, time.Now()); b != nil && len(b) != len(in) {
			t.Fatalf("STAMP reply of %d octets to %d", len(b), len(in))
		}
		p := Padding(pad % 3)
		b := twampLightReply(out, in, 1, time.Now(), p)
		if b == nil {
			if len(in) >= 14 {
				t.Fatalf("no TWAMP-Light reply to %d octets", len(in))
			}
			return
		}
		want := map[Padding]int{PadSameSize: max(41, len(in)), PadNone: 41, PadAll: len(in) + 27}[p]
		if len(b) != want {
			t.Fatalf("padding %d: reply of %d octets to %d, want %d", p, len(b), len(in), want)
		}
	})
}
