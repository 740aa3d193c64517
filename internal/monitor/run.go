package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sonde-project/sonde/internal/alert"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

// Override sets the fields of c (a config file's) whose flag was given
// (given(flag)) to the flags' values: flags given override the file.
// ProbeInterval, Timeout, Labels and the retentions are left to the
// caller, which reads them after Defaults.
func (c *Config) Override(flags Config, given func(flag string) bool) {
	for _, o := range []struct {
		flag string
		set  func()
	}{
		{"target", func() { c.Targets = flags.Targets }},
		{"icmp", func() { c.ICMP = flags.ICMP }},
		{"tcp", func() { c.TCPPort = flags.TCPPort }},
		{"dscp", func() { c.DSCP = flags.DSCP }},
		{"interface", func() { c.Interface = flags.Interface }},
		{"counters", func() { c.Counters = flags.Counters }},
		{"up-link-rate", func() { c.Up = flags.Up }},
		{"down-link-rate", func() { c.Down = flags.Down }},
		{"store", func() { c.Store = flags.Store }},
		{"listen", func() { c.Listen = flags.Listen }},
		{"name", func() { c.Name = flags.Name }},
		{"profiles", func() { c.Profiles = flags.Profiles }},
		{"token", func() { c.Token = flags.Token }},
		{"ship", func() { c.Ship = flags.Ship }},
		{"ship-token", func() { c.ShipToken = flags.ShipToken }},
		{"ship-raw", func() { c.ShipRaw = flags.ShipRaw }},
	} {
		if given(o.flag) {
			o.set()
		}
	}
}

// Run is `sonde monitor run` once its plan is valid: it opens the store
// (making the default state directory when root uses the default store),
// starts the daemon and runs it until ctx ends. A store that is there but
// fails (unreachable, a newer schema) is a failure at start, not a
// ConfigError.
func Run(ctx context.Context, plan *Plan, logw io.Writer, version string) error {
	loc, _ := store.ParseURL(plan.Store)
	if (loc.Backend == store.Journal || loc.Backend == store.SQLite && loc.Path != store.Memory) && os.Geteuid() == 0 && plan.Store == DefaultStore() {
		// The default state directory (systemd's StateDirectory makes it too).
		if err := os.MkdirAll(filepath.Dir(filepath.Clean(loc.Path)), 0o750); err != nil {
			return configErr(fmt.Errorf("--store: %w", err))
		}
	}
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	st, err := store.Open(octx, plan.Store, store.Options{CacheKiB: StoreCacheKiB})
	cancel()
	if err != nil {
		return err
	}
	defer st.Close()
	d, err := New(ctx, plan, Options{Store: st, Log: logw, Version: version})
	if err != nil {
		return err
	}
	if a := d.Addr(); a != nil {
		fmt.Fprintf(logw, "monitor: serving /metrics, /status and /healthz on http://%s\n", a)
	}
	return d.Run(ctx)
}

// MaxStatusBytes bounds a daemon's /status reply that FetchStatus reads.
const MaxStatusBytes = 4 << 20

// FetchStatus reads the status of the daemon serving at listen (host:port,
// its /status endpoint), within 5 s: the reply as sent, and parsed.
func FetchStatus(ctx context.Context, listen string) ([]byte, *Status, error) {
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return nil, nil, configErr(fmt.Errorf("--listen %q: want host:port", listen))
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+listen+"/status", nil)
	if err != nil {
		return nil, nil, configErr(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("no monitor answers at %s: %w", listen, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("monitor at %s: %s", listen, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxStatusBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("monitor at %s: %w", listen, err)
	}
	var st Status
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, nil, fmt.Errorf("monitor at %s: its status does not parse: %w", listen, err)
	}
	return body, &st, nil
}

// LoadAlertRules reads the alert rules of a daemon's config file (its
// "alerts" section, checked against the requirement profiles its
// "profiles" file names), for `sonde monitor alerts replay`; "" is the
// default rules. Every error is about the files: a usage error.
func LoadAlertRules(path string) (alert.Config, error) {
	var ac alert.Config
	var profiles []model.RequirementProfile
	if path != "" {
		c, err := LoadConfig(path)
		if err != nil {
			return ac, err
		}
		if c.Alerts != nil {
			ac = *c.Alerts
		}
		if c.Profiles != "" {
			if profiles, err = reliability.ReadProfilesFile(c.Profiles); err != nil {
				return ac, fmt.Errorf("%s: profiles %s: %w", path, c.Profiles, err)
			}
		}
	}
	return ac, ac.Check(profiles)
}
