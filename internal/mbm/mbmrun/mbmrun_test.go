package mbmrun

import (
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/mbm/tcprun"
	"github.com/sonde-project/sonde/internal/model"
)

func TestParseTests(t *testing.T) {
	got, err := ParseTests(" 8.1.1, 8.4,8.1.1 ", ModeUDP)
	if err != nil || strings.Join(got, " ") != "8.1.1 8.4" {
		t.Errorf("got %v, %v", got, err)
	}
	if got, err := ParseTests("all", ModeTCP); err != nil || strings.Join(got, " ") != strings.Join(tcprun.Tests, " ") {
		t.Errorf("all tcp: %v, %v", got, err)
	}
	for _, bad := range []string{"8.2.1", "", " , "} {
		if _, err := ParseTests(bad, ModeTCP); err == nil {
			t.Errorf("%q accepted for tcp", bad)
		}
	}
}

// TestSplit: auto gives TCP the tests it runs and UDP the rest, in order.
func TestSplit(t *testing.T) {
	tcp, udp := split(Config{Mode: ModeAuto, Tests: []string{"8.1.1", "8.2.1", "8.4", "8.3.1"}})
	if strings.Join(tcp, " ") != "8.1.1 8.4" || strings.Join(udp, " ") != "8.2.1 8.3.1" {
		t.Errorf("tcp %v udp %v", tcp, udp)
	}
	tcp, udp = split(Config{Mode: ModeUDP, Tests: []string{"8.1.1"}})
	if len(tcp) != 0 || len(udp) != 1 {
		t.Errorf("udp mode: tcp %v udp %v", tcp, udp)
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Mode: ModeTCP, Tests: []string{"8.1.1"}, Derate: 1, MinRate: 0.9, Burst: 10}
	if err := Validate(ok); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"--mode":     func(c *Config) { c.Mode = "quic" },
		"--derate":   func(c *Config) { c.Derate = 0 },
		"--min-rate": func(c *Config) { c.MinRate = 1.5 },
		"--burst":    func(c *Config) { c.Burst = 10001 },
		"--subpath":  func(c *Config) { c.Subpath = strings.Repeat("x", 65) },
		"--tests":    func(c *Config) { c.Tests = nil },
	} {
		c := ok
		mut(&c)
		if err := Validate(c); err == nil || !strings.HasPrefix(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestWorst(t *testing.T) {
	ts := []model.MBMTest{{ID: "a", Verdict: model.MBMPass}, {ID: "b", Verdict: model.MBMFail}, {ID: "c", Verdict: model.MBMError}}
	if v, x := Worst(ts); v != model.MBMError || x.ID != "c" {
		t.Errorf("%s %v", v, x)
	}
	if v, _ := Worst(ts[:2]); v != model.MBMFail {
		t.Errorf("%s", v)
	}
	if v, _ := Worst(ts[:1]); v != "" {
		t.Errorf("%s", v)
	}
}

func TestRecordLab(t *testing.T) {
	var r model.MBMResult
	RecordLab(&r, nil)
	if r.Env != nil || r.Truth != nil {
		t.Fatal("recorded without a lab")
	}
	RecordLab(&r, &model.GroundTruth{Profile: "adsl"})
	if r.Env.LabProfile != "adsl" || r.Truth.Profile != "adsl" {
		t.Fatalf("%+v %+v", r.Env, r.Truth)
	}
}

// TestSetTests: the mode is checked before the list, whose errors name
// --tests.
func TestSetTests(t *testing.T) {
	for _, c := range []struct{ mode, list, want string }{
		{"quic", "8.1.1", `--mode: want udp, tcp or auto, got "quic"`},
		{ModeTCP, "8.2.1", `--tests: "8.2.1" is not a test of the tcp mode`},
		{ModeUDP, " , ", "--tests: no test given"},
	} {
		cfg := Config{Mode: c.mode}
		if err := cfg.SetTests(c.list); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want %q", c.mode, c.list, err, c.want)
		}
	}
	cfg := Config{Mode: ModeAuto}
	if err := cfg.SetTests("8.1.1,8.2.1"); err != nil || strings.Join(cfg.Tests, " ") != "8.1.1 8.2.1" {
		t.Errorf("auto: %v %v", cfg.Tests, err)
	}
}
