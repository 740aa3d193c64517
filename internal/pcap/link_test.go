package pcap

import (
	"bytes"
	"testing"
)

func TestPPPAndCiscoHDLC(t *testing.T) {
	ip4 := []byte{0x45, 0, 0, 20}
	ip6 := []byte{0x60, 0, 0, 0}
	cases := []struct {
		name  string
		link  LinkType
		frame []byte
		want  []byte
	}{
		{"ppp with address/control", LinkPPP, append([]byte{0xff, 0x03, 0x00, 0x21}, ip4...), ip4},
		{"ppp without address/control", LinkPPP, append([]byte{0x00, 0x57}, ip6...), ip6},
		{"ppp compressed protocol", LinkPPP, append([]byte{0x21}, ip4...), ip4},
		{"ppp in hdlc framing", LinkPPPHDLC, append([]byte{0xff, 0x03, 0x00, 0x21}, ip4...), ip4},
		{"ppp lcp", LinkPPP, []byte{0xff, 0x03, 0xc0, 0x21, 1, 2, 3, 4}, nil},
		{"cisco hdlc", LinkCHDLC, append([]byte{0x0f, 0x00, 0x08, 0x00}, ip4...), ip4},
		{"cisco hdlc keepalive", LinkCHDLC, []byte{0x8f, 0x00, 0x80, 0x35, 0, 0, 0, 0}, nil},
		{"ppp truncated", LinkPPP, []byte{0xff, 0x03, 0x00}, nil},
	}
	for _, c := range cases {
		if got := Network(c.link, c.frame); !bytes.Equal(got, c.want) {
			t.Errorf("%s: %x, want %x", c.name, got, c.want)
		}
		if !Supported(c.link) {
			t.Errorf("%s: %v not supported", c.name, c.link)
		}
	}
}

func TestLinkTypeNames(t *testing.T) {
	for l, want := range map[LinkType]string{LinkPPP: "PPP (9)", 105: "IEEE802_11 (105)", LinkSLL2: "LINUX_SLL2 (276)", 4000: "link type 4000"} {
		if got := l.String(); got != want {
			t.Errorf("%d: %q, want %q", l, got, want)
		}
	}
	if Supported(105) || Supported(127) {
		t.Error("802.11 is not read")
	}
}

// FuzzNetworkPPP: PPP and Cisco HDLC frames give IP or nothing.
func FuzzNetworkPPP(f *testing.F) {
	f.Add([]byte{0xff, 0x03, 0x00, 0x21, 0x45, 0, 0, 20})
	f.Add([]byte{0x21, 0x60})
	f.Add([]byte{0x0f, 0x00, 0x86, 0xdd, 0x60, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range []LinkType{LinkPPP, LinkPPPHDLC, LinkCHDLC} {
			if ip := Network(l, b); ip != nil && (ip[0]>>4 != 4 && ip[0]>>4 != 6 || len(ip) > len(b)) {
				t.Fatalf("%v: non-IP result %x", l, ip)
			}
		}
	})
}
