// Package counters reads an access link's byte counters from another box:
// a gateway's SNMP agent (IF-MIB ifHCInOctets/ifHCOutOctets, v2c or v3) or
// a Prometheus node exporter (node_network_{receive,transmit}_bytes_total).
// Each source is an ifstat.Source, so the one Tracker makes the readings
// monotonic (wraps, resets), finds the source's effective resolution (an
// agent that refreshes its counters only every few seconds) and labels
// probes with load states, exactly as for a local interface
// (docs/monitor.md, "Counters from another box").
//
// One grammar names a source (Parse):
//
//	snmp://[COMMUNITY@]HOST[:PORT]/IFACE[?OPTIONS]
//	snmp://USER@HOST[:PORT]/IFACE?version=3[&auth=SHA&auth-pass=P][&priv=AES&priv-pass=Q]
//	node-exporter://HOST[:PORT][/PATH]?device=IFACE[&OPTIONS]
//
// IFACE is an interface name (SNMP: ifName, else ifDescr) or, for SNMP, a
// decimal ifIndex. Options common to both: interval (between reads,
// default 1s, 100ms–10s), timeout (one request, default the interval,
// capped at 2 s), side=wan|lan (whether the interface's transmit counter
// is the uplink, as on a gateway's WAN port, or the downlink, as on its LAN
// port).
package counters

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/ifstat"
)

// Kinds of source.
const (
	KindSNMP         = "snmp"
	KindNodeExporter = "node-exporter"
)

// Bounds of what a spec may ask for.
const (
	MaxSpecLen      = 1024
	MinInterval     = 100 * time.Millisecond
	MaxInterval     = 10 * time.Second
	DefaultInterval = time.Second
	maxTimeout      = 2 * time.Second
	maxField        = 128 // a community, user, pass phrase, interface or device name
)

// Spec is a parsed counter source.
type Spec struct {
	Kind     string
	Host     string // host:port
	Iface    string // ifName/ifDescr or device; "" when Index is set
	Index    int    // SNMP ifIndex (0: by name)
	Interval time.Duration
	Timeout  time.Duration
	TxIsDown bool // side=lan

	// SNMP.
	Version   string // "2c" or "3"
	Community string
	User      string
	AuthProto string // MD5, SHA, SHA224, SHA256, SHA384, SHA512 ("": none)
	AuthPass  string
	PrivProto string // DES, AES, AES192, AES256 ("": none)
	PrivPass  string

	// Node exporter.
	Path string // HTTP path (default /metrics)
}

// String names the source without its secrets, for logs and events.
func (s Spec) String() string {
	what := s.Iface
	if s.Index > 0 {
		what = "ifIndex " + strconv.Itoa(s.Index)
	}
	if s.Kind == KindSNMP {
		return fmt.Sprintf("snmp v%s %s %s", s.Version, s.Host, what)
	}
	return fmt.Sprintf("node exporter %s%s %s", s.Host, s.Path, what)
}

// Parse reads a counter source spec (the package comment's grammar). Each
// error is one line naming the part at fault; secrets are never echoed.
func Parse(spec string) (Spec, error) {
	var s Spec
	if len(spec) > MaxSpecLen {
		return s, fmt.Errorf("counters: spec over %d bytes", MaxSpecLen)
	}
	u, err := url.Parse(spec)
	if err != nil {
		return s, errors.New("counters: not a URL: want snmp://[COMMUNITY@]HOST/IFACE or node-exporter://HOST:9100/metrics?device=IFACE")
	}
	s.Kind = u.Scheme
	if s.Kind != KindSNMP && s.Kind != KindNodeExporter {
		return s, fmt.Errorf("counters: scheme %q: want snmp:// or node-exporter://", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return s, fmt.Errorf("counters: %s: no host: want %s://HOST/…", s.Kind, s.Kind)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return s, fmt.Errorf("counters: %s: bad query: %v", s.Kind, err)
	}
	one := func(k string) (string, error) {
		v := q[k]
		delete(q, k)
		switch {
		case len(v) > 1:
			return "", fmt.Errorf("counters: %s: option %s given twice", s.Kind, k)
		case len(v) == 1 && (len(v[0]) > maxField || strings.ContainsAny(v[0], "\x00\n\r")):
			return "", fmt.Errorf("counters: %s: option %s: over %d bytes or with control characters", s.Kind, k, maxField)
		case len(v) == 1:
			return v[0], nil
		}
		return "", nil
	}
	port := "161"
	if s.Kind == KindNodeExporter {
		port = "9100"
	}
	host := u.Hostname()
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return s, fmt.Errorf("counters: %s: port %q out of range 1-65535", s.Kind, p)
		}
		port = p
	}
	if host == "" || len(host) > 253 {
		return s, fmt.Errorf("counters: %s: no host", s.Kind)
	}
	s.Host = net.JoinHostPort(host, port)

	s.Interval = DefaultInterval
	if v, err := one("interval"); err != nil {
		return s, err
	} else if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < MinInterval || d > MaxInterval {
			return s, fmt.Errorf("counters: %s: interval %q: want %v to %v", s.Kind, v, MinInterval, MaxInterval)
		}
		s.Interval = d
	}
	s.Timeout = min(s.Interval, maxTimeout)
	if v, err := one("timeout"); err != nil {
		return s, err
	} else if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Millisecond || d > maxTimeout {
			return s, fmt.Errorf("counters: %s: timeout %q: want 10ms to %v", s.Kind, v, maxTimeout)
		}
		s.Timeout = d
	}
	switch v, err := one("side"); {
	case err != nil:
		return s, err
	case v == "lan":
		s.TxIsDown = true
	case v != "" && v != "wan":
		return s, fmt.Errorf("counters: %s: side %q: want wan (tx is the uplink) or lan (tx is the downlink)", s.Kind, v)
	}
	if s.Kind == KindSNMP {
		err = s.parseSNMP(u, one)
	} else {
		err = s.parseNodeExporter(u, one)
	}
	if err != nil {
		return s, err
	}
	for k := range q {
		return s, fmt.Errorf("counters: %s: unknown option %q", s.Kind, k)
	}
	return s, nil
}

func checkName(kind, what, v string) error {
	if v == "" || len(v) > maxField || strings.ContainsAny(v, "\x00\n\r") {
		return fmt.Errorf("counters: %s: %s %q: want 1 to %d bytes", kind, what, v, maxField)
	}
	return nil
}

func (s *Spec) parseSNMP(u *url.URL, one func(string) (string, error)) error {
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.Contains(name, "/") {
		return errors.New("counters: snmp: want one interface after the host: snmp://HOST/eth0 (ifName or ifDescr) or snmp://HOST/2 (ifIndex)")
	}
	if n, err := strconv.Atoi(name); err == nil {
		if n < 1 || n > 1<<31-1 {
			return fmt.Errorf("counters: snmp: ifIndex %d out of range", n)
		}
		s.Index = n
	} else if err := checkName("snmp", "interface", name); err != nil {
		return err
	} else {
		s.Iface = name
	}
	v, err := one("version")
	if err != nil {
		return err
	}
	s.Version = v
	switch v {
	case "", "2c":
		s.Version = "2c"
		s.Community = "public"
		if u.User != nil {
			if _, has := u.User.Password(); has {
				return errors.New("counters: snmp: v2c takes a community (snmp://COMMUNITY@HOST/IF), not a password")
			}
			s.Community = u.User.Username()
		}
		if err := checkName("snmp", "community", s.Community); err != nil {
			return errors.New("counters: snmp: community: want 1 to 128 bytes")
		}
		for _, k := range []string{"auth", "auth-pass", "priv", "priv-pass"} {
			if v, _ := one(k); v != "" {
				return fmt.Errorf("counters: snmp: option %s is for version=3", k)
			}
		}
	case "3":
		if u.User == nil || u.User.Username() == "" {
			return errors.New("counters: snmp: version=3 needs a user: snmp://USER@HOST/IF?version=3&…")
		}
		if _, has := u.User.Password(); has {
			return errors.New("counters: snmp: v3 pass phrases go in auth-pass= and priv-pass=, not in USER:PASS@")
		}
		s.User = u.User.Username()
		if err := checkName("snmp", "user", s.User); err != nil {
			return err
		}
		for _, f := range []struct {
			key string
			dst *string
		}{{"auth", &s.AuthProto}, {"auth-pass", &s.AuthPass}, {"priv", &s.PrivProto}, {"priv-pass", &s.PrivPass}} {
			if *f.dst, err = one(f.key); err != nil {
				return err
			}
		}
		s.AuthProto, s.PrivProto = strings.ToUpper(s.AuthProto), strings.ToUpper(s.PrivProto)
		if s.AuthProto == "" && s.AuthPass != "" {
			s.AuthProto = "SHA"
		}
		if s.PrivProto == "" && s.PrivPass != "" {
			s.PrivProto = "AES"
		}
		if _, ok := authProtos[s.AuthProto]; !ok {
			return fmt.Errorf("counters: snmp: auth %q: want MD5, SHA, SHA224, SHA256, SHA384 or SHA512", s.AuthProto)
		}
		if _, ok := privProtos[s.PrivProto]; !ok {
			return fmt.Errorf("counters: snmp: priv %q: want DES, AES, AES192 or AES256", s.PrivProto)
		}
		switch {
		case s.AuthProto != "" && len(s.AuthPass) < 8:
			return errors.New("counters: snmp: auth-pass: at least 8 characters (RFC 3414)")
		case s.PrivProto != "" && s.AuthProto == "":
			return errors.New("counters: snmp: priv needs auth too (no authNoPriv… without auth in SNMPv3)")
		case s.PrivProto != "" && len(s.PrivPass) < 8:
			return errors.New("counters: snmp: priv-pass: at least 8 characters (RFC 3414)")
		}
	default:
		return fmt.Errorf("counters: snmp: version %q: want 2c or 3 (v1 agents have no 64-bit counters)", v)
	}
	return nil
}

func (s *Spec) parseNodeExporter(u *url.URL, one func(string) (string, error)) error {
	if u.User != nil {
		return errors.New("counters: node-exporter: no user info in the URL")
	}
	s.Path = u.EscapedPath()
	if s.Path == "" || s.Path == "/" {
		s.Path = "/metrics"
	}
	if len(s.Path) > 256 {
		return errors.New("counters: node-exporter: path over 256 bytes")
	}
	d, err := one("device")
	if err != nil {
		return err
	}
	if d == "" {
		return errors.New("counters: node-exporter: want ?device=IFACE (the exporter's device label, e.g. eth0)")
	}
	if err := checkName("node-exporter", "device", d); err != nil {
		return err
	}
	s.Iface = d
	return nil
}

// Source is an open counter source: ifstat.Source, closed when done.
type Source interface {
	ifstat.Source
	io.Closer
	// SpeedBps is the interface's speed as the agent reports it (bits/s;
	// 0: unknown), known after a successful Read: the ceiling for
	// ifstat.Config.MaxBps.
	SpeedBps() float64
}

// Open returns the source a spec names. It sends nothing: the first Read
// does (so that an agent not answering yet does not stop the monitor's
// start; its error is the one line to log).
func Open(s Spec) (Source, error) {
	switch s.Kind {
	case KindSNMP:
		return newSNMP(s)
	case KindNodeExporter:
		return newNodeExporter(s), nil
	}
	return nil, fmt.Errorf("counters: unknown kind %q", s.Kind)
}

// netErr says in words what a transport error means.
func netErr(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "no answer in time"
	case strings.Contains(err.Error(), "connection refused"):
		return "connection refused (nothing listening there)"
	case strings.Contains(err.Error(), "no route to host"), strings.Contains(err.Error(), "network is unreachable"):
		return "host unreachable"
	}
	return err.Error()
}
