package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseRate reads a bit rate: a number with an optional SI suffix k, M, G
// (powers of 1000) and an optional "bit/s" or "bps", e.g. "1G", "544k",
// "100Mbit/s".
func parseRate(s string) (float64, error) {
	v, err := parseSI(s, []string{"bit/s", "bps", "b/s"}, 1000)
	if err != nil {
		return 0, fmt.Errorf("invalid rate %q: want e.g. 100M, 1G or 544k (bit/s)", s)
	}
	return v, nil
}

// parseBytes reads a byte count with an optional suffix k, M, G, T (powers
// of 1000) or Ki, Mi, Gi, Ti (powers of 1024), and an optional "B".
func parseBytes(s string) (int64, error) {
	u := strings.TrimSuffix(strings.TrimSpace(s), "B")
	base := 1000.0
	if strings.HasSuffix(u, "i") {
		u, base = strings.TrimSuffix(u, "i"), 1024
	}
	v, err := parseSI(u, nil, base)
	if err != nil || v != float64(int64(v)) {
		return 0, fmt.Errorf("invalid size %q: want e.g. 500M, 10G or 64Ki", s)
	}
	return int64(v), nil
}

func parseSI(s string, units []string, base float64) (float64, error) {
	s = strings.TrimSpace(s)
	for _, u := range units {
		s = strings.TrimSuffix(s, u)
	}
	mult := 1.0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult = base
		case 'M':
			mult = base * base
		case 'G':
			mult = base * base * base
		case 'T':
			mult = base * base * base * base
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || v != v {
		return 0, fmt.Errorf("invalid number %q", s)
	}
	return v * mult, nil
}
