package counters

import (
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	s, err := Parse("snmp://home@198.18.1.2/eth1?interval=500ms&side=lan")
	if err != nil || s.Kind != KindSNMP || s.Host != "198.18.1.2:161" || s.Iface != "eth1" || s.Community != "home" ||
		s.Version != "2c" || s.Interval != 500*time.Millisecond || s.Timeout != 500*time.Millisecond || !s.TxIsDown {
		t.Errorf("v2c: %+v %v", s, err)
	}
	s, err = Parse("snmp://mon@[2001:db8::1]:1161/7?version=3&auth=sha256&auth-pass=12345678&priv-pass=abcdefgh")
	if err != nil || s.Host != "[2001:db8::1]:1161" || s.Index != 7 || s.User != "mon" || s.AuthProto != "SHA256" || s.PrivProto != "AES" {
		t.Errorf("v3: %+v %v", s, err)
	}
	if strings.Contains(s.String(), "12345678") || strings.Contains(s.String(), "abcdefgh") {
		t.Errorf("String shows a secret: %s", s)
	}
	s, err = Parse("node-exporter://198.18.1.2?device=wan0")
	if err != nil || s.Host != "198.18.1.2:9100" || s.Path != "/metrics" || s.Iface != "wan0" || s.Interval != time.Second {
		t.Errorf("node exporter: %+v %v", s, err)
	}
	for spec, want := range map[string]string{
		"eth0":                    "scheme",
		"http://h/metrics":        "scheme",
		"snmp://h":                "want one interface",
		"snmp://h/a/b":            "want one interface",
		"snmp://h/eth0?version=1": "v1 agents have no 64-bit counters",
		"snmp://c:pw@h/eth0":      "not a password",
		"snmp://h/eth0?version=3": "needs a user",
		"snmp://u@h/eth0?version=3&auth-pass=123":               "at least 8",
		"snmp://u@h/eth0?version=3&priv=AES&priv-pass=12345678": "priv needs auth",
		"snmp://u@h/eth0?version=3&auth=XXX":                    "auth \"XXX\"",
		"snmp://h/eth0?auth=SHA":                                "is for version=3",
		"snmp://h/eth0?interval=0s":                             "interval",
		"snmp://h/eth0?interval=1m":                             "interval",
		"snmp://h/eth0?timeout=5s":                              "timeout",
		"snmp://h/eth0?side=up":                                 "side",
		"snmp://h/eth0?colour=red":                              "unknown option \"colour\"",
		"snmp://h/eth0?interval=1s&interval=2s":                 "twice",
		"snmp://h:0/eth0":                                       "port",
		"snmp://h:99999/eth0":                                   "port",
		"snmp://h/0":                                            "ifIndex 0",
		"node-exporter://h:9100/metrics":                        "device=",
		"node-exporter://u@h:9100/metrics?device=eth0":          "user info",
		"snmp:///eth0":                                          "no host",
		"snmp:eth0":                                             "no host",
		"snmp://h/" + strings.Repeat("x", 200):                  "interface",
		strings.Repeat("x", MaxSpecLen+1):                       "over",
	} {
		if _, err := Parse(spec); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%.60q): %v; want one line with %q", spec, err, want)
		}
	}
}

const exposition = `# HELP node_network_receive_bytes_total Network device statistic receive_bytes.
# TYPE node_network_receive_bytes_total counter
node_network_receive_bytes_total{device="eth0"} 1.234567891e+09
node_network_receive_bytes_total{device="lo",extra="a \"quoted\" \\ value"} 42
node_network_receive_packets_total{device="eth0"} 99
# TYPE node_network_transmit_bytes_total counter
node_network_transmit_bytes_total{device="eth0"} 987654 1700000000000
node_network_transmit_bytes_total{device="lo"} 42
`

func TestParseNodeNetdev(t *testing.T) {
	rx, tx, err := ParseNodeNetdev([]byte(exposition), "eth0")
	if err != nil || rx != 1234567891 || tx != 987654 {
		t.Errorf("eth0: %d %d %v", rx, tx, err)
	}
	if rx, tx, err := ParseNodeNetdev([]byte(exposition), "lo"); err != nil || rx != 42 || tx != 42 {
		t.Errorf("lo: %d %d %v", rx, tx, err)
	}
	for in, want := range map[string]string{
		"node_network_receive_bytes_total{device=\"eth0\"} -1\n":    "not a byte counter",
		"node_network_receive_bytes_total{device=\"eth0\"} NaN\n":   "not a byte counter",
		"node_network_receive_bytes_total{device=\"eth0\"} 1e30\n":  "not a byte counter",
		"node_network_receive_bytes_total{device=\"eth0} 1\n":       "closing quote",
		"node_network_receive_bytes_total{device=eth0} 1\n":         "malformed label",
		"node_network_receive_bytes_total{device=\"a\\q\"} 1\n":     "unknown escape",
		"node_network_receive_bytes_total{device=\"eth0\"}\n":       "want a value",
		"node_network_receive_bytes_total{device=\"eth0\"} 1 2 3\n": "want a value",
		"node_network_receive_bytes_total{device=\"eth0\"} 1\n":     "no device \"eth0\"",
		"go_goroutines 7\n": "not a node exporter",
		"node_network_receive_bytes_total " + strings.Repeat("x", 70<<10): "not the text exposition format",
	} {
		if _, _, err := ParseNodeNetdev([]byte(in), "eth0"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: %v; want %q", in, err, want)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"snmp://public@198.18.1.2/eth0", "snmp://u@h/3?version=3&auth=SHA&auth-pass=12345678&priv=AES&priv-pass=12345678",
		"node-exporter://198.18.1.2:9100/metrics?device=eth0&interval=2s&side=lan", "snmp://[::1]:161/eth0?timeout=200ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if s.Interval < MinInterval || s.Interval > MaxInterval || s.Timeout <= 0 || s.Timeout > maxTimeout || s.Host == "" {
			t.Fatalf("accepted out of bounds: %+v", s)
		}
		if (s.Iface == "") == (s.Index == 0) {
			t.Fatalf("neither or both of name and index: %+v", s)
		}
		if _, err := Open(s); err != nil && s.Kind == KindNodeExporter {
			t.Fatalf("Open: %v", err)
		}
	})
}

func FuzzParseNodeNetdev(f *testing.F) {
	f.Add([]byte(exposition), "eth0")
	f.Add([]byte("node_network_receive_bytes_total{device=\"a\\\\\"} 1\nnode_network_transmit_bytes_total{device=\"a\\\\\"} 2\n"), "a\\")
	f.Fuzz(func(t *testing.T, b []byte, dev string) {
		rx, tx, err := ParseNodeNetdev(b, dev)
		if err != nil {
			if rx != 0 || tx != 0 {
				t.Fatalf("values with an error")
			}
			return
		}
		if !strings.Contains(string(b), metricRx) || !strings.Contains(string(b), metricTx) {
			t.Fatalf("counters read from input without both metrics")
		}
	})
}
