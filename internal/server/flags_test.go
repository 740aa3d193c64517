package server

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFlagsCheck: serve's settings are checked before anything opens, each
// bad one a line led by its flag; good ones make the Config.
func TestFlagsCheck(t *testing.T) {
	good := func(given ...string) Flags {
		return Flags{Config: Config{Addr: ":8080", UDPMaxRate: 20000, HeaderTimeout: 10 * time.Second},
			MaxBytes: "off", PerIPRate: "60", UDPBitrate: "200M", WebRTCPort: "0", Iperf3Port: "5201", Records: true,
			Given: func(f string) bool { return strings.Contains(" "+strings.Join(given, " ")+" ", " "+f+" ") }}
	}
	for _, c := range []struct {
		name string
		f    Flags
		edit func(*Flags)
		want string
	}{
		{"timeout", good("header-timeout"), func(f *Flags) { f.HeaderTimeout = 0 }, "--header-timeout must be positive, got 0s"},
		{"conns", good("max-conns"), nil, "--max-conns must be ≥ 1, got 0"},
		{"fail-rate", good("token-fail-rate"), func(f *Flags) { f.TokenFailRate = -1 }, "--token-fail-rate must be a positive number"},
		{"bytes", good(), func(f *Flags) { f.MaxBytes = "lots" }, "--max-bytes: "},
		{"servers", good(), func(f *Flags) { f.ServersFile = filepath.Join(t.TempDir(), "none") }, "--servers: "},
		{"udp-rate", good(), func(f *Flags) { f.UDPMaxRate = 0 }, "--udp-max-rate: want 0 < probes/s ≤ 10000000, got 0"},
		{"cert", good(), func(f *Flags) { f.CertFile = "c.pem" }, "--cert and --key go together"},
		{"store+db", good("store", "db"), nil, "--store and --db both name where past results go: give one"},
		{"store", good("store"), func(f *Flags) { f.Store = "mysql://x" }, "--store: "},
		{"tls-dir", good("tls-dir"), nil, "--tls-dir goes with --tls self-signed"},
		{"tls", good(), func(f *Flags) { f.TLSMode = "acme" }, `--tls: want self-signed, got "acme"`},
		{"tls+cert", good(), func(f *Flags) { f.TLSMode, f.CertFile, f.KeyFile = "self-signed", "c", "k" }, "--tls self-signed and --cert/--key both name a certificate: give one"},
		{"iperf3", good(), func(f *Flags) { f.Iperf3Port = "70000" }, "--iperf3-port: "},
	} {
		f := c.f
		if c.edit != nil {
			c.edit(&f)
		}
		if _, err := f.Check(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	f := good("store", "max-conns")
	f.Store, f.MaxConns, f.Records, f.PerIPRate = ":memory:", 100, false, "off"
	cfg, err := f.Check()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HistoryDB != ":memory:" || cfg.MaxConns != 100 || !cfg.NoServerRecords || cfg.PerIPPerMinute != -1 || cfg.Iperf3Addr != ":5201" {
		t.Errorf("config %+v", cfg)
	}
	if cfg, _ := good().Check(); cfg.HistoryDB != "" || cfg.MaxConns != 0 {
		t.Errorf("defaults: history %q, max conns %d", cfg.HistoryDB, cfg.MaxConns)
	}
}

// TestFlagsPrepare: a checked config gets its logger and, without a
// store given, the default one's path, or memory without a cache
// directory.
func TestFlagsPrepare(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := Config{}
	var log strings.Builder
	if err := (Flags{}).Prepare(&cfg, &log); err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil || filepath.Base(cfg.HistoryDB) != "results.db" || cfg.CertFile != "" {
		t.Errorf("prepared %+v", cfg)
	}
	cfg = Config{HistoryDB: ":memory:"}
	if err := (Flags{TLSMode: "self-signed", TLSDir: t.TempDir()}).Prepare(&cfg, &log); err != nil {
		t.Fatal(err)
	}
	if cfg.HistoryDB != ":memory:" || cfg.CertFile == "" || !strings.Contains(log.String(), "SHA-256 fingerprint") {
		t.Errorf("self-signed: %+v; log %q", cfg, log.String())
	}
}
