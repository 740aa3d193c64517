package server

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/sonde-project/sonde/internal/store"
)

// Flags are `sonde serve`'s settings as a user writes them: Config's typed
// fields and the ones given as text (limits with units or "off", ports,
// files), named by their flags in the errors. Given tells which flags the
// user gave (a zero given for a limit whose zero means the default is an
// error; --max-conns given is not lowered to the file descriptor limit).
type Flags struct {
	Config
	MaxBytes, PerIPRate, UDPBitrate, WebRTCPort string
	// Iperf3Port is a port on Addr's host, or off.
	Iperf3Port string
	// Store is where past results go (--store, or its old spelling --db):
	// given neither, Config says nothing and the caller takes
	// DefaultHistoryPath.
	Store       string
	ServersFile string
	// TLSMode is "" or self-signed (the certificate kept in TLSDir;
	// UseSelfSigned makes it the Config's once Check has passed).
	TLSMode, TLSDir string
	MaxConns        int
	Records         bool
	Verbose         bool // log every session and stream error (Info), else warnings
	Given           func(flag string) bool
}

// Check checks every setting before anything is opened or made, and
// returns the server's Config (HistoryDB empty for the default). Each
// error is one line, the user's to fix (a usage error).
func (f Flags) Check() (Config, error) {
	cfg := f.Config
	if f.Given("max-conns") {
		cfg.MaxConns = f.MaxConns
	}
	if err := f.checkGiven(cfg); err != nil {
		return cfg, err
	}
	if err := ParseLimits(&cfg, f.MaxBytes, f.PerIPRate, f.UDPBitrate, f.WebRTCPort); err != nil {
		return cfg, err
	}
	if f.ServersFile != "" {
		list, err := ReadServerList(f.ServersFile)
		if err != nil {
			return cfg, err
		}
		cfg.Servers = list
	}
	if !(cfg.UDPMaxRate > 0 && cfg.UDPMaxRate <= 1e7) {
		return cfg, fmt.Errorf("--udp-max-rate: want 0 < probes/s ≤ 10000000, got %v", cfg.UDPMaxRate)
	}
	cfg.NoServerRecords = !f.Records
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	// --db PATH is the old spelling of --store PATH (a SQLite path is a
	// store URL).
	switch {
	case f.Given("store") && f.Given("db"):
		return cfg, fmt.Errorf("--store and --db both name where past results go: give one")
	case f.Given("store"), f.Given("db"):
		// Checked before the server starts: a wrong URL is a usage
		// error, not a failure after the listeners are up.
		if _, err := store.ParseFlag("--store", f.Store); err != nil {
			return cfg, err
		}
		cfg.HistoryDB = f.Store
	}
	if err := f.checkTLS(cfg); err != nil {
		return cfg, err
	}
	var err error
	cfg.Iperf3Addr, err = Iperf3Addr(cfg.Addr, f.Iperf3Port)
	return cfg, err
}

// Prepare completes a Config that Check returned with what it takes of
// this host, telling log: the logger (to log), the default store's path
// (DefaultHistoryPath) when none was given, and the self-signed
// certificate of --tls self-signed (UseSelfSigned).
func (f Flags) Prepare(cfg *Config, log io.Writer) error {
	level := slog.LevelWarn
	if f.Verbose {
		level = slog.LevelInfo
	}
	cfg.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: level}))
	if cfg.HistoryDB == "" {
		var err error
		if cfg.HistoryDB, err = DefaultHistoryPath(log); err != nil {
			return err
		}
	}
	if f.TLSMode != "" {
		return UseSelfSigned(cfg, f.TLSDir, log)
	}
	return nil
}

// checkGiven rejects a zero or negative value given for a flag whose zero
// would otherwise silently mean the default.
func (f Flags) checkGiven(cfg Config) error {
	for name, v := range map[string]time.Duration{
		"header-timeout": cfg.HeaderTimeout, "body-timeout": cfg.BodyTimeout,
		"write-timeout": cfg.WriteTimeout, "idle-timeout": cfg.IdleTimeout,
	} {
		if f.Given(name) && v <= 0 {
			return fmt.Errorf("--%s must be positive, got %v", name, v)
		}
	}
	for name, v := range map[string]int{
		"max-conns-per-ip": cfg.MaxConnsPerIP, "max-conns": cfg.MaxConns, "token-fail-burst": cfg.TokenFailBurst,
	} {
		if f.Given(name) && v <= 0 {
			return fmt.Errorf("--%s must be ≥ 1, got %d", name, v)
		}
	}
	if r := cfg.TokenFailRate; f.Given("token-fail-rate") && !(r > 0 && r <= 1e6) {
		return fmt.Errorf("--token-fail-rate must be a positive number of attempts per second, got %v", r)
	}
	return nil
}

// checkTLS checks --tls and --tls-dir against the certificate cfg names.
func (f Flags) checkTLS(cfg Config) error {
	switch f.TLSMode {
	case "":
		if f.Given("tls-dir") {
			return fmt.Errorf("--tls-dir goes with --tls self-signed")
		}
		return nil
	case "self-signed":
	default:
		return fmt.Errorf("--tls: want self-signed, got %q", f.TLSMode)
	}
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		return fmt.Errorf("--tls self-signed and --cert/--key both name a certificate: give one")
	}
	if _, err := os.UserCacheDir(); f.TLSDir == "" && err != nil {
		return fmt.Errorf("--tls self-signed: no user cache directory (%v): give --tls-dir", err)
	}
	return nil
}
