package dscpmark

import (
	"errors"
	"net"
	"testing"
)

// Out-of-range values are refused before any socket call; a valid one
// marks (the TOS byte is read back in mark_linux_test.go).
func TestConnRange(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, bad := range []int{-1, 64} {
		if err := Conn(c, bad); err == nil {
			t.Errorf("Conn(%d) accepted", bad)
		}
	}
	if err := Conn(c, 46); errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	} else if err != nil {
		t.Fatalf("Conn(46): %v", err)
	}
}
