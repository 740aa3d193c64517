package passive

import "testing"

// FuzzHTTPConnection feeds a TCP connection whose segments (direction,
// flags, sequence offset, payload) come from the fuzzer through the whole
// analyser with the HTTP and time-sequence followers on: nothing may
// panic and the HTTP record must be self-consistent.
func FuzzHTTPConnection(f *testing.F) {
	seg := func(dir int, flags uint8, payload string) []byte {
		return append([]byte{byte(len(payload)<<1 | dir), flags, 0}, payload...)
	}
	var persistent []byte
	persistent = append(persistent, seg(0, flagACK|flagPSH, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")...)
	persistent = append(persistent, seg(1, flagACK, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")...)
	persistent = append(persistent, seg(0, flagACK|flagFIN, "")...)
	f.Add(persistent)
	var closeDelimited []byte
	closeDelimited = append(closeDelimited, seg(0, flagACK, "GET / HTTP/1.0\r\n\r\n")...)
	closeDelimited = append(closeDelimited, seg(1, flagACK, "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")...)
	closeDelimited = append(closeDelimited, seg(1, flagACK, "2\r\nok\r\n0\r\n\r\n")...)
	closeDelimited = append(closeDelimited, seg(1, flagACK|flagFIN, "")...)
	f.Add(closeDelimited)
	f.Fuzz(func(t *testing.T, script []byte) {
		a := New(Config{Interface: -1, KeepSamples: true, TimeSequence: true})
		seq := [2]uint32{1000, 9000}
		pkt := func(tm int64, dir int, flags uint8, off int8, payload []byte) {
			src, dst, sp, dp := clientIP, serverIP, uint16(40000), uint16(80)
			if dir == 1 {
				src, dst, sp, dp = dst, src, dp, sp
			}
			l4 := tcpSeg(sp, dp, seq[dir]+uint32(int32(off)), seq[dir^1], flags, uint32(tm/1e6), 0, 0)
			l4 = append(l4[:32], payload...)
			a.Packet(tm, ipHeader(src, dst, 6, 0, l4))
			if off >= 0 {
				seq[dir] += uint32(len(payload))
			}
		}
		pkt(0, 0, flagSYN, 0, nil)
		seq[0]++
		pkt(1e6, 1, flagSYN|flagACK, 0, nil)
		seq[1]++
		// Each segment: direction+flags, offset, length, then the payload.
		for i := 0; len(script) >= 3 && i < 100; i++ {
			dir, flags, off := int(script[0]&1), script[1]&(flagFIN|flagRST|flagPSH|flagACK), int8(script[2])
			n := min(int(script[0]>>1), len(script)-3)
			pkt(int64(i+2)*1e6, dir, flags, off, script[3:3+n])
			script = script[3+n:]
		}
		res := a.Finish(nil)
		for _, c := range res.TCP {
			if h := c.HTTP; h != nil && (h.Responses > h.Requests || len(h.Exchanges) > h.Requests) {
				t.Fatalf("inconsistent %+v", h)
			}
		}
	})
}

// A server's bytes before any request are followed as HTTP only if they
// can start a response: a response captured before its request (the two
// directions written by different threads) is still analysed, and a
// server that speaks first (a banner, a bulk push) is left at once, with
// no HTTP state held for it.
func TestServerSpeaksFirst(t *testing.T) {
	for _, tc := range []struct {
		name, first, req string
		http             bool
	}{
		{"response before request", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", true},
		{"banner", "220 smtp.example ESMTP\r\n", "EHLO x\r\n", false},
		{"binary push", "\x00\x01\x02\x03\x04\x05\x06\x07", "", false},
	} {
		a := New(Config{Interface: -1})
		seq := [2]uint32{1000, 9000}
		pkt := func(tm int64, dir int, payload string) {
			src, dst, sp, dp := clientIP, serverIP, uint16(40000), uint16(80)
			if dir == 1 {
				src, dst, sp, dp = dst, src, dp, sp
			}
			flags := uint8(flagACK)
			if len(payload) == 0 && seq[dir] == 1000+8000*uint32(dir) {
				flags = flagSYN
				if dir == 1 {
					flags |= flagACK
				}
			}
			l4 := tcpSeg(sp, dp, seq[dir], seq[dir^1], flags, uint32(tm/1e6), 0, 0)
			l4 = append(l4[:32], payload...)
			a.Packet(tm, ipHeader(src, dst, 6, 0, l4))
			seq[dir] += uint32(len(payload))
			if flags&flagSYN != 0 {
				seq[dir]++
			}
		}
		pkt(0, 0, "")
		pkt(1e6, 1, "")
		// The server's bytes first (captured 0.1 ms before the request).
		seq[1]++ // the request is acknowledged below, as if sent first
		pkt(2e6, 1, tc.first)
		f := a.lastFlow
		if held := f != nil && f.tcp != nil && f.tcp.http.conn != nil; held != tc.http {
			t.Errorf("%s: HTTP state held %v, want %v", tc.name, held, tc.http)
		}
		if tc.req != "" {
			pkt(2e6+1e5, 0, tc.req)
		}
		r := a.Finish(nil)
		if len(r.TCP) != 1 {
			t.Fatalf("%s: %d connections", tc.name, len(r.TCP))
		}
		if got := r.TCP[0].HTTP != nil; got != tc.http {
			t.Errorf("%s: HTTP record %v, want %v (%+v)", tc.name, got, tc.http, r.TCP[0].HTTP)
		}
	}
}
