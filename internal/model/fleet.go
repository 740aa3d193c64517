package model

// FleetSchema names the JSON schema of FleetReport.
const FleetSchema = "sonde.fleet/v1"

// FleetReport is `sonde fleet report`: many monitors of one store over a
// range, judged against requirement profiles, with the outages several
// monitors saw at once grouped as upstream events (docs/fleet.md).
type FleetReport struct {
	Schema string `json:"schema"`
	FromNs int64  `json:"from_ns"`
	ToNs   int64  `json:"to_ns"`
	// Filter is the label filter the monitors were chosen by ("" all).
	Filter   string               `json:"filter,omitempty"`
	Profiles []RequirementProfile `json:"profiles"`
	// UpstreamMin and UpstreamShare are the grouping rule: an outage seen
	// by at least UpstreamMin monitors at once, or by at least
	// UpstreamShare of a label group's monitors (groups of two or more), is
	// one upstream event.
	UpstreamMin   int                  `json:"upstream_min"`
	UpstreamShare float64              `json:"upstream_share"`
	Monitors      []FleetMonitor       `json:"monitors"`
	Groups        []FleetGroup         `json:"groups,omitempty"`
	Upstream      []FleetUpstreamEvent `json:"upstream,omitempty"`
	// Source says what the figures were read from (hourly aggregates,
	// minute rollups) and how many rows of each.
	Source string   `json:"source"`
	Notes  []string `json:"notes,omitempty"`
}

// FleetMonitor is one monitor's summary over the range.
type FleetMonitor struct {
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels,omitempty"`
	Streams int               `json:"streams"`
	Sent    uint64            `json:"sent"`
	Lost    uint64            `json:"lost"` // includes the late ones
	Late    uint64            `json:"late"`
	// RTT over every stream of the monitor (percentiles from the 2 %
	// histogram bins, within 1 %).
	RTT      DelayStats      `json:"rtt"`
	Verdicts []FleetVerdict  `json:"verdicts"`
	Outages  []FleetOutage   `json:"outages,omitempty"`
	Grades   map[string]int  `json:"grades,omitempty"` // loaded episodes per bufferbloat grade
	Worst    string          `json:"worst_grade,omitempty"`
	Cause    string          `json:"cause"` // Cause…
	Line     FleetOutageTime `json:"line"`
	Up       FleetOutageTime `json:"upstream"`
}

// Answers to "was it their line or upstream?" for one monitor.
const (
	CauseNone     = "none"     // no outage in range
	CauseLine     = "line"     // every outage was its own
	CauseUpstream = "upstream" // every outage was part of an upstream event
	CauseBoth     = "both"
)

// FleetOutageTime sums a monitor's outages of one cause.
type FleetOutageTime struct {
	Count   int     `json:"count"`
	Seconds float64 `json:"seconds"`
}

// FleetVerdict is one profile judged for a monitor or a group: over the
// whole range (R with its 95 % interval) and over every aligned hour.
type FleetVerdict struct {
	Profile string      `json:"profile"`
	Whole   Reliability `json:"whole"`
	Verdict string      `json:"verdict"`
	// Hours judged (with at least the minimum of probes), those whose
	// upper bound missed the requirement, the worst hour and its start.
	Hours       int         `json:"hours"`
	FailHours   int         `json:"fail_hours"`
	WorstHour   Reliability `json:"worst_hour"`
	WorstHourNs int64       `json:"worst_hour_ns"`
	// Approx: the threshold was not counted exactly by the rollups; R is
	// a lower bound read from the histogram bins wholly below it.
	Approx bool `json:"approx,omitempty"`
}

// FleetOutage is one outage a monitor stored (link or target scope), and
// whether it belongs to an upstream event.
type FleetOutage struct {
	StartNs  int64  `json:"start_ns"`
	EndNs    int64  `json:"end_ns"`
	Scope    string `json:"scope"`            // link, target
	Target   string `json:"target,omitempty"` // the target of a target outage
	Upstream int    `json:"upstream"`         // index+1 of its upstream event; 0: its line
}

// FleetGroup is the monitors sharing one label value.
type FleetGroup struct {
	Label    string         `json:"label"`
	Value    string         `json:"value"`
	Monitors int            `json:"monitors"`
	Sent     uint64         `json:"sent"`
	Lost     uint64         `json:"lost"`
	Verdicts []FleetVerdict `json:"verdicts"`
	// Failing counts, per profile (Verdicts' order), the monitors whose
	// verdict is FAIL.
	Failing []int `json:"failing"`
}

// FleetUpstreamEvent is an outage many monitors saw at once.
type FleetUpstreamEvent struct {
	StartNs  int64    `json:"start_ns"`
	EndNs    int64    `json:"end_ns"`
	Monitors []string `json:"monitors"`
	Targets  []string `json:"targets,omitempty"` // empty: whole links
	// Rule says why it is upstream: "≥ N monitors" or "P % of label=value".
	Rule string `json:"rule"`
}
