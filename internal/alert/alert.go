// Package alert is the monitor's alert engine (docs/monitor.md,
// "Alerts"): the rules of a config file's "alerts" section and their
// checks, the Evaluator that turns final probes and the detectors' events
// into firing and resolved alerts, their stored form (events a restart
// reads back), Replay over a store's history, and the Alertmanager
// webhook. It is pure but for the webhook and Replay's reads: the daemon
// (internal/monitor) feeds it and delivers what it returns.
package alert

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/sonde-project/sonde/internal/grade"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/units"
)

// Alert rule kinds (docs/monitor.md, "Alerts").
const (
	RuleOutage      = "outage"        // every probe of a scope lost for at least For
	RuleReliability = "reliability"   // R(L) under a requirement over a sliding window
	RuleStep        = "baseline-step" // the detectors found a baseline step
	RuleBufferbloat = "bufferbloat"   // a loaded episode graded at least Grade
)

// Alert statuses, as Alertmanager names them.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Bounds of the "alerts" section: it comes from a file.
const (
	maxRules        = 32
	maxRuleName     = 64
	maxAlertWindow  = 24 * time.Hour
	maxAlertFor     = 24 * time.Hour
	maxAlertHold    = 7 * 24 * time.Hour
	maxWindowBucket = 3600 // buckets of a reliability window
	maxWebhookURL   = 1024
)

// Config is the "alerts" section of the config file.
type Config struct {
	// Rules evaluated by the daemon; absent (null): DefaultRules, an
	// empty list: none.
	Rules []Rule `json:"rules"`
	// Webhook is an Alertmanager-compatible receiver (http or https URL);
	// empty: the log only.
	Webhook string `json:"webhook"`
	// WebhookTimeout bounds one POST (default 10s, at most 60s).
	WebhookTimeout units.Duration `json:"webhook_timeout"`
}

// Rule is one rule. Each kind reads only its own fields.
type Rule struct {
	Name     string `json:"name"`     // unique, the alert's alertname label
	Severity string `json:"severity"` // a label (default "warning"), e.g. critical, info
	Kind     string `json:"kind"`     // outage, reliability, baseline-step, bufferbloat
	// Stream limits the rule to the stream of this name ("" all).
	Stream string `json:"stream,omitempty"`
	// outage: Scope is link (every stream down at once; the default),
	// target (every stream of one target) or stream; For the shortest
	// outage that fires (default 10s).
	// reliability: For is how long R(L) must stay under the requirement
	// before the alert fires (default 0: at the first evaluation).
	Scope string         `json:"scope,omitempty"`
	For   units.Duration `json:"for,omitempty"`
	// reliability: fires while R(Latency) < Reliability over the last
	// Window (default 10m) of a stream with at least MinProbes (default
	// 100) probes in it; Profile takes Latency and Reliability from a
	// requirement profile instead.
	Latency     units.Duration `json:"latency,omitempty"`
	Reliability float64        `json:"reliability,omitempty"`
	Profile     string         `json:"profile,omitempty"`
	Window      units.Duration `json:"window,omitempty"`
	MinProbes   int            `json:"min_probes,omitempty"`
	// reliability, hysteresis: a firing alert resolves only once R(L) has
	// stayed at or above Reliability + ResolveMargin (default half the
	// allowed failure fraction, (1 − Reliability) / 2; at most 1) at every
	// evaluation for ResolveFor (default Window), so a rule does not flap
	// at the requirement.
	ResolveMargin *float64       `json:"resolve_margin,omitempty"`
	ResolveFor    units.Duration `json:"resolve_for,omitempty"`
	// baseline-step: fires on a step of at least MinStep (default any the
	// detectors report); steps flagged probable-artefact only with
	// Artefacts.
	MinStep   units.Duration `json:"min_step,omitempty"`
	Artefacts bool           `json:"artefacts,omitempty"`
	// bufferbloat: fires on a loaded episode graded Grade or worse
	// (default "C"; the scale A+ A B C D F).
	Grade string `json:"grade,omitempty"`
	// baseline-step and bufferbloat: an event fires the alert, which is
	// resolved Hold (default 15m) after the last matching event.
	Hold units.Duration `json:"hold,omitempty"`
}

// DefaultRules are the rules of a config without an "alerts" section: an
// outage of the link of at least 10 s.
func DefaultRules() []Rule {
	return []Rule{{Name: "link-outage", Severity: "critical", Kind: RuleOutage, Scope: "link", For: units.Duration(10 * time.Second)}}
}

// fill sets the defaults of the fields a rule's kind reads.
func (r *Rule) fill() {
	if r.Severity == "" {
		r.Severity = "warning"
	}
	switch r.Kind {
	case RuleOutage:
		if r.Scope == "" {
			r.Scope = "link"
		}
		if r.For == 0 {
			r.For = units.Duration(10 * time.Second)
		}
	case RuleReliability:
		if r.Window == 0 {
			r.Window = units.Duration(10 * time.Minute)
		}
		if r.MinProbes == 0 {
			r.MinProbes = 100
		}
		if r.ResolveFor == 0 {
			r.ResolveFor = r.Window
		}
	case RuleStep, RuleBufferbloat:
		if r.Hold == 0 {
			r.Hold = units.Duration(15 * time.Minute)
		}
		if r.Kind == RuleBufferbloat && r.Grade == "" {
			r.Grade = "C"
		}
	}
}

// Check fills the defaults and validates the section against the
// requirement profiles a rule may name (nil: the smart-grid table). Each
// error is one line naming the rule and field.
func (a *Config) Check(profiles []model.RequirementProfile) error {
	if a.Rules == nil {
		a.Rules = DefaultRules()
	}
	if len(a.Rules) > maxRules {
		return fmt.Errorf("alerts: %d rules, at most %d", len(a.Rules), maxRules)
	}
	if a.WebhookTimeout == 0 {
		a.WebhookTimeout = units.Duration(10 * time.Second)
	}
	if t := time.Duration(a.WebhookTimeout); t < 100*time.Millisecond || t > time.Minute {
		return fmt.Errorf("alerts: webhook_timeout %s: want 100ms to 1m", t)
	}
	if a.Webhook != "" {
		if err := checkWebhookURL(a.Webhook); err != nil {
			return fmt.Errorf("alerts: webhook: %w", err)
		}
	}
	if profiles == nil {
		profiles = reliability.SmartGrid()
	}
	names := map[string]bool{}
	for i := range a.Rules {
		r := &a.Rules[i]
		if err := r.check(profiles); err != nil {
			name := r.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			return fmt.Errorf("alerts: rule %.64q: %w", name, err)
		}
		if names[r.Name] {
			return fmt.Errorf("alerts: rule %q given twice", r.Name)
		}
		names[r.Name] = true
	}
	return nil
}

func (r *Rule) check(profiles []model.RequirementProfile) error {
	if r.Name == "" || len(r.Name) > maxRuleName || strings.IndexFunc(r.Name, func(c rune) bool { return unicode.IsControl(c) || unicode.IsSpace(c) }) >= 0 {
		return fmt.Errorf("name: want 1-%d characters without spaces", maxRuleName)
	}
	if len(r.Severity) > maxRuleName || strings.IndexFunc(r.Severity, unicode.IsControl) >= 0 {
		return errors.New("severity: want up to 64 printable characters")
	}
	if len(r.Stream) > 256 || strings.IndexFunc(r.Stream, unicode.IsControl) >= 0 {
		return errors.New("stream: not a stream name")
	}
	r.fill()
	// Fields of other kinds are refused: a field that silently does
	// nothing is a rule that does not do what its author thinks.
	other := func(field string, set bool) error {
		if set {
			return fmt.Errorf("%s: not a field of a %s rule", field, r.Kind)
		}
		return nil
	}
	outage, rel, step, bloat := r.Kind == RuleOutage, r.Kind == RuleReliability, r.Kind == RuleStep, r.Kind == RuleBufferbloat
	if err := errors.Join(
		other("scope", !outage && r.Scope != ""), other("for", !outage && !rel && r.For != 0),
		other("resolve_margin", !rel && r.ResolveMargin != nil), other("resolve_for", !rel && r.ResolveFor != 0),
		other("latency", !rel && r.Latency != 0), other("reliability", !rel && r.Reliability != 0),
		other("profile", !rel && r.Profile != ""), other("window", !rel && r.Window != 0),
		other("min_probes", !rel && r.MinProbes != 0),
		other("min_step", !step && r.MinStep != 0), other("artefacts", !step && r.Artefacts),
		other("grade", !bloat && r.Grade != ""), other("hold", !step && !bloat && r.Hold != 0),
	); err != nil {
		s, _, _ := strings.Cut(err.Error(), "\n")
		return errors.New(s)
	}
	switch r.Kind {
	case RuleOutage:
		switch r.Scope {
		case "link", "target", "stream":
		default:
			return fmt.Errorf("scope %q: want link, target or stream", r.Scope)
		}
		if t := time.Duration(r.For); t < 0 || t > maxAlertFor {
			return fmt.Errorf("for %s: want 0 to 24h", t)
		}
	case RuleReliability:
		if r.Profile != "" {
			if r.Latency != 0 || r.Reliability != 0 {
				return errors.New("give either profile or latency and reliability")
			}
			i := slices.IndexFunc(profiles, func(p model.RequirementProfile) bool { return p.Name == r.Profile })
			if i < 0 {
				return fmt.Errorf("profile %q: no such requirement profile", r.Profile)
			}
			r.Latency, r.Reliability = units.Duration(profiles[i].LatencyNs), profiles[i].Reliability
		}
		if t := time.Duration(r.Latency); t <= 0 || t > 1000*time.Second {
			return fmt.Errorf("latency %s: want above 0, up to 1000s", t)
		}
		if !(r.Reliability > 0 && r.Reliability <= 1) {
			return fmt.Errorf("reliability %g: want a fraction in (0, 1], e.g. 0.98", r.Reliability)
		}
		if t := time.Duration(r.Window); t < time.Minute || t > maxAlertWindow {
			return fmt.Errorf("window %s: want 1m to 24h", t)
		}
		if r.MinProbes < 1 || r.MinProbes > 1_000_000 {
			return fmt.Errorf("min_probes %d: want 1 to 1000000", r.MinProbes)
		}
		if t := time.Duration(r.For); t < 0 || t > maxAlertFor {
			return fmt.Errorf("for %s: want 0 to 24h", t)
		}
		if t := time.Duration(r.ResolveFor); t < time.Second || t > maxAlertFor {
			return fmt.Errorf("resolve_for %s: want 1s to 24h", t)
		}
		if r.ResolveMargin == nil {
			m := (1 - r.Reliability) / 2
			r.ResolveMargin = &m
		}
		if m := *r.ResolveMargin; !(m >= 0 && r.Reliability+m <= 1+1e-12) {
			return fmt.Errorf("resolve_margin %g: want 0 to %g (reliability + margin at most 1)", m, 1-r.Reliability)
		}
	case RuleStep:
		if t := time.Duration(r.MinStep); t < 0 || t > time.Hour {
			return fmt.Errorf("min_step %s: want 0 to 1h", t)
		}
	case RuleBufferbloat:
		if grade.BufferbloatRank(r.Grade) < 0 {
			return fmt.Errorf("grade %q: want one of %s", r.Grade, strings.Join(grade.BufferbloatLetters(), " "))
		}
	default:
		return fmt.Errorf("kind %q: want outage, reliability, baseline-step or bufferbloat", r.Kind)
	}
	if r.Kind == RuleStep || r.Kind == RuleBufferbloat {
		if t := time.Duration(r.Hold); t < time.Second || t > maxAlertHold {
			return fmt.Errorf("hold %s: want 1s to 7d", t)
		}
	}
	return nil
}

// Alert is one alert's state change: what the log prints, the webhook
// sends and replay lists.
type Alert struct {
	Rule     string            `json:"rule"`
	Severity string            `json:"severity"`
	Kind     string            `json:"kind"`
	Status   string            `json:"status"` // firing or resolved
	Labels   map[string]string `json:"labels"` // alertname, severity, kind, monitor, scope, target, stream
	Summary  string            `json:"summary"`
	StartsNs int64             `json:"starts_ns"`
	EndsNs   int64             `json:"ends_ns,omitempty"` // when resolved
	// Value is the figure that fired it: the outage's seconds, R(L), the
	// step in ms, the episode's added median delay in ms.
	Value float64 `json:"value"`
}

// key identifies an alert among the evaluator's: rule and labels.
func (a *Alert) key() string {
	return a.Labels["alertname"] + "\x00" + a.Labels["stream"] + "\x00" + a.Labels["target"]
}

// Evaluator evaluates alert rules over a monitor's final probes (in send
// order per stream) and its detectors' events. It is pure: the daemon
// feeds it once a second, replay from a store. A firing alert is
// reported once, then resolved once.
type Evaluator struct {
	streams []model.MonitorStream
	monitor string
	rules   []*ruleState
	// per stream: the current run of failed probes
	runStart []int64 // send time of the run's first failed probe
	inRun    []bool
	upAt     []int64 // send time of the answered probe that ended the last run (0: none)
	firstOK  []int64 // send time of the first answered probe (0: none yet)
	sent     []bool
}

type ruleState struct {
	rule    Rule
	streams []int // the streams it watches
	groups  []group
	windows []*window // reliability: per watched stream
}

// group is one alert instance: a set of streams with its labels.
type group struct {
	streams []int
	labels  map[string]string
	what    string
	firing  bool
	start   int64
	hold    int64 // event rules: resolved at this time
	pending bool  // event rules: fired by an event, reported by the next Eval
	fired   int64 // outage: the start of the last outage reported
	// reliability hysteresis: when R(L) was first seen under the
	// requirement (not firing yet) or back at the resolve level (firing);
	// 0: not so at the last evaluation.
	below, clear int64
	value        float64
	summary      string
}

// NewEvaluator prepares rules (checked by Config.Check) for a
// monitor's streams. A rule naming a stream the monitor lacks is an error.
func NewEvaluator(rules []Rule, monitor string, streams []model.MonitorStream) (*Evaluator, error) {
	e := &Evaluator{streams: streams, monitor: monitor, runStart: make([]int64, len(streams)), inRun: make([]bool, len(streams)),
		upAt: make([]int64, len(streams)), firstOK: make([]int64, len(streams)), sent: make([]bool, len(streams))}
	for _, r := range rules {
		rs := &ruleState{rule: r}
		for i, s := range streams {
			if r.Stream == "" || r.Stream == s.Name {
				rs.streams = append(rs.streams, i)
			}
		}
		if len(rs.streams) == 0 {
			return nil, fmt.Errorf("alerts: rule %q: the monitor has no stream named %q", r.Name, r.Stream)
		}
		base := func(extra ...string) map[string]string {
			l := map[string]string{"alertname": r.Name, "severity": r.Severity, "kind": r.Kind}
			if monitor != "" {
				l["monitor"] = monitor
			}
			for i := 0; i+1 < len(extra); i += 2 {
				l[extra[i]] = extra[i+1]
			}
			return l
		}
		switch {
		case r.Kind == RuleOutage && r.Scope == "link":
			what := "the link"
			if r.Stream != "" {
				what = "stream " + r.Stream
			}
			rs.groups = []group{{streams: rs.streams, labels: base("scope", "link"), what: what}}
		case r.Kind == RuleOutage && r.Scope == "target":
			var targets []string
			by := map[string][]int{}
			for _, i := range rs.streams {
				t := streams[i].Target
				if by[t] == nil {
					targets = append(targets, t)
				}
				by[t] = append(by[t], i)
			}
			for _, t := range targets {
				rs.groups = append(rs.groups, group{streams: by[t], labels: base("scope", "target", "target", t), what: "target " + t})
			}
		default:
			for _, i := range rs.streams {
				rs.groups = append(rs.groups, group{streams: []int{i}, labels: base("scope", "stream", "target", streams[i].Target, "stream", streams[i].Name),
					what: "stream " + streams[i].Name})
			}
		}
		if r.Kind == RuleReliability {
			for range rs.streams {
				rs.windows = append(rs.windows, newWindow(int64(r.Window), int64(r.Latency)))
			}
		}
		e.rules = append(e.rules, rs)
	}
	return e, nil
}

// Add feeds one final probe (its fate known: answered in time, or lost).
// Probes of one stream come in send order.
func (e *Evaluator) Add(s model.ProbeSample) {
	i := int(s.Stream)
	if i < 0 || i >= len(e.streams) {
		return
	}
	e.sent[i] = true
	failed := s.Lost || s.Late || s.RTTNs < 0
	if !failed && e.firstOK[i] == 0 {
		e.firstOK[i] = s.SentNs
	}
	if failed {
		if !e.inRun[i] {
			e.inRun[i], e.runStart[i] = true, s.SentNs
		}
	} else if e.inRun[i] {
		e.inRun[i], e.upAt[i] = false, s.SentNs
	}
	for _, rs := range e.rules {
		if rs.windows == nil {
			continue
		}
		if k, ok := slices.BinarySearch(rs.streams, i); ok {
			rs.windows[k].add(s.SentNs, !failed && s.RTTNs <= rs.windows[k].latency)
		}
	}
}

// Event feeds a detector's event, known at atNs (when the daemon wrote it).
func (e *Evaluator) Event(ev model.MonitorEvent, atNs int64) {
	for _, rs := range e.rules {
		r := rs.rule
		var value float64
		switch {
		case r.Kind == RuleStep && ev.Kind == model.EventBaselineStep:
			if slices.Contains(ev.Flags, "probable-artefact") && !r.Artefacts {
				continue
			}
			value = ev.Detail["step_ms"]
			if math.Abs(value) < float64(r.MinStep)/1e6 {
				continue
			}
		case r.Kind == RuleBufferbloat && ev.Kind == model.EventLoaded:
			g := ""
			for _, f := range ev.Flags {
				if v, ok := strings.CutPrefix(f, "grade="); ok {
					g = v
				}
			}
			if g == "" || grade.BufferbloatRank(g) < grade.BufferbloatRank(r.Grade) {
				continue
			}
			value = ev.Detail["added_median_ms"]
		default:
			continue
		}
		for gi := range rs.groups {
			g := &rs.groups[gi]
			if ev.Stream < 0 || !slices.Contains(g.streams, int(ev.Stream)) {
				continue
			}
			g.hold = atNs + int64(r.Hold)
			if !g.firing {
				g.start, g.value, g.summary = ev.StartNs, value, ev.Text
				g.firing, g.pending = true, true
			}
		}
	}
}

// Eval evaluates every rule at atNs (every probe sent before it is final)
// and returns the alerts that started firing or resolved.
func (e *Evaluator) Eval(atNs int64) []Alert {
	var out []Alert
	for _, rs := range e.rules {
		r := rs.rule
		for gi := range rs.groups {
			g := &rs.groups[gi]
			switch r.Kind {
			case RuleOutage:
				// The group's outage is the overlap of its streams' latest
				// loss runs (going on, or ended at upAt): one that began and
				// ended between two evaluations still counts.
				down, start, end, any := true, int64(math.MinInt64), int64(math.MaxInt64), true
				for _, i := range g.streams {
					switch {
					case e.inRun[i]:
						start = max(start, e.runStart[i])
					case e.upAt[i] > e.runStart[i]:
						down = false
						start, end = max(start, e.runStart[i]), min(end, e.upAt[i])
					default:
						any = false // no loss run yet
					}
				}
				if !any {
					// No loss run on a stream since this evaluator began:
					// only an outage restored from an earlier run (Restore)
					// can be firing; it is over at the first answered probe.
					up := int64(math.MaxInt64)
					for _, i := range g.streams {
						if !e.inRun[i] && e.firstOK[i] != 0 {
							up = min(up, e.firstOK[i])
						}
					}
					if g.firing && up != math.MaxInt64 {
						end := max(up, g.start)
						g.firing, g.value = false, float64(end-g.start)/1e9
						g.summary = fmt.Sprintf("outage of %s over after %v (restored after a restart; first probe answered since)", g.what, time.Duration(end-g.start).Round(time.Millisecond))
						out = append(out, g.alert(r, StatusResolved, end))
					}
					continue
				}
				long := min(end, atNs)-start >= int64(r.For)
				if !g.firing && long && start != g.fired {
					g.firing, g.start, g.fired, g.value = true, start, start, float64(min(end, atNs)-start)/1e9
					g.summary = fmt.Sprintf("outage of %s: every probe lost for %v", g.what, time.Duration(min(end, atNs)-start).Round(time.Millisecond))
					out = append(out, g.alert(r, StatusFiring, 0))
				}
				if g.firing && !down {
					end = max(min(end, atNs), g.start)
					// fired: this run is reported (an alert restored after
					// a restart began before it, and covers it).
					g.firing, g.value, g.fired = false, float64(end-g.start)/1e9, start
					g.summary = fmt.Sprintf("outage of %s over after %v", g.what, time.Duration(end-g.start).Round(time.Millisecond))
					out = append(out, g.alert(r, StatusResolved, end))
				}
			case RuleReliability:
				w := rs.windows[gi]
				sent, ok := w.sum(atNs)
				if sent == 0 || sent < uint64(r.MinProbes) {
					continue // too few probes to judge: the state holds
				}
				rv := float64(ok) / float64(sent)
				lbl := func() string {
					return fmt.Sprintf("R(%v) over %v on %s", time.Duration(r.Latency), time.Duration(r.Window), g.what)
				}
				// Hysteresis: fire once R(L) has been under the requirement
				// for For; resolve once it has been at or above the
				// requirement plus the margin for ResolveFor. Between the
				// two levels a firing alert stays firing.
				resolveAt := min(1, r.Reliability+*r.ResolveMargin)
				switch {
				case !g.firing && rv < r.Reliability:
					if g.below == 0 {
						g.below = atNs
					}
					if atNs-g.below >= int64(r.For) {
						g.firing, g.start, g.value, g.below, g.clear = true, g.below, rv, 0, 0
						g.summary = fmt.Sprintf("%s is %.2f %% (%d of %d probes), under the required %.2f %%", lbl(), 100*rv, ok, sent, 100*r.Reliability)
						out = append(out, g.alert(r, StatusFiring, 0))
					}
				case !g.firing:
					g.below = 0
				case rv >= resolveAt:
					if g.clear == 0 {
						g.clear = atNs
					}
					if atNs-g.clear >= int64(r.ResolveFor) {
						g.firing, g.value, g.clear = false, rv, 0
						g.summary = fmt.Sprintf("%s is back to %.2f %% (required %.2f %%, resolved at %.2f %% held for %v)", lbl(), 100*rv,
							100*r.Reliability, 100*resolveAt, time.Duration(r.ResolveFor))
						out = append(out, g.alert(r, StatusResolved, atNs))
					}
				default:
					g.clear = 0
				}
			case RuleStep, RuleBufferbloat:
				if g.pending {
					g.pending = false
					out = append(out, g.alert(r, StatusFiring, 0))
				}
				if g.firing && atNs >= g.hold {
					g.firing = false
					g.summary = fmt.Sprintf("no %s on %s for %v", r.Kind, g.what, time.Duration(r.Hold))
					out = append(out, g.alert(r, StatusResolved, atNs))
				}
			}
		}
	}
	return out
}

// Firing lists the alerts firing now.
func (e *Evaluator) Firing() []Alert {
	var out []Alert
	for _, rs := range e.rules {
		for gi := range rs.groups {
			if g := &rs.groups[gi]; g.firing {
				out = append(out, g.alert(rs.rule, StatusFiring, 0))
			}
		}
	}
	return out
}

func (g *group) alert(r Rule, status string, end int64) Alert {
	l := make(map[string]string, len(g.labels))
	for k, v := range g.labels {
		l[k] = v
	}
	return Alert{Rule: r.Name, Severity: r.Severity, Kind: r.Kind, Status: status, Labels: l, Summary: g.summary,
		StartsNs: g.start, EndsNs: end, Value: g.value}
}

// window counts a stream's probes and those within L over a sliding
// window, in at most maxWindowBucket buckets (at least 1 s each) with
// running totals: memory is bounded whatever the rate, an evaluation costs
// O(1), and the window's edge is exact to a bucket.
type window struct {
	spanNs, bucketNs, latency int64
	head                      int64 // newest bucket; the ring holds head-len+1 … head
	started                   bool
	sent, ok                  []uint32
	tSent, tOK                uint64
}

func newWindow(spanNs, latency int64) *window {
	b := max(int64(time.Second), (spanNs+maxWindowBucket-1)/maxWindowBucket)
	n := int(spanNs/b) + 2
	return &window{spanNs: spanNs, bucketNs: b, latency: latency, sent: make([]uint32, n), ok: make([]uint32, n)}
}

func (w *window) slot(b int64) int {
	n := int64(len(w.sent))
	return int(((b % n) + n) % n)
}

// advance makes b the newest bucket, emptying the slots it reuses.
func (w *window) advance(b int64) {
	if !w.started {
		w.head, w.started = b, true
		return
	}
	if b <= w.head {
		return
	}
	for x := max(w.head+1, b-int64(len(w.sent))+1); x <= b; x++ {
		i := w.slot(x)
		w.tSent -= uint64(w.sent[i])
		w.tOK -= uint64(w.ok[i])
		w.sent[i], w.ok[i] = 0, 0
	}
	w.head = b
}

func (w *window) add(ns int64, ok bool) {
	b := units.FloorDiv(ns, w.bucketNs)
	w.advance(b)
	if b <= w.head-int64(len(w.sent)) {
		return // older than the ring
	}
	i := w.slot(b)
	w.sent[i]++
	w.tSent++
	if ok {
		w.ok[i]++
		w.tOK++
	}
}

// sum counts the buckets of the window ending at atNs (no probe sent
// before atNs is added after).
func (w *window) sum(atNs int64) (sent, ok uint64) {
	if !w.started {
		return 0, 0
	}
	w.advance(units.FloorDiv(atNs-1, w.bucketNs))
	sent, ok = w.tSent, w.tOK
	lo := units.FloorDiv(atNs-w.spanNs, w.bucketNs)
	for x := w.head - int64(len(w.sent)) + 1; x < lo; x++ {
		i := w.slot(x)
		sent -= uint64(w.sent[i])
		ok -= uint64(w.ok[i])
	}
	return sent, ok
}

// Format is the alert's log line.
func Format(a Alert) string {
	at := a.StartsNs
	if a.Status == StatusResolved {
		at = a.EndsNs
	}
	return fmt.Sprintf("alert %s [%s] %s at %s: %s", a.Rule, a.Severity, strings.ToUpper(a.Status),
		time.Unix(0, at).UTC().Format(time.RFC3339), a.Summary)
}
