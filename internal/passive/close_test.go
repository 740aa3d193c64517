package passive

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap"
)

// sllCap builds a Linux cooked (SLL2) capture as `tcpdump -i any` writes
// it. A packet added with fwd is captured twice, as a forwarding host
// does: on its way in (interface 2, PACKET_HOST) and 20 µs later on its
// way out (interface 3, PACKET_OUTGOING), with the TTL one less.
type sllCap struct {
	t   *testing.T
	buf bytes.Buffer
	w   *pcap.Writer
	id  uint16
}

func newSLLCap(t *testing.T) *sllCap {
	c := &sllCap{t: t}
	w, err := pcap.NewWriter(&c.buf, pcap.LinkSLL2, 65535)
	if err != nil {
		t.Fatal(err)
	}
	c.w = w
	return c
}

func sll2(ifindex uint32, pkttype byte, ip []byte) []byte {
	h := make([]byte, 20, 20+len(ip))
	binary.BigEndian.PutUint16(h, 0x0800)
	binary.BigEndian.PutUint32(h[4:], ifindex)
	binary.BigEndian.PutUint16(h[8:], 1) // ARPHRD_ETHER
	h[10], h[11] = pkttype, 6
	return append(h, ip...)
}

// add writes one TCP segment client→server (up) or back at ms.
func (c *sllCap) add(ms float64, up bool, seq, ack uint32, flags uint8, payload int, fwd bool) {
	c.id++
	src, dst, sp, dp := clientIP, serverIP, uint16(40000), uint16(80)
	if !up {
		src, dst, sp, dp = dst, src, dp, sp
	}
	seg := tcpSeg(sp, dp, seq, ack, flags, uint32(ms)+1, 0, payload)
	ip := ipHeader(src, dst, 6, c.id, seg)
	t := int64(ms * 1e6)
	if err := c.w.Write(t, sll2(2, 0, ip), 0); err != nil {
		c.t.Fatal(err)
	}
	if fwd {
		out := bytes.Clone(ip)
		out[8]--
		out[10], out[11] = 0x12, 0x34 // the checksum a router rewrites
		if err := c.w.Write(t+20e3, sll2(3, 4, out), 0); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *sllCap) analyse() *model.Analysis {
	c.t.Helper()
	if err := c.w.Flush(); err != nil {
		c.t.Fatal(err)
	}
	a := New(Config{Interface: -1})
	if _, err := a.Read(bytes.NewReader(c.buf.Bytes()), model.CaptureFile{Path: "sll"}); err != nil {
		c.t.Fatal(err)
	}
	return a.Finish(nil)
}

// session writes a handshake and n request/response exchanges of 100 and
// 1000 bytes, 1 ms apart from start; it returns the next sequence
// numbers of client and server.
func (c *sllCap) session(start float64, n int, fwd bool) (uint32, uint32) {
	cs, ss := uint32(1000), uint32(5000)
	c.add(start, true, cs, 0, flagSYN, 0, fwd)
	c.add(start+1, false, ss, cs+1, flagSYN|flagACK, 0, fwd)
	cs, ss = cs+1, ss+1
	c.add(start+2, true, cs, ss, flagACK, 0, fwd)
	tm := start + 3
	for range n {
		c.add(tm, true, cs, ss, flagACK|0x08, 100, fwd)
		cs += 100
		c.add(tm+1, false, ss, cs, flagACK|0x08, 1000, fwd)
		ss += 1000
		c.add(tm+2, true, cs, ss, flagACK, 0, fwd)
		tm += 3
	}
	return cs, ss
}

func TestSLLForwardedCopiesCountedOnce(t *testing.T) {
	one, two := newSLLCap(t), newSLLCap(t)
	one.session(0, 3, false)
	two.session(0, 3, true)
	r1, r2 := one.analyse(), two.analyse()
	if len(r1.TCP) != 1 || len(r2.TCP) != 1 {
		t.Fatalf("connections: %d without copies, %d with", len(r1.TCP), len(r2.TCP))
	}
	a, b := r1.TCP[0], r2.TCP[0]
	if !reflect.DeepEqual(a.AB, b.AB) || !reflect.DeepEqual(a.BA, b.BA) {
		t.Errorf("counters differ with forwarded copies:\n%+v\n%+v\nwithout:\n%+v\n%+v", b.AB, b.BA, a.AB, a.BA)
	}
	if b.AB.Retransmissions != 0 || b.AB.Packets != 2+3*2 {
		t.Errorf("A→B: %d packets, %d retransmissions; want 8, 0", b.AB.Packets, b.AB.Retransmissions)
	}
	if len(notesWith(r2, "counted once")) != 1 || len(notesWith(r1, "counted once")) != 0 {
		t.Errorf("notes: %q / %q", r2.Notes, r1.Notes)
	}
}

// A resend from the same interface and direction is not a copy.
func TestSLLSameInterfaceResendKept(t *testing.T) {
	c := newSLLCap(t)
	cs, ss := c.session(0, 1, false)
	c.add(20, false, ss, cs, flagACK, 1000, false)
	c.id-- // the same IP ID: byte for byte the same packet
	c.add(20.5, false, ss, cs, flagACK, 1000, false)
	r := c.analyse()
	if len(r.TCP) != 1 || r.TCP[0].BA.Retransmissions != 1 {
		t.Fatalf("want one connection with one retransmission: %+v", r.TCP)
	}
}

func TestCloseNeedsInWindowRST(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rstSeq func(cs uint32) uint32
		closed string
	}{
		{"in window", func(cs uint32) uint32 { return cs }, "rst"},
		{"in window, ahead", func(cs uint32) uint32 { return cs + 30000 }, "rst"},
		{"out of window", func(cs uint32) uint32 { return cs + 70000 }, ""},
		{"behind", func(cs uint32) uint32 { return cs - 500 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSLLCap(t)
			cs, ss := c.session(0, 2, true)
			c.add(50, true, tc.rstSeq(cs), 0, flagRST, 0, true)
			// 30 s later the connection goes on: past the 10 s linger
			// of a closed connection, within the idle timeout.
			c.add(30050, false, ss, cs, flagACK|0x08, 1000, true)
			c.add(30051, true, cs, ss+1000, flagACK, 0, true)
			r := c.analyse()
			var after uint64
			if tc.closed != "" {
				after = 2 // closed, evicted; the late packets are stragglers, not a new record
			}
			if len(r.TCP) != 1 || r.TCP[0].Closed != tc.closed || r.Stats.AfterClose != after {
				t.Fatalf("%d records, first closed %q, %d after close; want 1, %q, %d",
					len(r.TCP), r.TCP[0].Closed, r.Stats.AfterClose, tc.closed, after)
			}
		})
	}
}

func TestCloseNeedsFinalACK(t *testing.T) {
	for _, final := range []bool{false, true} {
		c := newSLLCap(t)
		cs, ss := c.session(0, 1, true)
		c.add(10, true, cs, ss, flagFIN|flagACK, 0, true)
		c.add(11, false, ss, cs+1, flagFIN|flagACK, 0, true)
		if final {
			c.add(12, true, cs+1, ss+1, flagACK, 0, true)
		}
		r := c.analyse()
		want := map[bool]string{false: "", true: "fin"}[final]
		if len(r.TCP) != 1 || r.TCP[0].Closed != want {
			t.Errorf("final ACK %v: %d records, closed %q; want %q", final, len(r.TCP), r.TCP[0].Closed, want)
		}
	}
}

// Late packets after the close (the final ACK again, a RST answering it)
// join the record; a SYN with a new ISN on the same 4-tuple opens a new
// one, the same SYN again does not.
func TestLatePacketsJoinNewISNSplits(t *testing.T) {
	c := newSLLCap(t)
	cs, ss := c.session(0, 1, true)
	c.add(10, true, cs, ss, flagFIN|flagACK, 0, true)
	c.add(11, false, ss, cs+1, flagFIN|flagACK, 0, true)
	c.add(12, true, cs+1, ss+1, flagACK, 0, true)
	c.add(13, true, cs+1, ss+1, flagACK, 0, false)
	c.add(14, false, ss+1, 0, flagRST, 0, true)
	r := c.analyse()
	if len(r.TCP) != 1 || r.TCP[0].Closed != "fin" || r.TCP[0].AB.Packets != 7 || r.TCP[0].BA.Packets != 4 {
		t.Fatalf("late packets: %d records %+v", len(r.TCP), r.TCP)
	}

	c = newSLLCap(t)
	c.session(0, 1, false)
	c.add(4, true, cs+1, ss+1, flagRST, 0, false)
	c.add(100, true, 1000, 0, flagSYN, 0, false) // the first SYN, resent late
	c.session(200, 1, false)                     // same ISN: still the same connection
	c.add(300, true, 7777, 0, flagSYN, 0, false) // a new ISN: port reuse
	r = c.analyse()
	if len(r.TCP) != 2 || r.TCP[0].Closed != "rst" || r.TCP[1].AB.Packets != 1 {
		t.Fatalf("port reuse: %d records %+v", len(r.TCP), r.TCP)
	}
}

// FuzzSLLCapture reads arbitrary bytes after a valid SLL2 capture header
// (records of a `tcpdump -i any` file: the copy filter and the closing
// rules): nothing may panic, and a damaged file is analysed up to the
// damage.
func FuzzSLLCapture(f *testing.F) {
	c := newSLLCap(&testing.T{})
	cs, ss := c.session(0, 2, true)
	c.add(20, true, cs, ss, flagFIN|flagACK, 0, true)
	c.add(21, false, ss, cs+1, flagRST, 0, true)
	c.add(30, true, 7777, 0, flagSYN, 0, true)
	if err := c.w.Flush(); err != nil {
		f.Fatal(err)
	}
	f.Add(c.buf.Bytes()[24:])
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		var hdr bytes.Buffer
		w, err := pcap.NewWriter(&hdr, pcap.LinkSLL2, 65535)
		if err != nil || w.Flush() != nil {
			t.Fatal(err)
		}
		a := New(Config{Interface: -1, KeepSamples: true})
		if _, err := a.Read(bytes.NewReader(append(hdr.Bytes(), b...)), model.CaptureFile{Path: "fuzz"}); err != nil {
			return
		}
		a.Finish(nil)
	})
}

// A straggler of a connection that closed and was evicted (the peer
// resending its FIN 40 s later, the last ACK again) is counted, not taken
// for a new connection; a SYN on the same 4-tuple still opens one, and
// stragglers after closedLinger start a record as any mid-stream packet.
func TestStragglerAfterEvictedClose(t *testing.T) {
	c := newSLLCap(t)
	cs, ss := c.session(0, 1, true)
	c.add(10, true, cs, ss, flagFIN|flagACK, 0, true)
	c.add(11, false, ss, cs+1, flagFIN|flagACK, 0, true)
	c.add(12, true, cs+1, ss+1, flagACK, 0, true)
	c.add(40_000, false, ss, cs+1, flagFIN|flagACK, 0, true) // evicted after 10-25 s
	c.add(40_001, true, cs+1, ss+1, flagACK, 0, true)
	c.add(60_000, true, 9000, 0, flagSYN, 0, true) // a new connection on the same ports
	c.add(400_000, true, 9001, 1, flagACK, 0, true)
	r := c.analyse()
	if len(r.TCP) != 3 || r.Stats.AfterClose != 2 {
		t.Fatalf("%d records, %d segments after close; want 3 (first, SYN, straggler past the linger), 2", len(r.TCP), r.Stats.AfterClose)
	}
	if r.TCP[0].Closed != "fin" || r.TCP[0].AB.Packets != 6 {
		t.Errorf("first connection: closed %q, %d packets A→B; want fin, 6", r.TCP[0].Closed, r.TCP[0].AB.Packets)
	}
}

func TestClosedKeysBounded(t *testing.T) {
	var c closedKeys
	for i := range maxClosedKeys + 5000 {
		c.add(flowKey{loPort: uint16(i), hiPort: uint16(i >> 16), proto: 6}, int64(i))
	}
	if len(c.at) != maxClosedKeys || len(c.order)-c.head != maxClosedKeys || cap(c.order) > 4*maxClosedKeys {
		t.Fatalf("%d keys, %d in order (cap %d); want %d", len(c.at), len(c.order)-c.head, cap(c.order), maxClosedKeys)
	}
	last := maxClosedKeys + 4999
	if c.recent(flowKey{loPort: 0, proto: 6}, 1) || !c.recent(flowKey{loPort: uint16(last), hiPort: uint16(last >> 16), proto: 6}, int64(last)+1) {
		t.Error("the oldest key is kept or the newest forgotten")
	}
}
