// Package dscp names DiffServ code points and parses QoS class lists. It is
// pure (no sockets), so the link model can read DSCP names without reaching
// socket code; marking sockets is package dscpmark.
package dscp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
)

// Names maps the standard code point names (RFC 2474, 2597, 3246, 5865,
// 8622) to values.
var names = map[string]int{
	"be": 0, "df": 0, "cs0": 0, "le": 1,
	"cs1": 8, "cs2": 16, "cs3": 24, "cs4": 32, "cs5": 40, "cs6": 48, "cs7": 56,
	"af11": 10, "af12": 12, "af13": 14, "af21": 18, "af22": 20, "af23": 22,
	"af31": 26, "af32": 28, "af33": 30, "af41": 34, "af42": 36, "af43": 38,
	"ef": 46, "va": 44,
}

// Parse reads a DSCP given as a number (0–63) or a standard name.
func Parse(s string) (int, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if v, ok := names[s]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > 63 {
		return 0, fmt.Errorf("invalid DSCP %q: want 0-63 or a name such as ef, af41, cs1, be", s)
	}
	return v, nil
}

// ParseClasses reads a class list "name:dscp[@port],…", e.g.
// "ef:46,be:0,cs1:8@8081". The DSCP may also be a name ("voice:ef").
func ParseClasses(s string) ([]model.Class, error) {
	var out []model.Class
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, rest, ok := strings.Cut(item, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("invalid class %q: want name:dscp[@port]", item)
		}
		if seen[name] {
			return nil, fmt.Errorf("invalid classes: %q appears twice", name)
		}
		seen[name] = true
		code, port, hasPort := strings.Cut(rest, "@")
		v, err := Parse(code)
		if err != nil {
			return nil, fmt.Errorf("class %q: %w", name, err)
		}
		c := model.Class{Name: name, DSCP: v}
		if hasPort {
			p, err := strconv.Atoi(port)
			if err != nil || p <= 0 || p > 65535 {
				return nil, fmt.Errorf("class %q: invalid port %q", name, port)
			}
			c.Port = p
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("invalid classes %q: no class given", s)
	}
	return out, nil
}

// ParseSourceClasses reads a class list of flows to a reflector (sonde
// udp's --classes): ParseClasses's "name:dscp" list, where each class may
// end in "/src=PORT", its local UDP source port. "@PORT" is refused: it
// names a server port (sonde test), and a reflector has one port.
func ParseSourceClasses(s string) ([]model.Class, error) {
	if strings.Contains(s, "@") {
		return nil, errors.New(`@PORT is a server port (sonde test); the reflector has one port: give a class's local port as name:dscp/src=PORT`)
	}
	items := strings.Split(s, ",")
	ports := make([]int, len(items))
	for i, it := range items {
		head, port, ok := strings.Cut(it, "/src=")
		if !ok {
			continue
		}
		p, err := strconv.Atoi(strings.TrimSpace(port))
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("class %q: invalid source port %q", strings.TrimSpace(head), port)
		}
		items[i], ports[i] = head, p
	}
	cs, err := ParseClasses(strings.Join(items, ","))
	if err != nil {
		return nil, err
	}
	// ParseClasses skips empty items: match the ports by position among
	// the non-empty ones.
	j := 0
	for i, it := range items {
		if strings.TrimSpace(it) == "" {
			continue
		}
		cs[j].Port = ports[i]
		j++
	}
	return cs, nil
}

// ParseECN reads an ECN codepoint (the DS field's two low bits): 0-3, or
// not-ect, ect1 (ect(1)), ect0 (ect(0)), ce.
func ParseECN(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0", "not-ect":
		return 0, nil
	case "1", "ect1", "ect(1)":
		return 1, nil
	case "2", "ect0", "ect(0)":
		return 2, nil
	case "3", "ce":
		return 3, nil
	}
	return 0, fmt.Errorf("want 0-3, not-ect, ect1, ect0 or ce, got %q", s)
}
