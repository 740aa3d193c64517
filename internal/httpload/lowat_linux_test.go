package httpload

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLowatFollowsRate: the unsent-data bound is about 5 ms of what the
// flow wrote, within its floor and ceiling, on the socket itself.
func TestLowatFollowsRate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func() int {
		rc, _ := c.(*net.TCPConn).SyscallConn()
		var v int
		_ = rc.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT) })
		return v
	}
	l := newLowat(c)
	if got := read(); got != lowatStart {
		t.Fatalf("start: TCP_NOTSENT_LOWAT %d, want %d", got, lowatStart)
	}
	for _, tc := range []struct {
		bytesPer100ms int
		want          int
	}{
		{100 << 20, lowatMax},       // 1 GB/s: 5 MB, capped
		{10 << 20, 100 << 20 / 200}, // 100 MB/s: 5 ms = 512 KiB
		{10 << 10, lowatMin},        // 100 kB/s: floor
	} {
		l.since = time.Now().Add(-lowatEvery)
		l.wrote(tc.bytesPer100ms)
		got := read()
		if rel := float64(got-tc.want) / float64(tc.want); rel > 0.1 || rel < -0.1 {
			t.Fatalf("%d B per 100 ms: TCP_NOTSENT_LOWAT %d, want ≈ %d", tc.bytesPer100ms, got, tc.want)
		}
		if l.value() != got {
			t.Fatalf("value %d, socket %d", l.value(), got)
		}
	}
}

// TestLossBased: a load connection gets cubic (or reno where cubic is not
// allowed), whatever the host's default, and says which; a non-TCP
// connection gets none.
func TestLossBased(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := LossBased(c)
	if got != "cubic" && got != "reno" {
		t.Fatalf("LossBased: %q", got)
	}
	rc, _ := c.(*net.TCPConn).SyscallConn()
	var cc string
	_ = rc.Control(func(fd uintptr) { cc, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
	if cc != got {
		t.Fatalf("socket has %q, LossBased said %q", cc, got)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := LossBased(a); got != "" {
		t.Fatalf("pipe: %q", got)
	}
}
