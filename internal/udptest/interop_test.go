package udptest

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"
)

// ntp returns t as a 64-bit NTP timestamp (seconds since 1900, fraction).
func ntp(t time.Time) uint64 {
	const epochOffset = 2208988800 // 1900 to 1970
	secs := uint64(t.Unix()) + epochOffset
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	return secs<<32 | frac
}

// bareReflector is a stateless RFC 8762 §4.3 unauthenticated reflector,
// written from the RFC's packet layout and sharing no code with package
// stamp, so sonde's sender is checked against another implementation. It
// answers every packet, as a standard reflector does.
func bareReflector(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		var seq uint32
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			rx := time.Now()
			if n < 44 {
				continue
			}
			in := buf[:n]
			out := make([]byte, n) // never larger than the request
			binary.BigEndian.PutUint32(out[0:], seq)
			seq++
			binary.BigEndian.PutUint16(out[12:], 0x8001) // S: synchronised, scale 0, multiplier 1
			copy(out[14:16], in[14:16])                  // SSID (RFC 8972), or MBZ
			binary.BigEndian.PutUint64(out[16:], ntp(rx))
			copy(out[24:28], in[0:4])   // session-sender sequence number
			copy(out[28:36], in[4:12])  // session-sender timestamp
			copy(out[36:38], in[12:14]) // session-sender error estimate
			out[40] = 64                // session-sender TTL (not read here)
			copy(out[44:], in[44:])
			binary.BigEndian.PutUint64(out[4:], ntp(time.Now()))
			_, _ = pc.WriteTo(out, from)
		}
	}()
	return pc.LocalAddr().String()
}

func TestStandaloneReflector(t *testing.T) {
	addr := bareReflector(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := Run(ctx, Options{Reflector: addr, Software: "test", Interval: 5 * time.Millisecond,
		Duration: time.Second, PacketBytes: 44, Timeout: time.Second, NoCoS: true})
	if err != nil {
		t.Fatalf("run against a standalone reflector: %v", err)
	}
	if len(res.Flows) != 1 {
		t.Fatalf("%d flows", len(res.Flows))
	}
	f := res.Flows[0]
	if f.Sent < 190 || f.Replies != f.Sent {
		t.Fatalf("sent %d, replies %d", f.Sent, f.Replies)
	}
	if f.RTTMs.N != f.Replies || f.RTTMs.Min <= 0 || f.RTTMs.P50 > 5 {
		t.Fatalf("RTT %+v", f.RTTMs)
	}
	if f.Clock.SharedClock {
		t.Fatal("claims a shared clock with a reflector that gave no clock identity")
	}
	if f.Forward.Known || f.Backward.Known {
		t.Fatal("claims per-direction loss without the reflector's report")
	}
	t.Logf("standalone reflector: sent %d, replies %d, RTT min %.3f p50 %.3f p99 %.3f ms, errors %v", f.Sent, f.Replies, f.RTTMs.Min, f.RTTMs.P50, f.RTTMs.P99, f.Errors)
	if res.Server.Address != addr || f.ReflectorAddr != addr {
		t.Fatalf("server %q, flow reflector %q, want %q", res.Server.Address, f.ReflectorAddr, addr)
	}
}

func TestReflectorOptionValidation(t *testing.T) {
	base := Options{Interval: 20 * time.Millisecond, Duration: time.Second, PacketBytes: 64, Timeout: time.Second}
	both := base
	both.Server, both.Reflector = "127.0.0.1:8080", "127.0.0.1:862"
	if err := both.Validate(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("server and reflector together: %v", err)
	}
	noPort := base
	noPort.Reflector = "127.0.0.1"
	if err := noPort.Validate(); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("reflector without port: %v", err)
	}
}

// A sonde reflector does not answer probes outside a session (no
// amplification); a direct run against it must fail with a reason, not
// report an empty result as success.
func TestStandaloneModeAgainstClosedReflector(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0") // reads nothing, answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	res, err := Run(context.Background(), Options{Reflector: pc.LocalAddr().String(), Interval: 10 * time.Millisecond,
		Duration: 200 * time.Millisecond, PacketBytes: 64, Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no reply from") || strings.Count(err.Error(), "no reply") != 1 {
		t.Fatalf("err = %v, want no-reply reason", err)
	}
	if res == nil || res.Flows[0].Sent == 0 {
		t.Fatalf("result %+v lost what was sent", res)
	}
}
