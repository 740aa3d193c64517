package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/alert"
	"github.com/sonde-project/sonde/internal/units"
)

// The alert engine's own tests are internal/alert's; these check the
// config file's "alerts" section as a monitor reads it.

func TestAlertConfigErrors(t *testing.T) {
	for _, tc := range []struct{ alerts, want string }{
		{`{"rules": [{"name": "x", "kind": "nope"}]}`, `kind "nope"`},
		{`{"rules": [{"kind": "outage"}]}`, `rule "#1": name`},
		{`{"rules": [{"name": "a b", "kind": "outage"}]}`, `name: want`},
		{`{"rules": [{"name": "x", "kind": "outage"}, {"name": "x", "kind": "outage"}]}`, `given twice`},
		{`{"rules": [{"name": "x", "kind": "outage", "scope": "planet"}]}`, `scope "planet"`},
		{`{"rules": [{"name": "x", "kind": "outage", "for": "48h"}]}`, `for 48h0m0s`},
		{`{"rules": [{"name": "x", "kind": "outage", "grade": "F"}]}`, `grade: not a field of a outage rule`},
		{`{"rules": [{"name": "x", "kind": "reliability"}]}`, `latency 0s`},
		{`{"rules": [{"name": "x", "kind": "reliability", "latency": "200ms", "reliability": 98}]}`, `reliability 98: want a fraction`},
		{`{"rules": [{"name": "x", "kind": "reliability", "latency": "200ms", "reliability": 0.98, "window": "10s"}]}`, `window 10s`},
		{`{"rules": [{"name": "x", "kind": "reliability", "profile": "voip"}]}`, `profile "voip": no such`},
		{`{"rules": [{"name": "x", "kind": "reliability", "profile": "price", "latency": "1s"}]}`, `either profile`},
		{`{"rules": [{"name": "x", "kind": "reliability", "latency": "200ms", "reliability": 0.98, "resolve_margin": 0.05}]}`, `resolve_margin 0.05: want 0 to 0.02`},
		{`{"rules": [{"name": "x", "kind": "reliability", "latency": "200ms", "reliability": 0.98, "resolve_margin": -0.01}]}`, `resolve_margin -0.01`},
		{`{"rules": [{"name": "x", "kind": "reliability", "latency": "200ms", "reliability": 0.98, "resolve_for": "0.5s"}]}`, `resolve_for 500ms`},
		{`{"rules": [{"name": "x", "kind": "reliability", "latency": "200ms", "reliability": 0.98, "for": "25h"}]}`, `for 25h0m0s`},
		{`{"rules": [{"name": "x", "kind": "outage", "resolve_for": "1m"}]}`, `resolve_for: not a field of a outage rule`},
		{`{"rules": [{"name": "x", "kind": "baseline-step", "for": "1m"}]}`, `for: not a field of a baseline-step rule`},
		{`{"rules": [{"name": "x", "kind": "bufferbloat", "grade": "E"}]}`, `grade "E"`},
		{`{"rules": [{"name": "x", "kind": "baseline-step", "hold": "0.1s"}]}`, `hold 100ms`},
		{`{"rules": [{"name": "x", "kind": "outage", "stream": "nosuch/stamp"}]}`, `no stream named "nosuch/stamp"`},
		{`{"webhook": "ftp://x/"}`, `alerts: webhook: "ftp://x/"`},
		{`{"webhook_timeout": "5m"}`, `webhook_timeout 5m0s`},
		{`{"rules": [{"name": "x", "kind": "outage", "frequency": 1}]}`, `unknown field "frequency"`},
	} {
		c, err := ParseConfig(strings.NewReader(`{"targets": ["stamp://198.18.0.1"], "alerts": ` + tc.alerts + `}`))
		if err == nil {
			c.Defaults()
			_, err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q", tc.alerts, err, tc.want)
		}
	}
}

func TestAlertConfigDefaults(t *testing.T) {
	c := Config{Targets: []string{"stamp://198.18.0.1"}, Name: "m"}
	c.Defaults()
	p, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Alerts.Rules) != 1 || p.Alerts.Rules[0].Kind != alert.RuleOutage || p.Alerts.Rules[0].Scope != "link" || p.Alerts.Rules[0].For != units.Duration(10*time.Second) {
		t.Fatalf("default rules %+v", p.Alerts.Rules)
	}
	// An empty list means no rule; the caller's config is not changed.
	c.Alerts = &alert.Config{Rules: []alert.Rule{}}
	if p, err = c.Validate(); err != nil || len(p.Alerts.Rules) != 0 {
		t.Fatalf("%+v %v", p.Alerts, err)
	}
	c.Alerts = &alert.Config{Rules: []alert.Rule{{Name: "o", Kind: alert.RuleOutage}}}
	if p, err = c.Validate(); err != nil || p.Alerts.Rules[0].Severity != "warning" || c.Alerts.Rules[0].Severity != "" {
		t.Fatalf("%+v %+v %v", p.Alerts, c.Alerts, err)
	}
}
