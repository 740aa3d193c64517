package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/capfilter"
)

// openLo opens a capture on loopback with filter expr, or skips the test
// without the privilege to capture.
func openLo(t *testing.T, expr string, o Options) *Group {
	t.Helper()
	f, err := capfilter.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	o.Filter = f
	g, err := Open("lo", o)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		t.Skip("live capture needs CAP_NET_RAW:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// udpSink is a UDP socket on loopback that nothing reads, and a sender to
// it.
func udpSink(t *testing.T) (dst *net.UDPConn, src *net.UDPConn) {
	t.Helper()
	dst, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	src, err = net.DialUDP("udp4", nil, dst.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return dst, src
}

// readAll reads every source of g in its own goroutine until ctx ends and
// returns the packets (copied) of each.
func readAll(ctx context.Context, g *Group) [][]Packet {
	out := make([][]Packet, len(g.Sources()))
	var wg sync.WaitGroup
	for i, s := range g.Sources() {
		wg.Go(func() {
			var p Packet
			for s.Next(ctx, &p) == nil {
				c := p
				c.Data = append([]byte(nil), p.Data...)
				out[i] = append(out[i], c)
			}
		})
	}
	wg.Wait()
	return out
}

// TestCaptureLoopback: datagrams sent on loopback come out of the ring
// once each (the arrival), whole, with the kernel's time, and the
// kernel's counts agree with what was read.
func TestCaptureLoopback(t *testing.T) {
	dst, src := udpSink(t)
	port := dst.LocalAddr().(*net.UDPAddr).Port
	g := openLo(t, fmt.Sprintf("udp port %d", port), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var got [][]Packet
	done := make(chan struct{})
	go func() { got = readAll(ctx, g); close(done) }()
	start := time.Now()
	const n = 50
	for i := range n {
		if _, err := src.Write(binary.BigEndian.AppendUint32(make([]byte, 0, 64), uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // blocks are handed over after 10 ms
	cancel()
	<-done
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	pk := got[0]
	if len(pk) != n {
		t.Fatalf("%d packets read, want %d", len(pk), n)
	}
	for i, p := range pk {
		// IPv4, 20 + 8 bytes of headers, then the counter.
		if len(p.Data) != 32 || p.Length != 32 || p.Data[0]>>4 != 4 || binary.BigEndian.Uint32(p.Data[28:]) != uint32(i) || p.Outgoing {
			t.Fatalf("packet %d: % x (length %d, outgoing %v)", i, p.Data, p.Length, p.Outgoing)
		}
		if at := time.Unix(0, p.TimeNs); at.Before(start.Add(-time.Second)) || at.After(time.Now()) {
			t.Errorf("packet %d: time %v, sent after %v", i, at, start)
		}
	}
	// Loopback: each packet seen leaving and arriving.
	if st.Received != 2*n || st.Dropped != 0 || st.Read != 2*n || st.BadBlocks != 0 {
		t.Errorf("stats %+v, want %d received and read, none dropped", st, 2*n)
	}
}

// TestDropsCounted: a ring too small for what arrives while nobody reads
// it drops packets, and the kernel's counts say how many: every packet
// that passed the filter was either dropped or read.
func TestDropsCounted(t *testing.T) {
	dst, src := udpSink(t)
	port := dst.LocalAddr().(*net.UDPAddr).Port
	g := openLo(t, fmt.Sprintf("udp port %d", port), Options{RingBytes: MinRingBytes})
	// The consumer is blocked: nothing reads the ring while 4000
	// datagrams (8000 packets on loopback, about 1.6 MB of ring) arrive
	// in a ring of 128 KiB.
	const n = 4000
	payload := make([]byte, 100)
	for range n {
		if _, err := src.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	got := readAll(ctx, g)
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d, %d read, stats %+v", n, len(got[0]), st)
	if st.Received != 2*n {
		t.Errorf("kernel received %d, want %d (each datagram leaving and arriving)", st.Received, 2*n)
	}
	if st.Dropped == 0 || st.Freezes == 0 {
		t.Errorf("no drop counted (%+v) although %d packets met a ring of %d bytes unread", st, 2*n, MinRingBytes)
	}
	if st.Read != st.Received-st.Dropped {
		t.Errorf("read %d, want received - dropped = %d", st.Read, st.Received-st.Dropped)
	}
	if len(got[0]) == 0 || uint64(len(got[0])) > st.Read {
		t.Errorf("%d arrivals read of %d packets taken from the ring", len(got[0]), st.Read)
	}
}

// TestFanoutSymmetric: with two workers, every packet of a TCP connection,
// both directions, reaches one socket (the kernel's PACKET_FANOUT_HASH is
// symmetric on this kernel), connections are spread over both, and
// none is read twice.
func TestFanoutSymmetric(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	g := openLo(t, fmt.Sprintf("tcp port %d", port), Options{Workers: 2})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	var got [][]Packet
	done := make(chan struct{})
	go func() { got = readAll(ctx, g); close(done) }()
	const conns = 40
	for range conns {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1000)
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	// The client's port names the connection; which socket saw it.
	where := map[uint16]int{}
	dirs := map[uint16][2]int{}
	for i, pk := range got {
		for _, p := range pk {
			if len(p.Data) < 24 || p.Data[0]>>4 != 4 {
				t.Fatalf("not an IPv4 TCP packet: % x", p.Data)
			}
			ihl := int(p.Data[0]&15) * 4
			sp, dp := binary.BigEndian.Uint16(p.Data[ihl:]), binary.BigEndian.Uint16(p.Data[ihl+2:])
			client, dir := sp, 0
			if sp == uint16(port) {
				client, dir = dp, 1
			}
			if w, ok := where[client]; ok && w != i {
				t.Fatalf("connection from port %d on both sockets", client)
			}
			where[client] = i
			d := dirs[client]
			d[dir]++
			dirs[client] = d
		}
	}
	per := [2]int{}
	for c, w := range where {
		per[w]++
		if d := dirs[c]; d[0] == 0 || d[1] == 0 {
			t.Errorf("connection from port %d: %v packets each way", c, d)
		}
	}
	if len(where) != conns || per[0] == 0 || per[1] == 0 {
		t.Errorf("%d connections seen, %v per socket; want %d spread over both", len(where), per, conns)
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// Loopback counts each packet twice; every one read once.
	if st.Dropped != 0 || st.Read != st.Received || int(st.Read) != 2*(len(got[0])+len(got[1])) {
		t.Errorf("stats %+v, %d+%d arrivals read", st, len(got[0]), len(got[1]))
	}
}

// TestOpenChecks: bad options and interfaces are errors, before any
// socket is opened.
func TestOpenChecks(t *testing.T) {
	for _, o := range []Options{{Workers: -1}, {Workers: MaxWorkers + 1}, {RingBytes: 1000}, {RingBytes: MaxRingBytes + 1}} {
		if _, err := Open("lo", o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := Open("sonde-none0", Options{}); err == nil {
		t.Error("no error for a missing interface")
	}
}
