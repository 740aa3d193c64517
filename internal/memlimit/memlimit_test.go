package memlimit

import "testing"

// TestParse: a size at or above the floor, or off; below it, negative or
// not a size is refused.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"100MiB", 100 << 20, true},
		{"off", 0, true},
		{"0", 0, true},
		{"1GiB", 1 << 30, true},
		{"32MiB", 32 << 20, true},
		{"31MiB", 0, false},
		{"-64MiB", 0, false},
		{"lots", 0, false},
	} {
		got, err := Parse(tc.in, 32<<20)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q, 32 MiB) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
