package protocol

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestProbeRoundTrip(t *testing.T) {
	b := AppendProbe(nil, Probe{Seq: 7, SentNs: -3})
	b = AppendProbeReply(b, ProbeReply{Seq: 7, SentNs: -3, RecvNs: 100, SendNs: 250})
	fr := NewReader(bytes.NewReader(b), 0)
	typ, p, err := fr.Next(nil)
	if err != nil || typ != FrameProbe {
		t.Fatalf("first frame: %d, %v", typ, err)
	}
	if got := DecodeProbe(p); got != (Probe{Seq: 7, SentNs: -3}) {
		t.Fatalf("probe = %+v", got)
	}
	typ, p, err = fr.Next(nil)
	if err != nil || typ != FrameProbeReply {
		t.Fatalf("second frame: %d, %v", typ, err)
	}
	if got := DecodeProbeReply(p); got != (ProbeReply{Seq: 7, SentNs: -3, RecvNs: 100, SendNs: 250}) {
		t.Fatalf("reply = %+v", got)
	}
	if _, _, err := fr.Next(nil); err != io.EOF {
		t.Fatalf("after last frame: %v, want io.EOF", err)
	}
}

func TestDataFramesCountedAcrossReads(t *testing.T) {
	var b []byte
	var h [HeaderLen]byte
	sizes := []int{0, 1, 5000, 70000, 3}
	want := 0
	for _, n := range sizes {
		PutHeader(h[:], FrameData, n)
		b = append(b, h[:]...)
		b = append(b, make([]byte, n)...)
		want += n
		b = AppendProbe(b, Probe{Seq: uint64(n)})
	}
	// One byte per read: every boundary falls inside a header or payload.
	fr := NewReader(iotest.OneByteReader(bytes.NewReader(b)), 4096)
	got, probes := 0, 0
	for {
		typ, p, err := fr.Next(func(n int) { got += n })
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if typ == FrameProbe {
			if DecodeProbe(p).Seq != uint64(sizes[probes]) {
				t.Fatalf("probe %d seq %d", probes, DecodeProbe(p).Seq)
			}
			probes++
		}
	}
	if got != want || probes != len(sizes) {
		t.Fatalf("counted %d bytes and %d probes, want %d and %d", got, probes, want, len(sizes))
	}
}

func TestMalformed(t *testing.T) {
	cases := map[string][]byte{
		"unknown type":   {9, 0, 0, 0, 0, 0, 0, 0},
		"reserved set":   {1, 0, 1, 0, 0, 0, 0, 0},
		"oversized":      {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
		"probe too long": {2, 0, 0, 0, 0, 0, 0, 17},
		"reply short":    {3, 0, 0, 0, 0, 0, 0, 8},
	}
	for name, b := range cases {
		_, _, err := NewReader(bytes.NewReader(b), 0).Next(nil)
		if !errors.Is(err, ErrFrame) {
			t.Errorf("%s: err = %v, want ErrFrame", name, err)
		}
	}
	// Truncated frames are an unexpected EOF, not a clean end.
	for _, b := range [][]byte{{1, 0, 0}, {1, 0, 0, 0, 0, 0, 0, 10, 1, 2}, AppendProbe(nil, Probe{})[:12]} {
		if _, _, err := NewReader(bytes.NewReader(b), 0).Next(nil); err != io.ErrUnexpectedEOF {
			t.Errorf("truncated %v: err = %v, want io.ErrUnexpectedEOF", b, err)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add(AppendProbe(nil, Probe{Seq: 1}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 2, 'a', 'b'})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 32})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := NewReader(bytes.NewReader(b), 4096)
		total := 0
		for i := 0; i < len(b)+1; i++ {
			_, p, err := fr.Next(func(n int) { total += n })
			if err != nil {
				break
			}
			if len(p) > ProbeReplyLen {
				t.Fatalf("control payload of %d bytes", len(p))
			}
		}
		if total > len(b) {
			t.Fatalf("counted %d data bytes from %d input bytes", total, len(b))
		}
	})
}

func TestParseServer(t *testing.T) {
	for in, want := range map[string]string{
		"example.net": "http://example.net:8080", "h:1": "http://h:1", "https://h": "https://h:443",
		"http://[::1]:9/x?y": "http://[::1]:9",
	} {
		u, err := ParseServer(in)
		if err != nil || u.String() != want {
			t.Errorf("ParseServer(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, bad := range []string{"", "ftp://h", "http://"} {
		if _, err := ParseServer(bad); err == nil {
			t.Errorf("ParseServer(%q) accepted", bad)
		}
	}
}

// TestReaderGrows: with GrowTo, large data frames read in full-buffer
// reads double the buffer up to the bound, and no byte or control frame
// is lost across a growth, whatever the reads return.
func TestReaderGrows(t *testing.T) {
	var b []byte
	var want int
	for i, n := range []int{100 << 10, 1 << 20, 7, 300 << 10, 1 << 20, 1 << 20} {
		hdr := make([]byte, HeaderLen)
		PutHeader(hdr, FrameData, n)
		b = append(b, hdr...)
		b = append(b, bytes.Repeat([]byte{byte(i)}, n)...)
		want += n
		b = AppendProbe(b, Probe{Seq: uint64(i)})
	}
	for _, name := range []string{"whole reads", "one byte reads"} {
		var r io.Reader = bytes.NewReader(b)
		if name == "one byte reads" {
			r = iotest.OneByteReader(r)
		}
		fr := NewReader(r, 16<<10)
		fr.GrowTo(64 << 10)
		total, probes := 0, 0
		for {
			typ, p, err := fr.Next(func(n int) { total += n })
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v after %d bytes, %d probes", name, err, total, probes)
			}
			if typ == FrameProbe {
				if got := DecodeProbe(p).Seq; got != uint64(probes) {
					t.Fatalf("%s: probe %d, want %d", name, got, probes)
				}
				probes++
			}
		}
		if total != want || probes != 6 {
			t.Fatalf("%s: %d bytes and %d probes, want %d and 6", name, total, probes, want)
		}
		if wantBuf := map[string]int{"whole reads": 64 << 10, "one byte reads": 16 << 10}[name]; len(fr.buf) != wantBuf {
			t.Fatalf("%s: buffer %d bytes, want %d", name, len(fr.buf), wantBuf)
		}
	}
}
