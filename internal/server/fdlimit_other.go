//go:build !linux

package server

// fdLimit reports no known limit outside Linux; the connection cap then
// stays as configured.
func fdLimit() (int, bool) { return 0, false }
