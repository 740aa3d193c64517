package netns

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestVethPing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	a, err := Add(UniqueName("ta"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Delete() })
	b, err := Add(UniqueName("tb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Delete() })
	if err := Veth(a, "va", "198.18.200.1/24", b, "vb", "198.18.200.2/24"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := a.Command(ctx, "ping", "-c", "1", "-W", "2", "198.18.200.2").CombinedOutput(); err != nil {
		t.Fatalf("ping across veth: %v: %s", err, out)
	}
	names, err := List()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, n := range names {
		if n == a.Name() || n == b.Name() {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("List() = %v, want both %s and %s", names, a.Name(), b.Name())
	}
}

func TestAddRejectsForeignName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := Add("other"); err == nil {
		t.Fatal("Add accepted a name without the sonde prefix")
	}
}

func TestUDPDrops(t *testing.T) {
	snmp := "Ip: Forwarding DefaultTTL\nIp: 1 64\n" +
		"Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n" +
		"Udp: 100 2 7 90 5 0 2 0 0\n" +
		"UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n" +
		"UdpLite: 0 0 0 0 9 0 0 0 0\n"
	if n, err := UDPDrops([]byte(snmp)); err != nil || n != 7 {
		t.Fatalf("UDPDrops = %d, %v; want 7", n, err)
	}
	if _, err := UDPDrops([]byte("Ip: Forwarding\nIp: 1\n")); err == nil {
		t.Fatal("no Udp lines accepted")
	}
	if _, err := UDPDrops([]byte("Udp: RcvbufErrors\nUdp: x\n")); err == nil {
		t.Fatal("a non-number accepted")
	}
	if b, err := os.ReadFile("/proc/net/snmp"); err == nil {
		if _, err := UDPDrops(b); err != nil {
			t.Fatalf("this machine's /proc/net/snmp: %v", err)
		}
	}
}
