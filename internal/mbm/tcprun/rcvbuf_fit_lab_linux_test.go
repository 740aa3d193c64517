package tcprun

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/netns"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// TestLabRcvbufFit is the measurement behind mbmwire.ReceiveBufferFor's
// constants: for each SO_RCVBUF set on a listener before listen() (in the
// lab's server namespace, behind a 20 Mbit/s, 10 ms link), a sender with
// MSS 1448 writes unpaced for 3 s and the largest window it is offered
// (tcpi_snd_wnd) and the server advertises (tcpi_rcv_wnd) over the last
// 2 s are logged. It checks nothing: it is run by hand to refit the rule
// (SONDE_RCVBUF_FIT=1 go test -run LabRcvbufFit -v ./internal/mbm/tcprun).
func TestLabRcvbufFit(t *testing.T) {
	if os.Getenv("SONDE_RCVBUF_FIT") == "" {
		t.Skip("a measurement run by hand: SONDE_RCVBUF_FIT=1")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces and TUN devices")
	}
	p, err := lab.Scenario{Name: "rcvbuffit", Links: []lab.ScenarioLink{{Name: "link1", Up: "rate=20Mbit delay=10ms limit=100p", Down: "rate=20Mbit delay=10ms"}}}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.UpProfile(context.Background(), p, lab.Options{Seed: 7, StateDir: t.TempDir(), TruthPath: filepath.Join(t.TempDir(), "t.sgt")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Down() }()
	cns, _ := l.Namespace(lab.Client)
	sns, _ := l.Namespace(lab.Server)
	for _, rb := range []int{4096, 8192, 16384, 13000, 20000, 32768, 65536} {
		var ln net.Listener
		err := netns.Do(sns, func() (err error) {
			lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
				return c.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, rb) })
			}}
			ln, err = lc.Listen(context.Background(), "tcp", net.JoinHostPort(l.ServerAddr(), "0"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		type sres struct {
			maxRcvWnd, rcvSpace uint32
			rcvbuf              int
			n                   int64
		}
		ch := make(chan sres, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				ch <- sres{}
				return
			}
			defer c.Close()
			var r sres
			_, r.rcvbuf, _ = tcpinfo.Buffers(c)
			buf := make([]byte, 65536)
			last := time.Now()
			for {
				n, err := c.Read(buf)
				r.n += int64(n)
				if time.Since(last) > 5*time.Millisecond {
					s, _ := tcpinfo.Get(c, 0)
					r.maxRcvWnd = max(r.maxRcvWnd, s.RcvWnd)
					r.rcvSpace = s.RcvSpace
					last = time.Now()
				}
				if err != nil {
					break
				}
			}
			ch <- r
		}()
		var c net.Conn
		err = netns.Do(cns, func() (err error) {
			c, err = (&net.Dialer{Control: ClampMSS(1448)}).Dial("tcp", ln.Addr().String())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := time.Now().Add(3 * time.Second)
		go func() {
			b := make([]byte, 65536)
			for time.Now().Before(stop) {
				if _, err := c.Write(b); err != nil {
					return
				}
			}
		}()
		var maxSnd, maxUna uint32
		var mss uint32
		var del0, del1 uint32
		var t0, t1 time.Time
		var srtt uint32
		for time.Now().Before(stop) {
			time.Sleep(5 * time.Millisecond)
			s, err := tcpinfo.Get(c, 0)
			if err != nil {
				break
			}
			if time.Until(stop) < 2*time.Second {
				if t0.IsZero() {
					t0, del0 = time.Now(), s.Delivered
				}
				t1, del1 = time.Now(), s.Delivered
				maxSnd = max(maxSnd, s.SndWnd)
				maxUna = max(maxUna, s.Unacked)
				srtt = s.RTTUs
			}
			mss = s.SndMSS
		}
		c.Close()
		ln.Close()
		r := <-ch
		perRTT := float64(del1-del0) / t1.Sub(t0).Seconds() * float64(srtt) / 1e6
		t.Logf("SO_RCVBUF %6d: readback %6d; server max rcv_wnd %6d rcv_space %6d; client max snd_wnd %6d (%.2f × 2·rcvbuf) max unacked %3d mss %d (= %.1f segs) perRTT %.1f srtt %dus",
			rb, r.rcvbuf, r.maxRcvWnd, r.rcvSpace, maxSnd, float64(maxSnd)/float64(2*rb), maxUna, mss, float64(maxSnd)/float64(mss), perRTT, srtt)
	}
}
