package ifstat

// parseCounter parses a sysfs counter: decimal digits, optionally ended by
// a newline, at most 20 digits and no overflow of 64 bits. It does not
// allocate.
func parseCounter(b []byte) (uint64, bool) {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
