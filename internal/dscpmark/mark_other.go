//go:build !linux && !darwin

package dscpmark

// setTOS is not implemented on this OS: QoS classes need Linux or macOS.
func setTOS(uintptr, bool, int) error { return ErrUnsupported }
