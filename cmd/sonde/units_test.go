package main

import "testing"

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"1G": 1e9, "544k": 544e3, "100Mbit/s": 100e6, "0.7M": 0.7e6, "1500": 1500, "10Gbps": 10e9} {
		got, err := parseRate(in)
		if err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "-1M", "1X", "NaN"} {
		if _, err := parseRate(bad); err == nil {
			t.Errorf("parseRate(%q) accepted", bad)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "10G": 10e9, "64Ki": 65536, "1MiB": 1 << 20, "500MB": 500e6} {
		got, err := parseBytes(in)
		if err != nil || got != want {
			t.Errorf("parseBytes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"x", "-5", "1.5"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}
