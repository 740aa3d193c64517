package librespeed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Bounds of a server list: what a server loads from a file and a page
// reads from a server.
const (
	MaxServerListBytes = 1 << 20
	MaxServers         = 1000
	maxServerField     = 512 // bytes of one field
)

// ParseServerList reads a list in LibreSpeed's server-list format (a JSON
// array of Server; fields it does not name are ignored, as LibreSpeed's
// clients do). Every entry needs a name and a server URL that is http,
// https or scheme-relative ("//host:port/", which the page resolves with
// its own scheme) with a host and nothing after the path; the other URLs,
// relative to it, are kept as they are. The list is bounded in bytes,
// entries and field lengths before anything is kept.
func ParseServerList(b []byte) ([]Server, error) {
	if len(b) > MaxServerListBytes {
		return nil, fmt.Errorf("server list: larger than %d KiB", MaxServerListBytes>>10)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return nil, errors.New("server list: not a JSON array (LibreSpeed's server-list format)")
	}
	var out []Server
	for dec.More() {
		if len(out) == MaxServers {
			return nil, fmt.Errorf("server list: more than %d servers", MaxServers)
		}
		var s Server
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("server list: entry %d: %w", len(out)+1, err)
		}
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("server list: entry %d (%q): %w", len(out)+1, truncate(s.Name), err)
		}
		out = append(out, s)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("server list: %w", err)
	}
	if dec.More() {
		return nil, errors.New("server list: data after the array")
	}
	return out, nil
}

func (s Server) check() error {
	for _, f := range []struct{ name, v string }{{"name", s.Name}, {"server", s.Server}, {"dlURL", s.DlURL}, {"ulURL", s.UlURL},
		{"pingURL", s.PingURL}, {"getIpURL", s.GetIPURL}, {"sponsorName", s.SponsorName}, {"sponsorURL", s.SponsorURL}} {
		if len(f.v) > maxServerField {
			return fmt.Errorf("%s longer than %d bytes", f.name, maxServerField)
		}
		if strings.ContainsFunc(f.v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("%s holds a control character", f.name)
		}
	}
	if strings.TrimSpace(s.Name) == "" {
		return errors.New("no name")
	}
	_, err := ServerOrigin(s.Server)
	return err
}

// ServerOrigin is the origin of a list entry's server URL: "http://h:p",
// "https://h:p", or "//h:p" for a scheme-relative one.
func ServerOrigin(server string) (string, error) {
	u, err := url.Parse(server)
	switch {
	case err != nil:
		return "", fmt.Errorf("server %q: %w", server, err)
	case u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("server %q: want an http, https or scheme-relative (//host/) URL", server)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("server %q: no host", server)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("server %q: no user, query or fragment allowed", server)
	}
	if u.Scheme == "" {
		return "//" + u.Host, nil
	}
	return u.Scheme + "://" + u.Host, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
