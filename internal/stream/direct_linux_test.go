package stream

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
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
