package probe

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
)

// TestICMPKernelReceiveTime: an echo reply read 300 ms after it arrived
// is timed when it arrived (the kernel's SO_TIMESTAMPNS, read the way
// the STAMP path reads it), not when it was read: the RTT on loopback is
// well under the reader's delay. Timed at the read, it was over 300 ms.
func TestICMPKernelReceiveTime(t *testing.T) {
	p := &Prober{clock: stamp.NewClock()}
	s := &stream{cfg: StreamConfig{Kind: model.ProbeICMP, Target: "127.0.0.1", Rate: 1}, p: p}
	k, err := openICMP(s)
	if err != nil {
		if strings.Contains(err.Error(), "CAP_NET_RAW") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer k.c.Close()
	if !k.kernelTS {
		t.Fatal("the ICMP socket gives no kernel receive timestamps")
	}
	// The kernel switches receive timestamping on for the whole stack
	// through deferred work (net_enable_timestamp): a packet that arrives
	// before it ran has no timestamp, and the socket then reports the
	// time of the read. On an otherwise quiet host (no other socket asked
	// for timestamps) the first echo right after opening can meet that.
	// A daemon's first probes may; the test waits it out.
	time.Sleep(100 * time.Millisecond)
	var sent int64
	if err := k.send(s, 7, func(r record) { sent = r.sentNs }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the reply waits in the socket
	buf, oob := make([]byte, 1500), make([]byte, stamp.OOBLen())
	if err := k.pc.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// A raw socket also reads the request looped back, and every other
	// ICMP message of the host: another prober pinging loopback (bench/
	// monitor_soak.sh's smokeping_prober sends 80 a second) fills it
	// ahead of the reply. Bounded by count and by the read deadline.
	for range 10_000 {
		b, from, recv, err := k.readOne(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		m, err := icmp.ParseMessage(1, b)
		if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
			continue
		}
		e, ok := m.Body.(*icmp.Echo)
		if !ok || len(e.Data) < icmpPayload || binary.BigEndian.Uint64(e.Data) != k.token {
			continue
		}
		if from.Addr().String() != "127.0.0.1" {
			t.Errorf("from %v", from)
		}
		rtt := time.Duration(recv - sent)
		if rtt < 0 || rtt > 100*time.Millisecond {
			t.Fatalf("RTT %v: timed at the read, not on arrival", rtt)
		}
		t.Logf("loopback RTT %v read 300 ms later (raw socket %v)", rtt, k.raw)
		return
	}
	t.Fatal("no echo reply")
}
