package stream

import (
	"bytes"
	"testing"
)

// recWriter keeps each write apart.
type recWriter struct{ writes [][]byte }

func (w *recWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

// TestWriteJoined: the bytes written are the frames in order, the first
// write holds the small parts and at most a TLS record's worth of payload,
// and the scratch buffer never grows with the payload (it was as large as
// the frame, a megabyte per TLS stream).
func TestWriteJoined(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), MaxChunk/16)
	for _, tc := range []struct {
		name   string
		bufs   [][]byte
		writes int
	}{
		{"large frame", [][]byte{[]byte("ctrl-frame"), []byte("hdr"), payload}, 2},
		{"small frame", [][]byte{[]byte("hdr"), payload[:100]}, 1},
		{"exactly a record", [][]byte{[]byte("hdr"), payload[:joinedLen-3]}, 1},
		{"payload only", [][]byte{payload[:joinedLen+1]}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w recWriter
			var scratch []byte
			if err := writeJoined(&w, tc.bufs, &scratch); err != nil {
				t.Fatal(err)
			}
			if len(w.writes) != tc.writes {
				t.Fatalf("%d writes, want %d", len(w.writes), tc.writes)
			}
			if got, want := bytes.Join(w.writes, nil), bytes.Join(tc.bufs, nil); !bytes.Equal(got, want) {
				t.Fatalf("wrote %d bytes that differ from the %d of the frames", len(got), len(want))
			}
			if n := len(w.writes[0]); n > joinedLen {
				t.Errorf("first write %d bytes, want at most %d", n, joinedLen)
			}
			if c := cap(scratch); c > 2*joinedLen {
				t.Errorf("scratch grew to %d bytes", c)
			}
		})
	}
}
