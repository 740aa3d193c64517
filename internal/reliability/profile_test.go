package reliability

import (
	"strings"
	"testing"
)

func TestSmartGridProfiles(t *testing.T) {
	want := map[string][2]float64{ // latency s, reliability
		"price": {600, 0.98}, "metering": {900, 0.99}, "consumer-information": {30, 0.99},
		"electric-car": {60, 0.995}, "dispatch-storage": {5, 0.995},
	}
	ps := SmartGrid()
	if len(ps) != len(want) {
		t.Fatalf("%d profiles", len(ps))
	}
	for _, p := range ps {
		w := want[p.Name]
		if float64(p.LatencyNs)/1e9 != w[0] || p.Reliability != w[1] || checkProfile(p) != nil {
			t.Errorf("%+v, want %v", p, w)
		}
	}
}

func TestParseProfiles(t *testing.T) {
	ps, err := ParseProfiles([]byte(`{"profiles":[{"name":"voip","latency":"150ms","reliability":0.999},{"name":"game","latency":"50ms","reliability":0.99}]}`))
	if err != nil || len(ps) != 2 || ps[0].LatencyNs != 150*ms || ps[1].Reliability != 0.99 {
		t.Fatalf("%+v %v", ps, err)
	}
	for _, c := range []struct{ in, msg string }{
		{`{"profiles":[]}`, "0 profiles"},
		{`{"profiles":[{"name":"x","latency":"1s","reliability":0.9,"extra":1}]}`, "unknown field"},
		{`{"profiles":[{"name":"x","latency":"1s","reliability":0.9}]} {}`, "trailing data"},
		{`{"profiles":[{"name":"x","latency":"soon","reliability":0.9}]}`, "want a duration"},
		{`{"profiles":[{"name":"x","latency":"1s"}]}`, "missing reliability"},
		{`{"profiles":[{"name":"x","latency":"1s","reliability":99}]}`, "strictly between 0 and 1"},
		{`{"profiles":[{"name":"x","latency":"1s","reliability":1}]}`, "strictly between 0 and 1"},
		{`{"profiles":[{"name":"x","latency":"-1s","reliability":0.9}]}`, "out of range"},
		{`{"profiles":[{"name":"x","latency":"2000s","reliability":0.9}]}`, "out of range"},
		{`{"profiles":[{"name":"","latency":"1s","reliability":0.9}]}`, "want 1 to 64"},
		{`{"profiles":[{"name":"x","latency":"1s","reliability":0.9},{"name":"x","latency":"2s","reliability":0.9}]}`, "used twice"},
		{`{"profiles":[{"name":"a\u0007","latency":"1s","reliability":0.9}]}`, "unprintable"},
		{`[`, "profiles:"},
		{strings.Repeat(" ", MaxProfileFile+1), "over the 65536-byte limit"},
	} {
		_, err := ParseProfiles([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%.60q: error %v, want one line containing %q", c.in, err, c.msg)
		}
	}
}
