//go:build !linux

package main

import (
	"fmt"
	"os"
)

// capgen sends on an AF_PACKET socket, which only Linux has.
func main() {
	fmt.Fprintln(os.Stderr, "capgen: needs Linux (AF_PACKET)")
	os.Exit(2)
}
