package capfilter

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// node is a parsed expression: and, or, not, or a primitive.
type node struct {
	op   byte // '&', '|', '!', or 'p' (primitive)
	l, r *node
	p    prim
}

// prim is one primitive with its qualifiers.
type prim struct {
	kind  string // "proto", "host", "net", "port", "portrange", "less", "greater"
	dir   string // "", "src", "dst"
	ver   int    // 0 (either), 4 or 6: an ip/ip6 qualifier or the address family
	proto int    // -1: any; else the IP protocol (6, 17, 132, 1, 58, ...)
	// host and net
	pfx netip.Prefix
	// port, portrange, less, greater
	lo, hi int
}

// qual is what a bare value after a primitive inherits ("port 80 or 443").
type qual struct {
	kind, dir string
	ver       int
	proto     int
}

type parser struct {
	toks []string
	i    int
	last *qual
}

// parse turns an expression into a tree.
func parse(expr string) (*node, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, nil
	}
	p := &parser{toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q at word %d", p.toks[p.i], p.i+1)
	}
	return n, nil
}

func lex(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '(' || c == ')':
			toks = append(toks, string(c))
			i++
		case c == '!':
			toks = append(toks, "not")
			i++
		case strings.HasPrefix(s[i:], "&&"):
			toks = append(toks, "and")
			i += 2
		case strings.HasPrefix(s[i:], "||"):
			toks = append(toks, "or")
			i += 2
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n()!&|", rune(s[j])) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("unexpected %q", s[i:])
			}
			toks = append(toks, strings.ToLower(s[i:j]))
			i = j
		}
	}
	return toks, nil
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *parser) next() string {
	t := p.peek()
	if t != "" {
		p.i++
	}
	return t
}

func (p *parser) or() (*node, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.peek() == "or" {
		p.next()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = &node{op: '|', l: l, r: r}
	}
	return l, nil
}

func (p *parser) and() (*node, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.peek() == "and" {
		p.next()
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = &node{op: '&', l: l, r: r}
	}
	return l, nil
}

func (p *parser) not() (*node, error) {
	switch p.peek() {
	case "not":
		p.next()
		n, err := p.not()
		if err != nil {
			return nil, err
		}
		return &node{op: '!', l: n}, nil
	case "(":
		p.next()
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		return n, nil
	case "":
		return nil, fmt.Errorf("expression ends early")
	}
	return p.primitive()
}

var protoNumbers = map[string]int{"tcp": 6, "udp": 17, "sctp": 132, "icmp": 1, "icmp6": 58}

// primitive reads [ip|ip6] [tcp|udp|sctp] [src|dst] KIND VALUE, one of the
// bare protocol words, or a bare value that repeats the last primitive's
// qualifiers.
func (p *parser) primitive() (*node, error) {
	start := p.i
	q := qual{proto: -1}
	switch p.peek() {
	case "ip":
		q.ver = 4
		p.next()
	case "ip6":
		q.ver = 6
		p.next()
	}
	if n, ok := protoNumbers[p.peek()]; ok {
		q.proto = n
		p.next()
	}
	switch p.peek() {
	case "src", "dst":
		q.dir = p.next()
		if w := p.peek(); w == "or" || w == "and" {
			return nil, fmt.Errorf("%q %s: only src or dst alone is supported", q.dir, w)
		}
	}
	switch w := p.peek(); w {
	case "host", "net", "port", "portrange":
		q.kind = p.next()
	case "less", "greater":
		if p.i != start {
			return nil, fmt.Errorf("%q takes no qualifiers", w)
		}
		q.kind = p.next()
	case "proto":
		if q.proto >= 0 || q.dir != "" {
			return nil, fmt.Errorf("%q cannot follow a protocol or direction", w)
		}
		q.kind = p.next()
	default:
		if p.i > start {
			if q.dir != "" {
				// "src 198.18.1.1": host is the default kind
				q.kind = "host"
				break
			}
			// "ip", "tcp", "ip6 udp": protocol only
			return &node{op: 'p', p: prim{kind: "proto", ver: q.ver, proto: q.proto}}, nil
		}
		if p.last == nil {
			return nil, fmt.Errorf("unknown word %q", w)
		}
		q = *p.last // "port 80 or 443"
	}
	val := p.next()
	if val == "" || val == "(" || val == ")" || val == "and" || val == "or" || val == "not" {
		return nil, fmt.Errorf("%s needs a value", q.kind)
	}
	pr, err := value(q, val)
	if err != nil {
		return nil, err
	}
	p.last = &q
	return &node{op: 'p', p: pr}, nil
}

// value completes a primitive from its value word.
func value(q qual, v string) (prim, error) {
	pr := prim{kind: q.kind, dir: q.dir, ver: q.ver, proto: q.proto}
	switch q.kind {
	case "host", "net":
		pfx, err := prefix(v, q.kind == "host")
		if err != nil {
			return pr, err
		}
		ver := 4
		if pfx.Addr().Is6() {
			ver = 6
		}
		if q.ver != 0 && q.ver != ver {
			return pr, fmt.Errorf("%s %s: not an IPv%d address", q.kind, v, q.ver)
		}
		pr.pfx, pr.ver = pfx, ver
	case "port":
		n, err := port(v, q.proto)
		if err != nil {
			return pr, err
		}
		pr.lo, pr.hi = n, n
	case "portrange":
		a, b, ok := strings.Cut(v, "-")
		if !ok {
			return pr, fmt.Errorf("portrange %q: want LOW-HIGH", v)
		}
		lo, err := port(a, q.proto)
		if err != nil {
			return pr, err
		}
		hi, err := port(b, q.proto)
		if err != nil {
			return pr, err
		}
		pr.lo, pr.hi = min(lo, hi), max(lo, hi)
	case "less", "greater":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 65535+40 {
			return pr, fmt.Errorf("%s %q: want a length in bytes", q.kind, v)
		}
		pr.lo = n
	case "proto":
		n, ok := protoNumbers[strings.TrimPrefix(v, `\`)]
		if !ok {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 0 || n > 255 {
				return pr, fmt.Errorf("proto %q: want 0-255 or tcp, udp, sctp, icmp, icmp6", v)
			}
		}
		pr.proto = n
	}
	return pr, nil
}

func prefix(v string, host bool) (netip.Prefix, error) {
	if !host && strings.Contains(v, "/") {
		pfx, err := netip.ParsePrefix(v)
		if err != nil {
			return pfx, fmt.Errorf("net %q: %w", v, err)
		}
		return pfx.Masked(), nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		kind := "host"
		if !host {
			kind = "net"
		}
		return netip.Prefix{}, fmt.Errorf("%s %q: want an IP address (names are not resolved)", kind, v)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func port(v string, proto int) (int, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || n > 65535 {
			return 0, fmt.Errorf("port %d out of range", n)
		}
		return n, nil
	}
	network := "tcp"
	if proto == 17 {
		network = "udp"
	}
	// Service names from /etc/services (Go's resolver reads it directly).
	n, err := net.LookupPort(network, v)
	if err != nil {
		return 0, fmt.Errorf("port %q: not a number or a known service", v)
	}
	return n, nil
}
