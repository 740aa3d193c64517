package monitor

import (
	"github.com/sonde-project/sonde/internal/units"

	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSampleConfigLoads(t *testing.T) {
	c, err := LoadConfig(filepath.Join("..", "..", "contrib", "monitor.sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Deprecated) > 0 {
		t.Errorf("the sample uses deprecated keys: %q", c.Deprecated)
	}
	c.Defaults()
	p, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Streams) == 0 || p.KeepRaw != units.Duration(30*24*time.Hour) {
		t.Fatalf("plan %+v", p)
	}
}

func TestConfigDefaultsAndStreams(t *testing.T) {
	c := Config{Targets: []string{"sonde.example:8080", "stamp://192.0.2.1"}, ICMP: true, TCPPort: 443, DSCP: []string{"ef", "be"}, Store: ":memory:", Name: "m"}
	c.Defaults()
	p, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Streams) != 2*3*2 {
		t.Fatalf("%d streams, want 12", len(p.Streams))
	}
	want := []string{"sonde.example:8080/stamp/ef", "sonde.example:8080/stamp/be", "sonde.example/icmp/ef"}
	for i, w := range want {
		if p.Streams[i].Name != w {
			t.Errorf("stream %d %q, want %q", i, p.Streams[i].Name, w)
		}
	}
	if p.Servers[0] != "sonde.example:8080" || p.Probes[0].Target != "" {
		t.Errorf("a sonde server's STAMP stream goes through its sessions: %+v %q", p.Probes[0], p.Servers[0])
	}
	if s := p.Probes[6]; s.Target != "192.0.2.1:862" || p.Servers[6] != "" {
		t.Errorf("stamp:// target: %+v", s)
	}
	if p.Rate != 10 || time.Duration(p.Timeout) != 2*time.Second || p.Listen != DefaultListen {
		t.Errorf("defaults %+v", p.Config)
	}
}

// TestConfigErrors: every bad input is one line naming what is wrong.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	badProfiles := filepath.Join(dir, "p.json")
	os.WriteFile(badProfiles, []byte(`{"profiles":[{"name":"x","latency":"-5ms","reliability":2}]}`), 0o644)
	ok := func() Config { return Config{Targets: []string{"stamp://127.0.0.1"}, Store: ":memory:", Name: "m"} }
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no target", func(c *Config) { c.Targets = nil }, "--target"},
		{"nine targets", func(c *Config) { c.Targets = strings.Split("a,b,c,d,e,f,g,h,i", ",") }, "at most 8"},
		{"probe interval", func(c *Config) { c.ProbeInterval = units.Duration(5 * time.Millisecond) }, "--probe-interval"},
		{"deprecated rate", func(c *Config) { c.ProbeInterval, c.Rate = 0, 101 }, "--probe-interval: want 10ms to 1s (100 to 1 probes/s per stream), got 101 probes/s"},
		{"timeout", func(c *Config) { c.Timeout = units.Duration(time.Hour) }, "--timeout"},
		{"dscp", func(c *Config) { c.DSCP = []string{"ef", "nope"} }, "--dscp"},
		{"dscp twice", func(c *Config) { c.DSCP = []string{"ef", "46"} }, "twice"},
		{"up without interface", func(c *Config) { c.Up = "10M" }, "--up-link-rate"},
		{"bad up", func(c *Config) { c.Interface, c.Up = "eth0", "fast" }, "--up-link-rate"},
		{"bad interface", func(c *Config) { c.Interface = "../etc" }, "--interface"},
		{"bad store", func(c *Config) { c.Store = "mysql://x" }, "--store"},
		{"short keep", func(c *Config) { c.KeepRaw = units.Duration(time.Minute) }, "--keep-raw"},
		{"listen", func(c *Config) { c.Listen = "9851" }, "--listen"},
		{"label", func(c *Config) { c.Labels = map[string]string{"": "x"} }, "--label"},
		{"profiles missing", func(c *Config) { c.Profiles = filepath.Join(dir, "none.json") }, "--profiles"},
		{"profiles bad", func(c *Config) { c.Profiles = badProfiles }, "--profiles"},
		{"target scheme", func(c *Config) { c.Targets = []string{"ftp://x"} }, "--target"},
		{"target port", func(c *Config) { c.Targets = []string{"stamp://h:99999"} }, "--target"},
		{"tcp port", func(c *Config) { c.TCPPort = 70000 }, "--tcp"},
		{"too many streams", func(c *Config) {
			c.Targets = strings.Split("a,b,c,d,e,f,g,h", ",")
			c.ICMP, c.TCPPort, c.DSCP = true, 80, []string{"ef", "be"}
		}, "at most 32"},
		{"duplicate stream", func(c *Config) { c.Targets = []string{"stamp://h", "stamp://h:862"} }, "twice"},
	}
	for _, tc := range cases {
		c := ok()
		tc.mod(&c)
		c.Defaults()
		_, err := c.Validate()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q, want one line with %q", tc.name, err, tc.want)
		}
	}
	c := ok()
	c.Defaults()
	if _, err := c.Validate(); err != nil {
		t.Fatalf("the base config: %v", err)
	}
}

func TestParseConfigStrict(t *testing.T) {
	for _, in := range []string{
		`{"targets": ["a"], "rat": 5}`,
		`{"targets": ["a"]} {}`,
		`{"targets": "a"}`,
		`{"timeout": 5}`,
		`{"keep_raw": "30 days"}`,
		`{"timeout": "-1s"}`,
		`{`,
		`{"name": "` + strings.Repeat("x", MaxConfigBytes) + `"}`,
	} {
		if _, err := ParseConfig(strings.NewReader(in)); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%.60s: error %v, want one line", in, err)
		}
	}
	c, err := ParseConfig(strings.NewReader(`{"targets": ["a"], "keep_raw": "7d", "keep_rollups": "forever", "timeout": "500ms"}`))
	if err != nil || c.KeepRaw != units.Duration(7*24*time.Hour) || c.KeepRoll != units.Forever || c.Timeout != units.Duration(500*time.Millisecond) {
		t.Fatalf("%+v %v", c, err)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add(`{"targets": ["stamp://127.0.0.1"], "rate": 10, "dscp": ["ef"], "keep_raw": "30d"}`)
	f.Add(`{"targets": ["stamp://127.0.0.1"], "probe_interval": "20ms", "up_link_rate": "20M", "down": "100M"}`)
	f.Add(`{"targets": ["http://[::1]:8080"], "labels": {"isp": "x"}, "tcp_port": 443, "icmp": true}`)
	f.Add(`{"timeout": "1y"}`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig(strings.NewReader(s))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		c.Profiles = "" // no file reads from fuzzed input
		c.Defaults()
		if p, err := c.Validate(); err == nil && len(p.Streams) > 32 {
			t.Fatalf("%d streams", len(p.Streams))
		}
	})
}

// TestConfigRenamedKeys: the keys renamed with the flags (rate, up, down)
// are still read, moved to probe_interval, up_link_rate and
// down_link_rate with a note each; both spellings of one is an error.
func TestConfigRenamedKeys(t *testing.T) {
	c, err := ParseConfig(strings.NewReader(`{"targets": ["stamp://198.18.0.1"], "rate": 20, "up": "20M", "down": "100M"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Up != "20M" || c.Down != "100M" || c.OldUp != "" || c.OldDown != "" || len(c.Deprecated) != 3 {
		t.Fatalf("%+v", c)
	}
	if !strings.Contains(strings.Join(c.Deprecated, "\n"), `"probe_interval": "50ms"`) {
		t.Errorf("notes %q do not give the interval", c.Deprecated)
	}
	c.Store, c.Name, c.Interface = ":memory:", "m", "eth0"
	c.Defaults()
	p, err := c.Validate()
	if err != nil || p.ProbeInterval != units.Duration(50*time.Millisecond) || p.Rate != 20 || p.UpBps != 20e6 || p.DownBps != 100e6 {
		t.Fatalf("%+v, %v", p, err)
	}
	c, err = ParseConfig(strings.NewReader(`{"targets": ["a"], "probe_interval": "100ms", "up_link_rate": "1M"}`))
	if err != nil || len(c.Deprecated) != 0 || c.ProbeInterval != units.Duration(100*time.Millisecond) || c.Up != "1M" {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, js := range []string{`{"rate": 10, "probe_interval": "100ms"}`, `{"up": "1M", "up_link_rate": "2M"}`, `{"down": "1M", "down_link_rate": "2M"}`} {
		if _, err := ParseConfig(strings.NewReader(js)); err == nil || !strings.Contains(err.Error(), "deprecated spelling") {
			t.Errorf("%s: %v", js, err)
		}
	}
}
