package servertest

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestPacedCapsRate sends from a paced loopback listener's connection for
// a second and checks, at the receiver, that the rate stays under the cap.
// Only the upper bound is checked: a loaded machine can only make it
// slower, while unpaced loopback runs at several Gbit/s, far above it.
func TestPacedCapsRate(t *testing.T) {
	const capBps = 80e6
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ln, err := Paced(raw, capBps, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		stop := time.Now().Add(1500 * time.Millisecond)
		_ = c.SetWriteDeadline(stop)
		for time.Now().Before(stop) {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64<<10)
	// Count from the first byte, for one second.
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(time.Second))
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if err != nil {
			break
		}
	}
	el := time.Since(start).Seconds()
	bps := float64(n) * 8 / el
	t.Logf("paced at %.0f Mbit/s: received %.1f Mbit/s over %.2f s", capBps/1e6, bps/1e6, el)
	if bps > 1.25*capBps {
		t.Errorf("received %.0f Mbit/s through a %.0f Mbit/s pacing cap", bps/1e6, capBps/1e6)
	}
	if n == 0 {
		t.Error("nothing received")
	}
}

func TestPacedRejectsBadRate(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, bps := range []float64{0, -1, 7, 1e12} {
		if _, err := Paced(raw, bps, nil); err == nil {
			t.Errorf("Paced(%g bit/s) accepted", bps)
		}
	}
}
