package units

import (
	"testing"
	"time"
)

// TestCheckBounds: a duration or count outside its bounds is one line
// naming the setting and its bounds as a person writes them; the bounds
// themselves are in.
func TestCheckBounds(t *testing.T) {
	for _, c := range []struct {
		d, lo, hi time.Duration
		want      string
	}{
		{time.Second, time.Second, time.Hour, ""},
		{time.Hour, time.Second, time.Hour, ""},
		{0, 0, time.Hour, ""},
		{2 * time.Hour, time.Second, time.Hour, "--duration: want 1s to 1h, got 2h"},
		{500 * time.Millisecond, time.Second, 24 * time.Hour, "--duration: want 1s to 24h, got 500ms"},
		{90 * time.Second, 0, time.Minute, "--duration: want 0s to 1m, got 1m30s"},
		{-time.Millisecond, 0, 50 * time.Millisecond, "--duration: want 0s to 50ms, got -1ms"},
	} {
		err := CheckDuration("--duration", c.d, c.lo, c.hi)
		if got := errString(err); got != c.want {
			t.Errorf("CheckDuration(%v, %v, %v) = %q, want %q", c.d, c.lo, c.hi, got, c.want)
		}
	}
	for _, c := range []struct {
		n, lo, hi int
		want      string
	}{
		{1, 1, 128, ""}, {128, 1, 128, ""}, {0, 1, 128, "--max-streams: want 1 to 128, got 0"}, {129, 1, 128, "--max-streams: want 1 to 128, got 129"},
	} {
		if got := errString(CheckCount("--max-streams", c.n, c.lo, c.hi)); got != c.want {
			t.Errorf("CheckCount(%d, %d, %d) = %q, want %q", c.n, c.lo, c.hi, got, c.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
