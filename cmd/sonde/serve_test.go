package main

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// TestServeBadLimits: nonsense connection limits are usage errors (exit 2),
// caught before anything listens.
func TestServeBadLimits(t *testing.T) {
	for _, args := range [][]string{
		{"--idle-timeout", "0"}, {"--header-timeout", "-1s"}, {"--body-timeout", "1ns"},
		{"--write-timeout", "1s"}, {"--max-conns-per-ip", "0"}, {"--max-conns", "-1"},
		{"--max-conns", "2000000000"}, {"--token-fail-rate", "NaN"}, {"--token-fail-rate", "0"},
		{"--token-fail-burst", "-3"}, {"--idle-timeout", "soon"},
	} {
		cmd := newServeCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append(args, "--addr", "127.0.0.1:0", "--udp-addr", "off", "--db", ":memory:"))
		// Bounded: a wrongly accepted value would serve until the end.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := cmd.ExecuteContext(ctx)
		cancel()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: %v, want a usage error (exit 2)", args, err)
		}
	}
}
