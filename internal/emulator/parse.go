package emulator

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sonde-project/sonde/internal/dscp"
	"github.com/sonde-project/sonde/internal/units"
)

// ParseParams applies a link specification to base. A specification is a
// list of key=value settings separated by white space or commas, e.g.
//
//	rate=8Mbit delay=9.5ms limit=37500B qdisc=codel ecn
//
// Keys: rate (bit/s in units.ParseRate's syntax, "100M", "1.5Gbit/s";
// off or 0: no limit), delay, jitter, dist (uniform|normal|pareto), pareto-shape,
// reorder, loss, ge (P/R/LOSSBAD/LOSSGOOD, netem's gemodel order), ber, dup,
// limit (packets "1000p", or bytes "37500B", "64KB", "300kbit"), qdisc
// (droptail|codel|pie|fq_codel), ecn, target, interval, mtu, remark,
// duplex (full|half: the two directions share one medium, see HalfDuplex),
// hold (how long a half-duplex direction keeps the medium while it has
// backlog: a duration, or drain: until its queue is empty) and turnaround
// (the time the medium takes to change direction to this one).
// Probabilities accept a percent sign ("4%"). The result is validated.
func ParseParams(spec string, base Params) (Params, error) {
	p := base
	for _, tok := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		key, val, hasVal := strings.Cut(tok, "=")
		key = strings.ToLower(key)
		if err := p.set(key, val, hasVal); err != nil {
			return base, fmt.Errorf("%s: %w", tok, err)
		}
	}
	if err := p.Validate(); err != nil {
		return base, err
	}
	return p, nil
}

func (p *Params) set(key, val string, hasVal bool) error {
	var err error
	boolean := func() (bool, error) {
		if !hasVal {
			return true, nil
		}
		return strconv.ParseBool(val)
	}
	need := func() error {
		if !hasVal || val == "" {
			return fmt.Errorf("needs a value")
		}
		return nil
	}
	switch key {
	case "reorder":
		p.Reorder, err = boolean()
		return err
	case "ecn":
		p.ECN, err = boolean()
		return err
	}
	if err := need(); err != nil {
		return err
	}
	switch key {
	case "rate", "bw":
		p.RateBps, err = units.ParseRateLimit(val)
	case "delay":
		p.Delay, err = time.ParseDuration(val)
	case "jitter":
		p.Jitter, err = time.ParseDuration(val)
	case "dist":
		p.JitterDist = Dist(strings.ToLower(val))
	case "pareto-shape":
		p.ParetoShape, err = strconv.ParseFloat(val, 64)
	case "loss", "plr":
		p.Loss, err = ParseProb(val)
	case "ge", "gemodel":
		p.GE, err = parseGE(val)
	case "ber":
		p.BER, err = strconv.ParseFloat(val, 64)
	case "dup", "duplicate":
		p.Duplicate, err = ParseProb(val)
	case "limit", "queue":
		p.LimitPackets, p.LimitBytes, err = ParseLimit(val)
	case "qdisc", "aqm":
		p.Qdisc = Qdisc(strings.ToLower(strings.ReplaceAll(val, "-", "_")))
	case "target":
		p.Target, err = time.ParseDuration(val)
	case "interval", "tupdate":
		p.Interval, err = time.ParseDuration(val)
	case "mtu":
		p.MTU, err = strconv.Atoi(val)
	case "remark":
		p.Remark, err = parseRemark(val)
	case "duplex":
		switch strings.ToLower(val) {
		case "full":
			p.HalfDuplex = false
		case "half":
			p.HalfDuplex = true
		default:
			err = errors.New("want full or half")
		}
	case "turnaround":
		p.Turnaround, err = time.ParseDuration(val)
	case "hold":
		if strings.ToLower(val) == "drain" {
			p.Hold = HoldUntilDrained
		} else {
			p.Hold, err = time.ParseDuration(val)
		}
	default:
		return fmt.Errorf("unknown setting %q", key)
	}
	return err
}

// parseRemark reads "TO" (every packet) or "FROM:TO", DSCPs as numbers or
// names (ef, cs1, af41...).
func parseRemark(val string) (*Remark, error) {
	r := &Remark{From: -1}
	from, to, pair := strings.Cut(val, ":")
	if !pair {
		to = from
	}
	var err error
	if r.To, err = dscp.Parse(to); err != nil {
		return nil, err
	}
	if pair {
		if r.From, err = dscp.Parse(from); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// ParseProb reads a probability: "0.04" or "4%".
func ParseProb(s string) (float64, error) {
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = t, 0.01
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("probability %q: %w", s, err)
	}
	return v * scale, nil
}

// parseGE reads netem's gemodel order P/R/1-H/1-K with netem's defaults for
// missing values (R = 1-P, 1-H = 1, 1-K = 0).
func parseGE(s string) (*GilbertElliott, error) {
	parts := strings.Split(s, "/")
	if len(parts) > 4 {
		return nil, fmt.Errorf("gilbert-elliott takes at most 4 values P/R/LOSSBAD/LOSSGOOD")
	}
	v := []float64{0, -1, 1, 0}
	for i, part := range parts {
		f, err := ParseProb(part)
		if err != nil {
			return nil, err
		}
		v[i] = f
	}
	if v[1] < 0 {
		v[1] = 1 - v[0]
	}
	return &GilbertElliott{P: v[0], R: v[1], H: 1 - v[2], K: 1 - v[3]}, nil
}

// ParseLimit reads a queue limit: packets ("1000p", "1000pkts", or a bare
// number), bytes in units.ParseBytes's syntax ("37500B", "64KB",
// "64KiB"), or bits as tc writes them, in units.ParseRate's prefixes
// without the "/s" ("300kbit" = 37500 bytes).
func ParseLimit(s string) (pkts, bytes int, err error) {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(t)
	for _, suf := range []string{"packets", "pkts", "p"} {
		if n, ok := strings.CutSuffix(lower, suf); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v <= 0 {
				return 0, 0, fmt.Errorf("queue limit %q: want a positive packet count", s)
			}
			return v, 0, nil
		}
	}
	if v, err := strconv.Atoi(t); err == nil || !strings.ContainsFunc(t, unicode.IsLetter) {
		if err != nil || v <= 0 {
			return 0, 0, fmt.Errorf("queue limit %q: want packets (1000p) or bytes (37500B); 0 is not a queue", s)
		}
		return v, 0, nil
	}
	var b float64
	if strings.HasSuffix(lower, "bit") || strings.HasSuffix(lower, "bits") {
		bits, err := units.ParseRate(t)
		if err != nil {
			return 0, 0, fmt.Errorf("queue limit: %w", err)
		}
		b = math.Round(bits / 8)
	} else {
		n, err := units.ParseBytes(t)
		if err != nil {
			return 0, 0, fmt.Errorf("queue limit: %w", err)
		}
		b = float64(n)
	}
	if b <= 0 {
		return 0, 0, fmt.Errorf("queue limit %q: want a positive size", s)
	}
	return 0, int(b), nil
}

// ParseStep reads one schedule step "AT:SPEC", e.g. "50s:rate=20Mbit",
// applying SPEC to the parameters in force before it (prev).
func ParseStep(s string, prev Params) (Step, error) {
	at, spec, ok := strings.Cut(s, ":")
	if !ok {
		return Step{}, fmt.Errorf("schedule step %q: want TIME:SETTINGS, e.g. 50s:rate=20Mbit", s)
	}
	d, err := time.ParseDuration(strings.TrimSpace(at))
	if err != nil {
		return Step{}, fmt.Errorf("schedule step %q: %w", s, err)
	}
	p, err := ParseParams(spec, prev)
	if err != nil {
		return Step{}, fmt.Errorf("schedule step %q: %w", s, err)
	}
	return Step{At: d, Params: p}, nil
}

// ParseSchedule reads steps in time order, each building on the previous.
func ParseSchedule(steps []string, base Params) ([]Step, error) {
	var out []Step
	prev := base
	for _, s := range steps {
		st, err := ParseStep(s, prev)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
		prev = st.Params
	}
	if err := ValidateSchedule(base, out); err != nil {
		return nil, err
	}
	return out, nil
}

// rateSpec prints a rate as a link specification reads it back, without
// the space of units.FormatRate (which separates settings): "100.0Mbit/s",
// "off" for no limit.
func rateSpec(bps float64) string {
	return strings.ReplaceAll(units.FormatRateLimit(bps), " ", "")
}

// ParseLink builds a link's two directions from sonde emulate's flags:
// both is the specification for both directions (--link), up and down
// each direction's on top of it (--up: A→B, --down: B→A), at the schedule
// steps of both (--at), upAt and downAt each direction's. Errors name the
// flag.
func ParseLink(both, up, down string, at, upAt, downAt []string) (upCfg, downCfg Config, err error) {
	base, err := ParseParams(both, Params{})
	if err != nil {
		return upCfg, downCfg, fmt.Errorf("--link: %w", err)
	}
	if upCfg.Params, err = ParseParams(up, base); err != nil {
		return upCfg, downCfg, fmt.Errorf("--up: %w", err)
	}
	if downCfg.Params, err = ParseParams(down, base); err != nil {
		return upCfg, downCfg, fmt.Errorf("--down: %w", err)
	}
	if upCfg.Schedule, err = ParseSchedule(append(append([]string(nil), at...), upAt...), upCfg.Params); err != nil {
		return upCfg, downCfg, fmt.Errorf("up schedule: %w", err)
	}
	if downCfg.Schedule, err = ParseSchedule(append(append([]string(nil), at...), downAt...), downCfg.Params); err != nil {
		return upCfg, downCfg, fmt.Errorf("down schedule: %w", err)
	}
	return upCfg, downCfg, nil
}
