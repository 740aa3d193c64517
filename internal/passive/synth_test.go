package passive

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/sonde-project/sonde/internal/emulator"
)

var (
	clientIP = [4]byte{198, 18, 1, 1}
	serverIP = [4]byte{198, 18, 1, 2}
)

func ipHeader(src, dst [4]byte, proto uint8, id uint16, l4 []byte) []byte {
	b := make([]byte, 20, 20+len(l4))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(20+len(l4)))
	binary.BigEndian.PutUint16(b[4:], id)
	b[6] = 0x40
	b[8], b[9] = 64, proto
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	return append(b, l4...)
}

func tcpSeg(sport, dport uint16, seq, ack uint32, flags uint8, tsval, tsecr uint32, payload int) []byte {
	b := make([]byte, 32, 32+payload)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint32(b[8:], ack)
	b[12] = 8 << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:], 65535)
	copy(b[20:], []byte{1, 1, 8, 10})
	binary.BigEndian.PutUint32(b[24:], tsval)
	binary.BigEndian.PutUint32(b[28:], tsecr)
	return append(b, make([]byte, payload)...)
}

// pkt is one packet at the observer, with its ground truth.
type pkt struct {
	t     int64 // observer time, ns since 0
	data  []byte
	dir   uint8 // 0 up (client→server)
	delay int64 // delay through the (single) link
}

// path is a single emulated link with the observer at its client end (A):
// up packets are seen when they enter the link, down packets when they
// leave it. delay(t) gives the one-way delay of a packet entering at t.
type path struct {
	delay func(t int64, dir uint8) int64
	out   []pkt
}

// tcpBulk simulates a server→client bulk transfer with Linux-like TCP
// timestamps (1 ms ticks) and an ACK per two segments: packets every gap
// ns for dur ns. The client is at the observer.
func (p *path) tcpBulk(gap, dur int64, dropEvery int) {
	const mss = 1448
	seq := uint32(1000)
	var ipid uint16
	// The handshake.
	add := func(t int64, dir uint8, b []byte) {
		ipid++
		var ip []byte
		if dir == 0 {
			ip = ipHeader(clientIP, serverIP, 6, ipid, b)
		} else {
			ip = ipHeader(serverIP, clientIP, 6, ipid, b)
		}
		p.out = append(p.out, pkt{t: t, data: ip, dir: dir, delay: p.delay(t, dir)})
	}
	d0 := p.delay(0, 0)
	add(0, 0, tcpSeg(40000, 5201, 1, 0, flagSYN, 1, 0, 0))
	// The server's packets leave it at time s and reach the observer after
	// the down delay.
	type ev struct {
		t    int64
		data []byte
	}
	var acks []ev
	srvTS := func(s int64) uint32 { return uint32(s/1e6) + 5000 }
	cliTS := func(t int64) uint32 { return uint32(t/1e6) + 1 }
	s := d0 // server time of SYN-ACK
	dd := p.delay(s, 1)
	add(s+dd, 1, tcpSeg(5201, 40000, seq-1, 2, flagSYN|flagACK, srvTS(s), 1, 0))
	type echo struct {
		t     int64 // arrival at the server
		tsval uint32
	}
	var toSrv []echo
	lastEcr := uint32(1)
	n := 0
	for ; s < dur; s += gap {
		for len(toSrv) > 0 && toSrv[0].t <= s {
			lastEcr = toSrv[0].tsval
			toSrv = toSrv[1:]
		}
		n++
		if dropEvery > 0 && n%dropEvery == 0 {
			seq += mss // lost before the observer: the client sees a hole
			continue
		}
		dd := p.delay(s, 1)
		tObs := s + dd
		// Client ACKs are instant at the observer end.
		for len(acks) > 0 && acks[0].t <= tObs {
			add(acks[0].t, 0, acks[0].data)
			acks = acks[1:]
		}
		add(tObs, 1, tcpSeg(5201, 40000, seq, 2, flagACK, srvTS(s), lastEcr, mss))
		seq += mss
		if n%2 == 0 {
			// The client acknowledges every second segment at once; the
			// echo is the TSval of the first unacknowledged segment, and
			// the ACK reaches the server after the up delay.
			ta := tObs + 1000
			acks = append(acks, ev{ta, tcpSeg(40000, 5201, 2, seq, flagACK, cliTS(ta), srvTS(s-gap), 0)})
			toSrv = append(toSrv, echo{ta + p.delay(ta, 0), cliTS(ta)})
		}
	}
	for _, a := range acks {
		add(a.t, 0, a.data)
	}
}

// quicSpin simulates a QUIC transfer where both ends spin: the client
// inverts the last value it saw from the server, the server reflects, each
// sends a packet every gap ns. flipProb adds reordering glitches.
func (p *path) quicSpin(gap, dur int64, rng *rand.Rand, glitchEvery int) {
	dcidC, dcidS := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9, 9, 9}
	var ipid uint16
	add := func(t int64, dir uint8, payload []byte) {
		ipid++
		udp := make([]byte, 8, 8+len(payload))
		src, dst := clientIP, serverIP
		sp, dp := uint16(50000), uint16(4433)
		if dir == 1 {
			src, dst, sp, dp = serverIP, clientIP, dp, sp
		}
		binary.BigEndian.PutUint16(udp, sp)
		binary.BigEndian.PutUint16(udp[2:], dp)
		binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
		p.out = append(p.out, pkt{t: t, data: ipHeader(src, dst, 17, ipid, append(udp, payload...)), dir: dir, delay: p.delay(t, dir)})
	}
	long := func(typ byte, dcid, scid []byte) []byte {
		b := []byte{0xc0 | typ<<4, 0, 0, 0, 1, byte(len(dcid))}
		b = append(b, dcid...)
		b = append(b, byte(len(scid)))
		b = append(b, scid...)
		if typ == 0 {
			b = append(b, 0) // token length
		}
		b = append(b, 0x40, 20) // length 20
		b = append(b, make([]byte, 20)...)
		return b
	}
	short := func(spin bool, dcid []byte, id uint32) []byte {
		b := []byte{0x40}
		if spin {
			b[0] |= 0x20
		}
		b = append(b, dcid...)
		b = binary.BigEndian.AppendUint32(b, id)
		return append(b, make([]byte, 40)...)
	}
	// Handshake: client Initial (SCID dcidC), server Initial+Handshake
	// coalesced (SCID dcidS).
	add(0, 0, long(0, []byte{7, 7, 7, 7, 7, 7, 7, 7}, dcidC))
	up0 := p.delay(0, 0)
	srv := append(long(0, dcidC, dcidS), long(2, dcidC, dcidS)...)
	add(up0+p.delay(up0, 1), 1, srv)
	// Spin state machine with events in time order: client packets at the
	// observer at t (instant), server packets leave the server at s.
	var cliSeen, srvSeen, cliSpin bool
	type arrival struct {
		t    int64
		spin bool
	}
	var toSrv, toCli []arrival // in flight
	tc, ts := int64(2*up0), int64(2*up0)+gap/2
	var n uint32
	for tc < dur || ts < dur {
		// Deliver in-flight packets whose time has come.
		now := min(tc, ts)
		for len(toSrv) > 0 && toSrv[0].t <= now {
			srvSeen = toSrv[0].spin
			toSrv = toSrv[1:]
		}
		for len(toCli) > 0 && toCli[0].t <= now {
			cliSeen = toCli[0].spin
			toCli = toCli[1:]
		}
		n++
		if tc <= ts {
			cliSpin = !cliSeen
			v := cliSpin
			if glitchEvery > 0 && int(n)%glitchEvery == 0 {
				v = !v // a reordered packet from the previous period
			}
			add(tc, 0, short(v, dcidS, n))
			toSrv = append(toSrv, arrival{tc + p.delay(tc, 0), cliSpin})
			tc += gap
		} else {
			dd := p.delay(ts, 1)
			add(ts+dd, 1, short(srvSeen, dcidC, n))
			toCli = append(toCli, arrival{ts + dd, srvSeen})
			ts += gap
		}
	}
}

// files writes the observer capture (pcapng, raw IP, ns) and the truth file.
func (p *path) files(t *testing.T) (capture, truth []byte) {
	t0 := time.Unix(1700000000, 0)
	ps := append([]pkt(nil), p.out...)
	sortPkts(ps)
	var cb bytes.Buffer
	w, err := pcapgo.NewNgWriter(&cb, layers.LinkTypeRaw)
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	tw, err := emulator.NewTruthWriter(&tb, emulator.TruthHeader{StartUnixNs: t0.UnixNano(), Links: []emulator.TruthLink{{Name: "l1", A: "client", B: "server"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range ps {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(q.t)), CaptureLength: len(q.data), Length: len(q.data)}
		if err := w.WritePacket(ci, q.data); err != nil {
			t.Fatal(err)
		}
		id := emulator.PacketIdentity(q.data)
		arr := q.t
		if q.dir == 1 {
			arr = q.t - q.delay
		}
		tw.Write(emulator.Record{Seq: uint64(i + 1), Arrival: time.Duration(arr), Dequeue: time.Duration(arr),
			Due: time.Duration(arr + q.delay), Sent: time.Duration(arr + q.delay), Hash: id.Hash, Dir: q.dir, Fate: 1, Proto: id.Proto})
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return cb.Bytes(), tb.Bytes()
}

func sortPkts(ps []pkt) {
	// Stable by time: equal times keep generation order.
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].t < ps[j-1].t; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}
