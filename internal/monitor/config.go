package monitor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sonde-project/sonde/internal/alert"
	"github.com/sonde-project/sonde/internal/counters"
	"github.com/sonde-project/sonde/internal/dscp"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// Bounds of what a flag or the config file may ask for.
const (
	MaxTargets     = 8
	MaxConfigBytes = 64 << 10
	DefaultListen  = "127.0.0.1:9851"
)

// Config is the daemon's configuration: the flags of `sonde monitor run`
// and the JSON of --config FILE (same names, snake_case; flags override
// the file). Durations are strings: "2s", "30d", "5y".
type Config struct {
	Targets []string `json:"targets"` // sonde servers (host:port or URL) or stamp://host[:port] reflectors
	// ProbeInterval is the time between a stream's probes, 10ms to 1s
	// (default 100ms: 10 probes/s), the --probe-interval of sonde test and
	// sonde udp.
	ProbeInterval units.Duration `json:"probe_interval"`
	// Rate is probes/s per stream, which the probers take: Validate sets
	// the plan's from ProbeInterval. Given (the deprecated --rate and
	// config key "rate") without ProbeInterval, it sets the interval.
	Rate      float64           `json:"rate,omitempty"`
	Timeout   units.Duration    `json:"timeout"`        // a probe unanswered after it is lost (default 2s)
	ICMP      bool              `json:"icmp"`           // also ICMP echo to each target's host
	TCPPort   int               `json:"tcp_port"`       // also TCP connect to each target's host on this port (0: none)
	DSCP      []string          `json:"dscp"`           // classes probed side by side (default: be only)
	Interface string            `json:"interface"`      // access interface whose counters label the load state
	Counters  string            `json:"counters"`       // or the access link's counters on another box: snmp://… or node-exporter://… (internal/counters)
	Up        string            `json:"up_link_rate"`   // uplink capacity (e.g. "20M"; empty: learnt), --up-link-rate as in sonde test
	Down      string            `json:"down_link_rate"` // downlink capacity, --down-link-rate
	Store     string            `json:"store"`          // store URL (default DefaultStore())
	KeepRaw   units.Duration    `json:"keep_raw"`       // raw probes and counters (default 30d; "forever")
	KeepRoll  units.Duration    `json:"keep_rollups"`   // per-minute rollups (default 5y; "forever")
	Listen    string            `json:"listen"`         // HTTP endpoints (default 127.0.0.1:9851; "off": none)
	Name      string            `json:"name"`           // the monitor's identity in the store (default the host name)
	Labels    map[string]string `json:"labels"`         // e.g. isp, access
	Profiles  string            `json:"profiles"`       // requirement profile file (default the smart-grid table)
	Token     string            `json:"token"`          // bearer token for private sonde servers
	Alerts    *alert.Config     `json:"alerts"`         // alert rules and webhook (absent: DefaultRules, log only)
	Ship      string            `json:"ship"`           // fleet store URL the shipper sends to (empty: none; docs/fleet.md)
	ShipToken string            `json:"ship_token"`     // the monitor's token in the fleet store
	ShipRaw   bool              `json:"ship_raw"`       // also ship raw probe samples and counters

	// The deprecated keys, read for one release (ParseConfig moves them
	// to their replacements and says so in Deprecated).
	OldUp   string `json:"up,omitempty"`
	OldDown string `json:"down,omitempty"`
	// Deprecated lists, one line each, the deprecated keys a config file
	// used and what replaces them, for the daemon to print.
	Deprecated []string `json:"-"`
}

// renamedKeys are the config keys renamed with the flags (one name, one
// meaning: --rate is a bit rate elsewhere, --up and --down are link
// specifications in sonde emulate): old key, new key, and where the old
// and new values are.
func (c *Config) renamedKeys() []struct {
	old, new string
	from, to *string
} {
	return []struct {
		old, new string
		from, to *string
	}{{"up", "up_link_rate", &c.OldUp, &c.Up}, {"down", "down_link_rate", &c.OldDown, &c.Down}}
}

// moveDeprecated moves the deprecated keys' values to their replacements,
// noting each in c.Deprecated; a key given in both spellings is an error.
func (c *Config) moveDeprecated() error {
	for _, k := range c.renamedKeys() {
		if *k.from == "" {
			continue
		}
		if *k.to != "" {
			return fmt.Errorf("config: %q and %q both given: %q is the deprecated spelling, keep %q", k.old, k.new, k.old, k.new)
		}
		*k.to, *k.from = *k.from, ""
		c.Deprecated = append(c.Deprecated, fmt.Sprintf("config key %q is deprecated, use %q", k.old, k.new))
	}
	if c.Rate != 0 {
		if c.ProbeInterval != 0 {
			return errors.New(`config: "rate" and "probe_interval" both given: "rate" (probes/s) is the deprecated spelling, keep "probe_interval"`)
		}
		c.Deprecated = append(c.Deprecated, fmt.Sprintf(`config key "rate" is deprecated, use "probe_interval" (a duration: "rate": %g is "probe_interval": %q)`,
			c.Rate, rateInterval(c.Rate).String()))
	}
	return nil
}

// rateInterval is the interval of rate probes/s (-1 for a rate that is
// not positive, which Validate refuses).
func rateInterval(rate float64) time.Duration {
	if !(rate > 0) {
		return -1
	}
	return time.Duration(float64(time.Second) / rate)
}

// ParseConfig reads a config file's content strictly: at most
// MaxConfigBytes, no unknown fields, no trailing data. Each error is one
// line.
func ParseConfig(r io.Reader) (Config, error) {
	var c Config
	data, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if len(data) > MaxConfigBytes {
		return c, fmt.Errorf("config: over the %d-byte limit", MaxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return c, fmt.Errorf("config: JSON syntax error at byte %d: %v", se.Offset, se)
		case errors.As(err, &te):
			return c, fmt.Errorf("config: field %q: want a %s", te.Field, te.Type)
		}
		return c, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return c, errors.New("config: trailing data after the JSON object")
	}
	return c, c.moveDeprecated()
}

// LoadConfig reads a config file (ParseConfig).
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, err := ParseConfig(f)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// DefaultStore is where the store goes when --store is not given: the
// state directory systemd gives the unit (/var/lib/sonde) when running as
// root, else the working directory; a SQLite file, or a journal in the
// monitor build (which has no SQLite).
func DefaultStore() string {
	root := os.Geteuid() == 0
	switch {
	case !store.HaveSQLite && root:
		return "journal:/var/lib/sonde/journal"
	case !store.HaveSQLite:
		return "journal:sonde-monitor.journal"
	case root:
		return "/var/lib/sonde/monitor.db"
	}
	return "sonde-monitor.db"
}

// Defaults fills the unset fields.
func (c *Config) Defaults() {
	if c.ProbeInterval == 0 && c.Rate == 0 {
		c.ProbeInterval = units.Duration(rateInterval(probe.DefaultRate))
	}
	if c.Timeout == 0 {
		c.Timeout = units.Duration(probe.DefaultTimeout)
	}
	if len(c.DSCP) == 0 {
		c.DSCP = []string{"be"}
	}
	if c.Store == "" {
		c.Store = DefaultStore()
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.KeepRaw == 0 {
		c.KeepRaw = units.Duration(store.DefaultRetention.Raw)
	}
	if c.KeepRoll == 0 {
		c.KeepRoll = units.Duration(store.DefaultRetention.Rollups)
	}
	if c.Name == "" {
		c.Name, _ = os.Hostname()
		if c.Name == "" {
			c.Name = "monitor"
		}
	}
}

// Plan is a validated configuration: the streams to probe and what the
// daemon needs beside.
type Plan struct {
	Config
	Streams  []model.MonitorStream
	Probes   []probe.StreamConfig // Sessions unset: the daemon opens them
	Servers  []string             // per stream: the sonde server whose monitor session carries it ("" for others)
	UpBps    float64
	DownBps  float64
	Counters *counters.Spec             // parsed Config.Counters (nil: none)
	Profiles []model.RequirementProfile // nil: the smart-grid table
	Alerts   alert.Config               // checked, defaults filled
}

// LoadSource names where the load states come from: the interface, or
// the remote counter source (without its secrets); "" for none.
func (p *Plan) LoadSource() string {
	if p.Counters != nil {
		return p.Counters.String()
	}
	return p.Interface
}

// Validate checks every field (after Defaults) and builds the streams.
// Each error is one line naming the field. It touches the system only to
// read the profile file.
func (c Config) Validate() (*Plan, error) {
	p := &Plan{Config: c}
	if len(c.Targets) == 0 {
		return nil, errors.New("--target: give at least one target (a sonde server host:port or URL, or stamp://host:port)")
	}
	if len(c.Targets) > MaxTargets {
		return nil, fmt.Errorf("--target: %d targets, at most %d", len(c.Targets), MaxTargets)
	}
	iv, given := time.Duration(c.ProbeInterval), time.Duration(c.ProbeInterval).String()
	if c.ProbeInterval == 0 && c.Rate != 0 { // the deprecated rate
		iv, given = rateInterval(c.Rate), fmt.Sprintf("%g probes/s", c.Rate)
	}
	if minIv, maxIv := rateInterval(probe.MaxRate), rateInterval(probe.MinRate); iv < minIv || iv > maxIv {
		return nil, fmt.Errorf("--probe-interval: want %s to %s (%g to %g probes/s per stream), got %s", minIv, maxIv, probe.MaxRate, probe.MinRate, given)
	}
	c.ProbeInterval, c.Rate = units.Duration(iv), float64(time.Second)/float64(iv)
	p.Config = c
	if t := time.Duration(c.Timeout); t < time.Millisecond || t > probe.MaxTimeout {
		return nil, fmt.Errorf("--timeout: want 1ms to %s, got %s", probe.MaxTimeout, t)
	}
	if c.TCPPort < 0 || c.TCPPort > 65535 {
		return nil, fmt.Errorf("--tcp: port %d out of range 1-65535", c.TCPPort)
	}
	var codes []int
	seen := map[int]bool{}
	if len(c.DSCP) > 8 {
		return nil, fmt.Errorf("--dscp: %d classes, at most 8", len(c.DSCP))
	}
	for _, s := range c.DSCP {
		v, err := dscp.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("--dscp: %w", err)
		}
		if seen[v] {
			return nil, fmt.Errorf("--dscp: class %q given twice", s)
		}
		seen[v] = true
		codes = append(codes, v)
	}
	if c.Up != "" || c.Down != "" {
		if c.Interface == "" && c.Counters == "" {
			return nil, errors.New("--up-link-rate/--down-link-rate: they are the capacities of --interface or --counters, neither of which is given")
		}
	}
	if c.Counters != "" {
		if c.Interface != "" {
			return nil, errors.New("--counters: give either --interface (a local interface) or --counters (another box's), not both")
		}
		spec, err := counters.Parse(c.Counters)
		if err != nil {
			return nil, fmt.Errorf("--counters: %s", strings.TrimPrefix(err.Error(), "counters: "))
		}
		p.Counters = &spec
	}
	var err error
	if c.Up != "" {
		if p.UpBps, err = units.ParseRate(c.Up); err != nil || p.UpBps <= 0 {
			return nil, fmt.Errorf("--up-link-rate: invalid rate %q: want e.g. 20M", c.Up)
		}
	}
	if c.Down != "" {
		if p.DownBps, err = units.ParseRate(c.Down); err != nil || p.DownBps <= 0 {
			return nil, fmt.Errorf("--down-link-rate: invalid rate %q: want e.g. 100M", c.Down)
		}
	}
	if c.Interface != "" && (len(c.Interface) > 15 || strings.ContainsAny(c.Interface, "/ \x00") || c.Interface == "." || c.Interface == "..") {
		return nil, fmt.Errorf("--interface: %q is not an interface name", c.Interface)
	}
	if _, err := store.ParseURL(c.Store); err != nil {
		return nil, fmt.Errorf("--store: %s", strings.TrimPrefix(err.Error(), "store: "))
	}
	if (c.KeepRaw < 0 && c.KeepRaw != units.Forever) || (c.KeepRoll < 0 && c.KeepRoll != units.Forever) {
		return nil, errors.New("--keep-raw/--keep-rollups: want a positive age or forever")
	}
	if c.KeepRaw > 0 && c.KeepRaw < units.Duration(time.Hour) {
		return nil, fmt.Errorf("--keep-raw: %s is under an hour: rows would go before their minute is rolled up", time.Duration(c.KeepRaw))
	}
	if c.KeepRoll > 0 && c.KeepRoll < units.Duration(24*time.Hour) {
		return nil, fmt.Errorf("--keep-rollups: %s is under a day", time.Duration(c.KeepRoll))
	}
	if err := c.checkShip(); err != nil {
		return nil, err
	}
	if c.Listen != "off" {
		if _, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
			return nil, fmt.Errorf("--listen: %q: want host:port (e.g. 127.0.0.1:9851) or off", c.Listen)
		}
	}
	if err := checkText("--name", c.Name, store.MaxNameLen); err != nil {
		return nil, err
	}
	if len(c.Labels) > store.MaxLabels {
		return nil, fmt.Errorf("--label: %d labels, at most %d", len(c.Labels), store.MaxLabels)
	}
	for k, v := range c.Labels {
		if err := checkText("--label key", k, store.MaxLabelLen); err != nil {
			return nil, err
		}
		if len(v) > store.MaxLabelLen {
			return nil, fmt.Errorf("--label %s: value over %d bytes", k, store.MaxLabelLen)
		}
	}
	if c.Profiles != "" {
		data, err := readBounded(c.Profiles, reliability.MaxProfileFile)
		if err != nil {
			return nil, fmt.Errorf("--profiles: %w", err)
		}
		if p.Profiles, err = reliability.ParseProfiles(data); err != nil {
			return nil, fmt.Errorf("--profiles %s: %w", c.Profiles, err)
		}
	}
	names := map[string]bool{}
	for _, t := range c.Targets {
		tg, err := parseTarget(t)
		if err != nil {
			return nil, fmt.Errorf("--target %q: %w", t, err)
		}
		kinds := []model.ProbeKind{model.ProbeSTAMP}
		if c.ICMP {
			kinds = append(kinds, model.ProbeICMP)
		}
		if c.TCPPort > 0 {
			kinds = append(kinds, model.ProbeTCP)
		}
		for _, k := range kinds {
			for i, code := range codes {
				st := model.MonitorStream{Kind: k, DSCP: code}
				sc := probe.StreamConfig{Kind: k, DSCP: code, Rate: c.Rate, Timeout: time.Duration(c.Timeout)}
				server := ""
				switch k {
				case model.ProbeSTAMP:
					st.Target = tg.addr
					if tg.server {
						server = t
					} else {
						sc.Target = tg.addr
					}
				case model.ProbeICMP:
					st.Target, sc.Target = tg.host, tg.host
				case model.ProbeTCP:
					st.Target = net.JoinHostPort(tg.host, strconv.Itoa(c.TCPPort))
					sc.Target = st.Target
				}
				st.Name = st.Target + "/" + string(k)
				if len(codes) > 1 || code != 0 {
					st.Name += "/" + strings.ToLower(c.DSCP[i])
				}
				if names[st.Name] {
					return nil, fmt.Errorf("--target %q: stream %s configured twice", t, st.Name)
				}
				names[st.Name] = true
				p.Streams = append(p.Streams, st)
				p.Probes = append(p.Probes, sc)
				p.Servers = append(p.Servers, server)
			}
		}
	}
	if len(p.Streams) > probe.MaxStreams {
		return nil, fmt.Errorf("%d streams (targets × kinds × DSCP classes), at most %d", len(p.Streams), probe.MaxStreams)
	}
	if err := p.checkAlerts(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkShip checks the shipping settings (docs/fleet.md, "Shipping").
func (c Config) checkShip() error {
	if c.Ship == "" {
		if c.ShipToken != "" || c.ShipRaw {
			return errors.New("--ship-token/--ship-raw: they go with --ship URL, which is not given")
		}
		return nil
	}
	loc, err := store.ParseURL(c.Ship)
	if err != nil {
		return fmt.Errorf("--ship: %s", strings.TrimPrefix(err.Error(), "store: "))
	}
	if own, _ := store.ParseURL(c.Store); own == loc {
		return errors.New("--ship: it is the monitor's own --store; ship to another (the fleet's PostgreSQL)")
	}
	if len(c.ShipToken) > store.MaxTokenLen || strings.IndexFunc(c.ShipToken, unicode.IsControl) >= 0 {
		return fmt.Errorf("--ship-token: want up to %d printable bytes", store.MaxTokenLen)
	}
	return nil
}

type target struct {
	server bool   // a sonde server (monitor sessions) rather than a plain reflector
	addr   string // host:port of the reflector, or of the server's control API
	host   string
}

// parseTarget reads stamp://host[:port] (a plain RFC 8762 reflector, port
// 862 by default), or a sonde server as `sonde test` takes it (host:port
// or an http(s) URL).
func parseTarget(s string) (target, error) {
	if len(s) > 256 || strings.IndexFunc(s, unicode.IsControl) >= 0 || strings.TrimSpace(s) != s || s == "" {
		return target{}, errors.New("not a host:port or URL")
	}
	if rest, ok := strings.CutPrefix(s, "stamp://"); ok {
		host, port, err := net.SplitHostPort(rest)
		if err != nil {
			host, port = strings.Trim(rest, "[]"), "862"
		}
		if host == "" || strings.ContainsAny(host, "/?#@") {
			return target{}, errors.New("want stamp://host[:port]")
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return target{}, fmt.Errorf("bad port %q", port)
		}
		return target{addr: net.JoinHostPort(host, port), host: host}, nil
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return target{}, errors.New("want host:port, http(s)://host[:port] (a sonde server) or stamp://host[:port] (a reflector)")
		}
		return target{server: true, addr: u.Host, host: u.Hostname()}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return target{}, fmt.Errorf("bad port %q", port)
	}
	if host == "" || strings.ContainsAny(host, "/?#@ ") {
		return target{}, errors.New("want host:port, http(s)://host[:port] (a sonde server) or stamp://host[:port] (a reflector)")
	}
	return target{server: true, addr: s, host: host}, nil
}

func checkText(flag, s string, maxLen int) error {
	if s == "" || len(s) > maxLen || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return fmt.Errorf("%s: want 1-%d printable characters, got %.40q", flag, maxLen, s)
	}
	return nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: over the %d-byte limit", path, limit)
	}
	return data, nil
}
