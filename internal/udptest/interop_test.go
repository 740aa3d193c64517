package udptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/stamp"
	"github.com/sonde-project/sonde/internal/udptest/testreflector"
)

// startReflector runs an independent test reflector on loopback.
func startReflector(t *testing.T, cfg testreflector.Config) *testreflector.Reflector {
	t.Helper()
	r, err := testreflector.Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestStandaloneReflector(t *testing.T) {
	addr := startReflector(t, testreflector.Config{Kind: testreflector.STAMP}).Addr()
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
	if f.ReflectorFormat != "stamp-or-twamp-light" {
		t.Errorf("format %q: 44-octet replies without TLVs read the same in both formats", f.ReflectorFormat)
	}
	if res.Server.Address != addr || f.ReflectorAddr != addr {
		t.Fatalf("server %q, flow reflector %q, want %q", res.Server.Address, f.ReflectorAddr, addr)
	}
}

// TestSTAMPReflectorWithTLVs: with the CoS TLV in the probes, an RFC 8762
// reflector's replies are told from TWAMP-Light's by the TLV it reflects.
func TestSTAMPReflectorWithTLVs(t *testing.T) {
	addr := startReflector(t, testreflector.Config{Kind: testreflector.STAMP}).Addr()
	res, err := Run(context.Background(), Options{Reflector: addr, Software: "test", Interval: 5 * time.Millisecond,
		Duration: 300 * time.Millisecond, PacketBytes: 64, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Flows[0]; f.Replies != f.Sent || f.ReflectorFormat != "stamp" || len(f.UnparsedReplies) != 0 {
		t.Fatalf("sent %d replies %d format %q unparsed %+v", f.Sent, f.Replies, f.ReflectorFormat, f.UnparsedReplies)
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

// TestTWAMPLightReflector: a TWAMP-Light reflector (RFC 5357 §4.2.1) answers
// sonde's probes in its 41-octet format with however much padding it
// returns; every reply is read, and the format is named.
func TestTWAMPLightReflector(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pad   testreflector.Padding
		bytes int
		noCoS bool
	}{
		{"same-size/64", testreflector.PadSameSize, 64, false},
		{"no-padding/64", testreflector.PadNone, 64, false},
		{"all-padding/64", testreflector.PadAll, 64, false},
		{"all-padding/1452", testreflector.PadAll, stamp.MaxPacketLen, false},
		{"no-padding/44", testreflector.PadNone, 44, true},
		{"same-size/52", testreflector.PadSameSize, 52, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refl := startReflector(t, testreflector.Config{Kind: testreflector.TWAMPLight, Padding: tc.pad})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := Run(ctx, Options{Reflector: refl.Addr(), Software: "test", Interval: 5 * time.Millisecond,
				Duration: 500 * time.Millisecond, PacketBytes: tc.bytes, Timeout: time.Second, NoCoS: tc.noCoS})
			if err != nil {
				t.Fatalf("run against a TWAMP-Light reflector: %v", err)
			}
			f := res.Flows[0]
			if f.Sent < 90 || f.Replies != f.Sent || refl.Answered() < f.Sent {
				t.Fatalf("sent %d, replies %d, reflector answered %d", f.Sent, f.Replies, refl.Answered())
			}
			if f.ReflectorFormat != "twamp-light" {
				t.Errorf("format %q, want twamp-light", f.ReflectorFormat)
			}
			if len(f.UnparsedReplies) != 0 || len(f.Errors) != 1 {
				// The one error says loss is round-trip only.
				t.Errorf("unparsed %+v, errors %q", f.UnparsedReplies, f.Errors)
			}
			if f.RTTMs.N != f.Replies || f.RTTMs.Min <= 0 || f.Backward.Sent != f.Sent {
				t.Errorf("RTT %+v, backward sent %d (the reflector's sequence numbers)", f.RTTMs, f.Backward.Sent)
			}
			if m := f.Marks; m == nil || m.AtReflectorDSCP != nil {
				t.Errorf("marks %+v: a TWAMP-Light reflector reports no DS field", m)
			}
		})
	}
}

// TestGarbageReflector: a peer that answers every probe with bytes that are
// no reflection of it is named, with the count and size, not reported as
// a silent or absent reflector.
func TestGarbageReflector(t *testing.T) {
	for _, size := range []int{38, 64} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			refl := startReflector(t, testreflector.Config{Kind: testreflector.Garbage, GarbageBytes: size})
			res, err := Run(context.Background(), Options{Reflector: refl.Addr(), Software: "test", Interval: 10 * time.Millisecond,
				Duration: 300 * time.Millisecond, PacketBytes: 64, Timeout: 300 * time.Millisecond})
			if !errors.Is(err, stamp.ErrUnparsedReplies) {
				t.Fatalf("err = %v, want ErrUnparsedReplies", err)
			}
			f := res.Flows[0]
			if f.Replies != 0 || f.ReflectorFormat != "" {
				t.Fatalf("replies %d format %q from garbage", f.Replies, f.ReflectorFormat)
			}
			if len(f.UnparsedReplies) != 1 || f.UnparsedReplies[0].Bytes != size || f.UnparsedReplies[0].Count < f.Sent/2 {
				t.Fatalf("unparsed %+v after %d probes", f.UnparsedReplies, f.Sent)
			}
			want := fmt.Sprintf("%d replies of %d bytes, not STAMP or TWAMP-Light", f.UnparsedReplies[0].Count, size)
			if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "not running") {
				t.Fatalf("err = %v, want it to say %q", err, want)
			}
			t.Logf("%v", err)
		})
	}
}
