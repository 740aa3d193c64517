package stream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/protocol"
)

// tcpPair is a connected loopback pair.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// TestWritevDirect writes more than the socket holds, so the raw writev
// returns short counts and EAGAIN, and checks every byte arrives in order.
func TestWritevDirect(t *testing.T) {
	a, b := tcpPair(t)
	_ = a.SetWriteBuffer(64 << 10)
	_ = b.SetReadBuffer(64 << 10)
	rc, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 3<<20)
	for i := range payload {
		payload[i] = byte(i * 131 >> 3)
	}
	hdr := []byte("HEADER!!")
	want := append(append(append([]byte{}, hdr...), payload...), hdr...)
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // let the writer fill the socket first
		buf, _ := io.ReadAll(io.LimitReader(b, int64(len(want))))
		got <- buf
	}()
	n, err := writevDirect(rc, [][]byte{hdr, payload, {}, hdr})
	if err != nil || n != len(want) {
		t.Fatalf("writevDirect = %d, %v; want %d, nil", n, err, len(want))
	}
	select {
	case buf := <-got:
		if !bytes.Equal(buf, want) {
			t.Fatalf("received %d bytes differing from the %d sent", len(buf), len(want))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not finish")
	}
	w := DirectWriter(a)
	if _, ok := w.(*directWriter); !ok {
		t.Fatalf("DirectWriter(TCPConn) = %T, want the raw writer", w)
	}
}

// TestWritevDirectDeadline: a write blocked on a full socket ends at the
// write deadline, as net.Conn.Write does, so Sender.Run's stop works.
func TestWritevDirectDeadline(t *testing.T) {
	a, _ := tcpPair(t) // nobody reads b
	rc, _ := a.SyscallConn()
	_ = a.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	start := time.Now()
	n, err := writevDirect(rc, [][]byte{make([]byte, 64<<20)})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v after %d bytes, want the deadline", err, n)
	}
	if n <= 0 || n >= 64<<20 {
		t.Fatalf("wrote %d bytes before the deadline", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("deadline took %v", d)
	}
}

// TestWritevDirectPeerGone: writing to a reset connection fails with an
// error PeerClosed recognises, not a signal.
func TestWritevDirectPeerGone(t *testing.T) {
	a, b := tcpPair(t)
	_ = b.SetLinger(0)
	b.Close()
	rc, _ := a.SyscallConn()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = writevDirect(rc, [][]byte{make([]byte, 64<<10)})
		time.Sleep(time.Millisecond)
	}
	if !PeerClosed(err) {
		t.Fatalf("err = %v, want a closed peer", err)
	}
}

func TestConsume(t *testing.T) {
	bufs := [][]byte{[]byte("ab"), []byte("cde"), []byte("f")}
	bufs = consume(bufs, 3)
	if len(bufs) != 2 || string(bufs[0]) != "de" || string(bufs[1]) != "f" {
		t.Fatalf("consume(3) = %q", bufs)
	}
	if bufs = consume(bufs, 3); len(bufs) != 0 {
		t.Fatalf("consume(all) = %q", bufs)
	}
}

// TestDirectReader: a BufferedConn's buffered bytes come first, then the
// socket's through raw reads, then EOF; a read deadline ends a wait.
func TestDirectReader(t *testing.T) {
	a, b := tcpPair(t)
	bc := NewBufferedConn(b, bytes.NewReader([]byte("buffered-")), len("buffered-"))
	r := DirectReader(bc)
	if _, ok := r.(*rawReader); !ok {
		t.Fatalf("DirectReader(BufferedConn on TCP) = %T", r)
	}
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	go func() {
		a.Write(payload)
		a.Close()
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte("buffered-"), payload...); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d in order", len(got), len(want))
	}

	c, d := tcpPair(t)
	_ = c
	_ = d.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := DirectReader(d).Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
}

// TestSenderWholeSegments: a sender's writes on loopback (64 KB segments)
// are whole segments, so none ends in a runt segment of its own. Every
// frame of at least a segment is, with its header, a whole number of
// segments less under copyAlign bytes, and the socket's TCP_INFO shows data
// segments within 1 % of the MSS on average. 1 MiB writes (16 segments and
// 848 bytes) went out as 17 segments, 6 % short of it.
func TestSenderWholeSegments(t *testing.T) {
	a, b := tcpPair(t)
	payload, err := NewPayload()
	if err != nil {
		t.Fatal(err)
	}
	const total = 128 << 20
	snd := NewSender(a, payload)
	snd.Budget = NewBudget(total)
	type result struct {
		frames []int
		err    error
	}
	got := make(chan result, 1)
	go func() {
		var r result
		br := bufio.NewReaderSize(b, 1<<20)
		hdr := make([]byte, protocol.HeaderLen)
		for moved := 0; moved < total; {
			if _, r.err = io.ReadFull(br, hdr); r.err != nil {
				break
			}
			var n int
			if _, n, r.err = protocol.ParseHeader(hdr); r.err != nil {
				break
			}
			if _, r.err = br.Discard(n); r.err != nil {
				break
			}
			r.frames = append(r.frames, n)
			moved += n
		}
		got <- r
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := snd.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("reader did not finish")
	}
	if r.err != nil {
		t.Fatalf("after %d frames: %v", len(r.frames), r.err)
	}
	rc, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	if cerr := rc.Control(func(fd uintptr) { info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	mss := int(info.Snd_mss)
	if mss < 16<<10 {
		t.Skipf("loopback MSS %d: runt segments would cost little", mss)
	}
	full := 0
	for i, n := range r.frames[:len(r.frames)-1] { // the last is cut by the budget
		w := protocol.HeaderLen + n
		if w < mss {
			continue
		}
		full++
		if tail := w % mss; tail != 0 && tail < mss-copyAlign {
			t.Fatalf("frame %d: a write of %d bytes ends in a runt segment of %d bytes (MSS %d)", i, w, tail, mss)
		}
	}
	if full < 32 {
		t.Fatalf("only %d of %d frames as large as a segment", full, len(r.frames))
	}
	avg := float64(info.Bytes_sent) / float64(info.Data_segs_out)
	t.Logf("%d frames, %d data segments, %.0f bytes per segment, MSS %d", len(r.frames), info.Data_segs_out, avg, mss)
	if avg < 0.99*float64(mss) {
		t.Fatalf("%.0f bytes per data segment, want within 1%% of the MSS %d", avg, mss)
	}
}

func TestWriteSize(t *testing.T) {
	for _, tc := range []struct{ chunk, seg, want int }{
		{1 << 20, 0, 1 << 20},           // segment size unknown
		{MinChunk, 65483, MinChunk},     // less than a segment
		{1 << 20, 65483, 1047680},       // 16 segments less 48 bytes
		{1 << 20, 1448, 1048320},        // Ethernet: 724 segments less 32 bytes
		{64 << 10, 65483, 65472},        // one segment less 11 bytes
		{1 << 20, 1 << 16, 1 << 20},     // already whole
		{100 << 10, 33 << 10, 99 << 10}, // three segments
	} {
		got := writeSize(tc.chunk, tc.seg)
		if got != tc.want {
			t.Errorf("writeSize(%d, %d) = %d, want %d", tc.chunk, tc.seg, got, tc.want)
		}
		if got%copyAlign != 0 {
			t.Errorf("writeSize(%d, %d) = %d, not a multiple of %d", tc.chunk, tc.seg, got, copyAlign)
		}
	}
}
