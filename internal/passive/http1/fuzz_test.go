package http1

import (
	"encoding/binary"
	"testing"
)

// FuzzConn feeds arbitrary segments: the input is a script of segments
// (direction, flags, sequence offset, length, captured length, bytes). The
// parser must not panic, must stay within its bounds, and a result must
// be self-consistent.
func FuzzConn(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x00\x00\x12GET / HTTP/1.1\r\n\r\n\x01\x00\x00\x00\x00\x2bHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"))
	f.Add([]byte("\x00\x00\x00\x00\x00\x12GET / HTTP/1.1\r\n\r\n\x01\x00\x00\x00\x00\x30HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, script []byte) {
		c := NewConn(0)
		c.Segment(Client, 0, &Seg{SYN: true})
		c.Segment(Server, 0, &Seg{SYN: true, ACK: true, Ack: 1})
		next := [2]uint32{1, 1}
		for i := 0; len(script) >= 6 && i < 200; i++ {
			dir := int(script[0] & 1)
			flags := script[0] >> 1
			off := int32(int8(script[1]))
			n := int(binary.BigEndian.Uint16(script[2:])) % 2048
			capLen := int(script[4])<<8 | int(script[5])
			script = script[6:]
			capLen = min(capLen, n, len(script))
			data := script[:capLen]
			script = script[capLen:]
			seq := next[dir] + uint32(off)
			c.Segment(dir, int64(i)*1e6, &Seg{Seq: seq, Ack: next[dir^1], ACK: flags&4 != 0, FIN: flags&1 != 0,
				RST: flags&2 != 0, Payload: data, Len: n})
			if off >= 0 {
				next[dir] = seq + uint32(n)
			}
		}
		r := c.Result()
		if r == nil {
			return
		}
		if r.Responses > r.Requests || len(r.Exchanges) > MaxExchanges || r.Pipelined >= max(r.Requests, 1) {
			t.Fatalf("inconsistent %+v", r)
		}
		for i := range c.dir {
			if c.dir[i].pendBytes > maxPending || len(c.dir[i].p.buf) > maxHeaderBlock+4 {
				t.Fatalf("bounds: pending %d buf %d", c.dir[i].pendBytes, len(c.dir[i].p.buf))
			}
		}
	})
}
