// Command analyzegen writes a synthetic capture for bench/analyze.sh: a
// nanosecond pcap (Ethernet, snap length 128) of many concurrent TCP
// connections with timestamps, SACK and window scaling (handshake, data
// with an ACK every second segment echoing timestamps, some retransmissions
// and duplicate ACKs, FIN close) and QUIC-like UDP flows on port 443 with a
// spinning short header. Flows interleave in trains of packets; 50 000
// packets per second of capture time. Deterministic for a seed.
//
//	go run ./bench/analyzegen -n 10000000 -o /var/tmp/sonde-bench/10m.pcap
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
)

const snap = 128

type conn struct {
	quic       bool
	cli, srv   [4]byte
	cport      uint16
	left       int   // packets still to send in the data phase
	state      int   // 0 SYN, 1 SYN-ACK, 2 ACK, 3 data, 4 FIN, 5 FIN-ACK, 6 last ACK
	rtt        int64 // ns
	cseq, sseq uint32
	cts, sts   uint32 // last TSval sent by each side
	unacked    int    // data segments since the last ACK
	upload     bool   // the client sends the data
	bulk       bool
	spin       byte
	spinAt     int64
	lastRetx   uint32
}

type gen struct {
	w    *bufio.Writer
	rng  *rand.Rand
	now  int64
	buf  [snap + 64]byte
	next uint32 // address counter
	n    int
}

func main() {
	n := flag.Int("n", 10_000_000, "packets to write")
	out := flag.String("o", "", "output pcap file")
	slots := flag.Int("flows", 2000, "concurrent flows")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *out == "" || *n <= 0 || *slots <= 0 {
		fmt.Fprintln(os.Stderr, "analyzegen: want -o FILE, -n > 0 and -flows > 0")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "analyzegen:", err)
		os.Exit(1)
	}
	g := &gen{w: bufio.NewWriterSize(f, 4<<20), rng: rand.New(rand.NewPCG(*seed, 0x5eed)), now: 1_700_000_000e9}
	hdr := make([]byte, 24)
	le := binary.LittleEndian
	le.PutUint32(hdr, 0xa1b23c4d) // nanosecond pcap
	le.PutUint16(hdr[4:], 2)
	le.PutUint16(hdr[6:], 4)
	le.PutUint32(hdr[16:], snap)
	le.PutUint32(hdr[20:], 1) // Ethernet
	g.w.Write(hdr)
	cs := make([]*conn, *slots)
	for i := range cs {
		cs[i] = g.newConn()
	}
	for g.n < *n {
		// A flow sends a train of packets (a sender's burst and the ACKs
		// coming back), then another flow's: bulk transfers in longer
		// trains (8-39 packets) than short exchanges and QUIC (1-8), so
		// that the elephants carry most packets and finish in seconds.
		i := g.rng.IntN(len(cs))
		train := 1 + g.rng.IntN(8)
		if cs[i].bulk {
			train = 8 + g.rng.IntN(32)
		}
		for ; train > 0 && g.n < *n; train-- {
			if !g.step(cs[i]) {
				cs[i] = g.newConn()
				break
			}
			g.now += int64(g.rng.IntN(40_000)) // 20 µs per packet on average
		}
	}
	if err := g.w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "analyzegen:", err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "analyzegen:", err)
		os.Exit(1)
	}
}

func (g *gen) newConn() *conn {
	g.next++
	c := &conn{
		cli:   [4]byte{10, byte(g.next >> 16), byte(g.next >> 8), byte(g.next)},
		srv:   [4]byte{198, 51, 100, byte(g.rng.IntN(200))},
		cport: uint16(1024 + g.rng.IntN(60000)),
		rtt:   int64(5+g.rng.IntN(200)) * 1e6,
		cseq:  g.rng.Uint32(), sseq: g.rng.Uint32(),
		upload: g.rng.IntN(4) == 0,
	}
	switch r := g.rng.IntN(100); {
	case r < 10: // QUIC-like
		c.quic = true
		c.left = 50 + g.rng.IntN(2000)
	case r < 80: // short exchange (web request)
		c.left = 4 + g.rng.IntN(60)
	default: // bulk
		c.bulk = true
		c.left = 200 + g.rng.IntN(2000)
	}
	return c
}

// step writes the next packet of c and reports whether c goes on.
func (g *gen) step(c *conn) bool {
	if c.quic {
		return g.quicStep(c)
	}
	tsNow := uint32(g.now / 1e6)
	switch c.state {
	case 0:
		c.cts = tsNow
		g.tcp(c, true, c.cseq, 0, 0x02, 0, true)
		c.cseq++
	case 1:
		c.sts = tsNow
		g.tcp(c, false, c.sseq, c.cseq, 0x12, 0, true)
		c.sseq++
	case 2:
		c.cts = tsNow
		g.tcp(c, true, c.cseq, c.sseq, 0x10, 0, false)
	case 3:
		sender := !c.upload // true: the server sends data
		if c.unacked >= 2 {
			// The receiver acknowledges every second segment; now and
			// then a duplicate ACK.
			c.unacked = 0
			if sender {
				c.cts = tsNow
				g.tcp(c, true, c.cseq, c.sseq, 0x10, 0, false)
			} else {
				c.sts = tsNow
				g.tcp(c, false, c.sseq, c.cseq, 0x10, 0, false)
			}
			break
		}
		c.unacked++
		c.left--
		if sender {
			c.sts = tsNow
			seq := c.sseq
			if g.rng.IntN(200) == 0 && c.sseq-c.lastRetx > 1448*4 {
				seq = c.sseq - 1448*2 // a retransmission
				c.lastRetx = c.sseq
				g.tcp(c, false, seq, c.cseq, 0x10, 1448, false)
				break
			}
			g.tcp(c, false, seq, c.cseq, 0x18, 1448, false)
			c.sseq += 1448
		} else {
			c.cts = tsNow
			g.tcp(c, true, c.cseq, c.sseq, 0x18, 1448, false)
			c.cseq += 1448
		}
		if c.left > 0 {
			return true
		}
		c.state = 4
		return true
	case 4:
		c.cts = tsNow
		g.tcp(c, true, c.cseq, c.sseq, 0x11, 0, false)
		c.cseq++
	case 5:
		c.sts = tsNow
		g.tcp(c, false, c.sseq, c.cseq, 0x11, 0, false)
		c.sseq++
	case 6:
		c.cts = tsNow
		g.tcp(c, true, c.cseq, c.sseq, 0x10, 0, false)
		return false
	}
	if c.state != 3 || c.left <= 0 {
		c.state++
	}
	return true
}

func (g *gen) record(wire int) []byte {
	g.n++
	capl := min(wire, snap)
	b := g.buf[:16+capl]
	le := binary.LittleEndian
	le.PutUint32(b, uint32(g.now/1e9))
	le.PutUint32(b[4:], uint32(g.now%1e9))
	le.PutUint32(b[8:], uint32(capl))
	le.PutUint32(b[12:], uint32(wire))
	clear(b[16:])
	e := b[16:]
	copy(e[0:6], []byte{2, 0, 0, 0, 0, 1})
	copy(e[6:12], []byte{2, 0, 0, 0, 0, 2})
	e[12], e[13] = 0x08, 0x00
	return b
}

// ipv4 fills the IPv4 header at b and returns the transport header.
func ipv4(b []byte, total int, proto byte, src, dst [4]byte, id uint16) []byte {
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(total))
	binary.BigEndian.PutUint16(b[4:], id)
	b[6] = 0x40 // DF
	b[8] = 64
	b[9] = proto
	copy(b[12:16], src[:])
	copy(b[16:20], dst[:])
	return b[20:]
}

func (g *gen) tcp(c *conn, fromClient bool, seq, ack uint32, flags byte, payload int, syn bool) {
	optLen := 12 // NOP NOP TS
	if syn {
		optLen = 20 // MSS, SACK permitted, TS, NOP, window scale
	}
	thl := 20 + optLen
	total := 20 + thl + payload
	b := g.record(14 + total)
	src, dst, sp, dp := c.cli, c.srv, c.cport, uint16(443)
	tsval, tsecr := c.cts, c.sts
	if !fromClient {
		src, dst, sp, dp = c.srv, c.cli, 443, c.cport
		tsval, tsecr = c.sts, c.cts
	}
	if sp == dp {
		dp++
	}
	t := ipv4(b[16+14:], total, 6, src, dst, uint16(g.n))
	be := binary.BigEndian
	be.PutUint16(t, sp)
	be.PutUint16(t[2:], dp)
	be.PutUint32(t[4:], seq)
	be.PutUint32(t[8:], ack)
	t[12] = byte(thl/4) << 4
	t[13] = flags
	be.PutUint16(t[14:], 1024)
	o := t[20:]
	if syn {
		o[0], o[1] = 2, 4
		be.PutUint16(o[2:], 1460)
		o[4], o[5] = 4, 2
		o[6], o[7] = 8, 10
		be.PutUint32(o[8:], tsval)
		be.PutUint32(o[12:], tsecr)
		o[16], o[17], o[18], o[19] = 1, 3, 3, 7
	} else {
		o[0], o[1], o[2], o[3] = 1, 1, 8, 10
		be.PutUint32(o[4:], tsval)
		be.PutUint32(o[8:], tsecr)
	}
	g.w.Write(b)
}

func (g *gen) quicStep(c *conn) bool {
	c.left--
	fromClient := g.rng.IntN(3) == 0
	size := 1200
	if fromClient {
		size = 60
	}
	total := 20 + 8 + size
	b := g.record(14 + total)
	src, dst, sp, dp := c.cli, c.srv, c.cport, uint16(443)
	if !fromClient {
		src, dst, sp, dp = c.srv, c.cli, 443, c.cport
	}
	u := ipv4(b[16+14:], total, 17, src, dst, uint16(g.n))
	be := binary.BigEndian
	be.PutUint16(u, sp)
	be.PutUint16(u[2:], dp)
	be.PutUint16(u[4:], uint16(8+size))
	if g.now-c.spinAt > c.rtt/2 {
		c.spin ^= 1
		c.spinAt = g.now
	}
	q := u[8:]
	q[0] = 0x40 | c.spin<<5 // short header, fixed bit, spin
	copy(q[1:9], []byte{1, 2, 3, 4, 5, 6, 7, 8})
	g.w.Write(b)
	return c.left > 0
}
