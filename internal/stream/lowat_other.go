//go:build !linux && !darwin

package stream

// setNotSentLowat does nothing where TCP_NOTSENT_LOWAT is missing: the
// kernel then buffers more unsent data on a slow path.
func setNotSentLowat(uintptr, int) {}
