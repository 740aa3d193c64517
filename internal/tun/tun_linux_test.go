package tun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/netns"
)

// inNS runs fn on an OS thread in namespace ns: sockets fn creates stay in
// ns after the thread returns to its own namespace.
func inNS(t *testing.T, ns *netns.NS, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			t.Error(err)
			runtime.UnlockOSThread()
			return
		}
		defer own.Close()
		target, err := os.Open("/run/netns/" + ns.Name())
		if err != nil {
			t.Error(err)
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Error(err)
			runtime.UnlockOSThread()
			return
		}
		fn()
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: the runtime then ends it rather
			// than reuse it in the wrong namespace.
			t.Error(err)
			return
		}
		runtime.UnlockOSThread()
	}()
	<-done
}

// addNS creates a namespace that is deleted when the test ends.
func addNS(t *testing.T, tag string) *netns.NS {
	t.Helper()
	ns, err := netns.Add(netns.UniqueName(tag))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Errorf("delete namespace %s: %v", ns.Name(), err)
		}
	})
	return ns
}

// relay copies packets from one device to the other until stop, counting
// reads, packets read, writes and packets written.
func relay(from, to *Device, stop *atomic.Bool, c *[4]atomic.Int64) error {
	var pkts [][]byte
	collect := func(b []byte) { pkts = append(pkts, bytes.Clone(b)) }
	for deadline := time.Now().Add(time.Minute); !stop.Load() && time.Now().Before(deadline); {
		pkts = pkts[:0]
		n, err := from.ReadPackets(collect)
		if errors.Is(err, unix.EAGAIN) {
			time.Sleep(20 * time.Microsecond)
			continue
		}
		if err != nil {
			return err
		}
		c[0].Add(1)
		c[1].Add(int64(n))
		failed := make([]bool, len(pkts))
		if err := to.WritePackets(pkts, failed, func(i, n int) { c[2].Add(1); c[3].Add(int64(n)) }); err != nil {
			return err
		}
	}
	return nil
}

// TestOffloadThroughKernel relays TCP transfers over IPv4 and IPv6 between
// two namespaces through a pair of TUN devices (a forwarder with no
// model), and checks that the data arrives intact, that the sender's
// kernel handed over segmentation offload packets, and that writes carried
// several segments at once, which the receiving kernel accepted.
func TestOffloadThroughKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) for namespaces and TUN devices")
	}
	nsA, nsB := addNS(t, "tuna"), addNS(t, "tunb")
	var devs [2]*Device
	for i, e := range []struct {
		ns             *netns.NS
		addr, peer, a6 string
	}{
		{nsA, "198.18.251.1", "198.18.251.2", "2001:db8:251::1"},
		{nsB, "198.18.251.2", "198.18.251.1", "2001:db8:251::2"},
	} {
		d, err := Create(netns.UniqueName("tun"))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		devs[i] = d
		if err := e.ns.MoveLink(d.Name()); err != nil {
			t.Fatal(err)
		}
		for _, c := range [][]string{
			{"addr", "add", e.addr, "peer", e.peer, "dev", d.Name()},
			{"-6", "addr", "add", e.a6 + "/64", "dev", d.Name(), "nodad"},
			{"link", "set", "dev", d.Name(), "up"},
		} {
			if err := e.ns.IP(c...); err != nil {
				t.Fatal(err)
			}
		}
	}

	var stop atomic.Bool
	var up, down [4]atomic.Int64
	var wg sync.WaitGroup
	relayErr := make([]error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); relayErr[0] = relay(devs[0], devs[1], &stop, &up) }()
	go func() { defer wg.Done(); relayErr[1] = relay(devs[1], devs[0], &stop, &down) }()
	defer func() {
		stop.Store(true)
		wg.Wait()
		for _, err := range relayErr {
			if err != nil {
				t.Errorf("relay: %v", err)
			}
		}
	}()

	for _, c := range []struct{ name, addr string }{
		{"IPv4", "198.18.251.2:5999"},
		{"IPv6", "[2001:db8:251::2]:5999"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before [4]int64
			for i := range up {
				before[i] = up[i].Load()
			}
			transfer(t, nsA, nsB, c.addr)
			reads, pkts, writes, written := up[0].Load()-before[0], up[1].Load()-before[1], up[2].Load()-before[2], up[3].Load()-before[3]
			t.Logf("A→B: %d reads gave %d packets, written in %d writes", reads, pkts, writes)
			if pkts <= reads {
				t.Errorf("A→B: %d reads gave %d packets: the sender's segmentation offload was not used", reads, pkts)
			}
			if written <= writes {
				t.Errorf("A→B: %d writes carried %d packets: none coalesced", writes, written)
			}
		})
	}
}

// transfer sends 32 MB over TCP from namespace a to a listener on addr in
// namespace b, and fails unless the same bytes arrive.
func transfer(t *testing.T, a, b *netns.NS, addr string) {
	t.Helper()
	var ln net.Listener
	var err error
	inNS(t, b, func() { ln, err = net.Listen("tcp", addr) })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const size = 32 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	got := make(chan [32]byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- [32]byte{}
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		h := sha256.New()
		_, _ = io.Copy(h, c)
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		got <- sum
	}()
	var conn net.Conn
	inNS(t, a, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(data); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if sum := <-got; sum != sha256.Sum256(data) {
		t.Fatal("the data arrived changed or incomplete")
	}
}
