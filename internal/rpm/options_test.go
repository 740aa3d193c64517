package rpm

import (
	"strings"
	"testing"
	"time"
)

// TestClientOptionsCheck: sonde rpm's bounds for any caller of the client.
func TestClientOptionsCheck(t *testing.T) {
	good := ClientOptions{URL: "https://127.0.0.1:8080", Interval: DefaultInterval, MaxDuration: DefaultMaxDuration,
		MaxFlows: DefaultMaxFlows, ProbeInterval: DefaultProbeInterval}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*ClientOptions)
		want string
	}{
		{func(o *ClientOptions) { o.URL = "ftp://x" }, ""},
		{func(o *ClientOptions) { o.Interval = 50 * time.Millisecond }, "--interval: want 100ms to 10s, got 50ms"},
		{func(o *ClientOptions) { o.MaxDuration = 6 * time.Minute }, "--max-duration: want 1s to 5m, got 6m"},
		{func(o *ClientOptions) { o.ProbeInterval = time.Millisecond }, "--probe-interval: want 10ms to 10s, got 1ms"},
		{func(o *ClientOptions) { o.MaxFlows = 65 }, "--max-flows: want 1 to 64, got 65"},
	} {
		o := good
		c.edit(&o)
		if err := o.Check(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", o, err, c.want)
		}
	}
	var o ClientOptions
	if err := o.SetDirection("upload"); err != nil || len(o.Directions) != 1 || o.Directions[0] != "upload" {
		t.Errorf("upload: %v %v", o.Directions, err)
	}
	if err := o.SetDirection("both"); err == nil || err.Error() != `--direction: want download or upload, got "both"` {
		t.Errorf("both: %v", err)
	}
}
