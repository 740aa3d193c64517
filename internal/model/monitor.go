package model

// The vocabulary of `sonde monitor` (docs/monitor.md): what the probers
// produce, the interface counters, the events the analysis finds and the
// report it assembles. The store keeps these rows; the daemon, `monitor
// report` and the fleet store read them back, so they are defined once here.

// MonitorSchema names the JSON schema of MonitorReport.
const MonitorSchema = "sonde.monitor/v1"

// ProbeKind is how a probe was sent.
type ProbeKind string

const (
	ProbeSTAMP ProbeKind = "stamp" // RFC 8762 to a sonde server or any STAMP/TWAMP-Light reflector
	ProbeICMP  ProbeKind = "icmp"  // ICMP echo
	ProbeTCP   ProbeKind = "tcp"   // TCP connect (SYN to SYN-ACK)
)

// LoadState labels a probe with the access link's load at its send time,
// from the interface counters against the link's capacity.
type LoadState uint8

const (
	LoadUnknown LoadState = iota // no counters (no --interface) or not enough of them
	LoadIdle
	LoadUp   // uplink saturated
	LoadDown // downlink saturated
	LoadBoth
	// LoadLoaded: traffic flows but no direction is saturated (a direction
	// between the idle and saturated thresholds, e.g. a steady 50 % of its
	// capacity, the other idle or likewise). Added after the others, so the
	// stored byte of every older row keeps its meaning.
	LoadLoaded
)

// LoadStates lists the states a report breaks results down by, in order.
// Its length bounds every per-state array; a stored byte beyond it reads
// as LoadUnknown.
var LoadStates = [...]LoadState{LoadIdle, LoadLoaded, LoadUp, LoadDown, LoadBoth, LoadUnknown}

func (s LoadState) String() string {
	switch s {
	case LoadIdle:
		return "idle"
	case LoadUp:
		return "up-saturated"
	case LoadDown:
		return "down-saturated"
	case LoadBoth:
		return "both-saturated"
	case LoadLoaded:
		return "loaded"
	}
	return "unknown"
}

// ProbeSample is one probe of one stream (target × kind × DSCP). Times are
// Unix nanoseconds; durations nanoseconds. A lost probe has RTTNs < 0; a
// reply that came after the timeout keeps Lost true and sets Late with
// its RTT, so R(L) counts it as a failure and the report can still show it.
type ProbeSample struct {
	Stream int32  `json:"stream"` // index into the monitor's stream list
	Seq    uint32 `json:"seq"`
	// SentNs is the actual send time (the one written into the packet);
	// LatenessNs how far after its scheduled deadline it left.
	SentNs     int64     `json:"sent_ns"`
	LatenessNs int64     `json:"lateness_ns"`
	RTTNs      int64     `json:"rtt_ns"`           // -1: lost
	FwdNs      int64     `json:"fwd_ns,omitempty"` // one-way delays where the reflector timestamps (STAMP), else 0
	RevNs      int64     `json:"rev_ns,omitempty"`
	Lost       bool      `json:"lost,omitempty"`
	Late       bool      `json:"late,omitempty"` // answered after the timeout (RTTNs holds the late RTT)
	Load       LoadState `json:"load"`
}

// MonitorStream names what one probe stream measures.
type MonitorStream struct {
	Target string    `json:"target"` // host:port as configured
	Kind   ProbeKind `json:"kind"`
	DSCP   int       `json:"dscp"`
	Name   string    `json:"name"` // "target/kind[/dscp name]"
}

// CounterSample is one reading of an interface's byte counters, already
// made monotonic (64-bit, wrap- and reset-safe) by the reader.
type CounterSample struct {
	TimeNs  int64  `json:"time_ns"`
	RxBytes uint64 `json:"rx_bytes"`
	TxBytes uint64 `json:"tx_bytes"`
}

// EventKind names a monitor event.
type EventKind string

const (
	EventOutage       EventKind = "outage"        // every probe of a target (or of all targets: the link) lost
	EventBaselineStep EventKind = "baseline-step" // the per-minute low percentile moved and stayed
	EventLoaded       EventKind = "loaded"        // a loaded episode: added delay, grade, inferred buffer, queue class
	EventRestart      EventKind = "restart"       // the daemon started (again): the gap before it
	EventStorage      EventKind = "storage"       // the store failed (disk full, read-only); probing went on
	EventCounters     EventKind = "counters"      // counter reset, wrap, or stale driver found
	EventClock        EventKind = "clock"         // the wall clock stepped
)

// MonitorEvent is one event; Detail holds the kind's figures.
type MonitorEvent struct {
	Kind    EventKind          `json:"kind"`
	StartNs int64              `json:"start_ns"`
	EndNs   int64              `json:"end_ns"`
	Stream  int32              `json:"stream"` // -1: every stream (the link)
	Text    string             `json:"text"`   // one line a person reads
	Detail  map[string]float64 `json:"detail,omitempty"`
	Flags   []string           `json:"flags,omitempty"` // e.g. "probable-artefact"
}

// RollupBin is one non-empty bin of a rollup's delay histogram. The bins
// are fixed and log-spaced (internal/reliability: 2 % wide from 1 µs to
// 1000 s, bin 0 below, the last above), so rollups of any age merge.
type RollupBin struct {
	Bin uint16 `json:"bin"`
	N   uint32 `json:"n"`
}

// RollupLoad is one load state's share of a rollup minute.
type RollupLoad struct {
	Load LoadState `json:"load"`
	Sent uint32    `json:"sent"`
	Lost uint32    `json:"lost"` // includes the late ones
	// Within counts answered, in-time probes with RTT ≤ each threshold of
	// the rollup's threshold list (MonitorRollup.Within's order).
	Within []uint32 `json:"within"`
}

// MonitorRollup is one stream's minute: what a report over years reads
// instead of raw probes. A probe belongs to the minute of its send time;
// a minute is final only once its last probe's timeout has passed, so a
// late reply is counted late, never lost-then-answered.
type MonitorRollup struct {
	Stream   int32  `json:"stream"`
	MinuteNs int64  `json:"minute_ns"` // start of the minute, Unix ns, a multiple of 60 s
	Sent     uint32 `json:"sent"`
	Lost     uint32 `json:"lost"` // includes the late ones
	Late     uint32 `json:"late"`
	// RTT of answered, in-time probes: sum and sum of squares (ns, ns²)
	// give the exact mean and SD, min and max are exact, Bins the rest.
	SumNs   float64     `json:"sum_ns"`
	SumSqNs float64     `json:"sum_sq_ns"`
	MinNs   int64       `json:"min_ns"`
	MaxNs   int64       `json:"max_ns"`
	Bins    []RollupBin `json:"bins"`
	// One-way delay histograms where the reflector timestamps (STAMP).
	FwdBins []RollupBin `json:"fwd_bins,omitempty"`
	RevBins []RollupBin `json:"rev_bins,omitempty"`
	// ThresholdsNs lists the thresholds L the rollup counted exactly;
	// Within[i] counts answered, in-time probes with RTT ≤ ThresholdsNs[i].
	ThresholdsNs []int64      `json:"thresholds_ns"`
	Within       []uint32     `json:"within"`
	ByLoad       []RollupLoad `json:"by_load,omitempty"` // only the states seen
}

// DelayStats describes a delay distribution (ns). Percentiles are nearest
// rank over the raw values, or the geometric middle of a 2 %-wide
// histogram bin (within 1 %) when Approx is set.
type DelayStats struct {
	N      uint64  `json:"n"`
	MeanNs float64 `json:"mean_ns"`
	SDNs   float64 `json:"sd_ns"`
	MinNs  int64   `json:"min_ns"`
	P1Ns   int64   `json:"p1_ns"`
	P5Ns   int64   `json:"p5_ns"`
	P25Ns  int64   `json:"p25_ns"`
	P50Ns  int64   `json:"p50_ns"` // the median
	P75Ns  int64   `json:"p75_ns"`
	P95Ns  int64   `json:"p95_ns"`
	P99Ns  int64   `json:"p99_ns"`
	P999Ns int64   `json:"p999_ns"`
	MaxNs  int64   `json:"max_ns"`
	Approx bool    `json:"approx,omitempty"`
}

// Reliability is R(L) = OK/Sent for one threshold, with the lower end of
// its 95 % confidence interval (Wilson score; 1 − 3/n with no failure).
type Reliability struct {
	LNs   int64   `json:"l_ns"`
	Sent  uint64  `json:"sent"`
	OK    uint64  `json:"ok"` // answered in time with RTT ≤ L
	R     float64 `json:"r"`
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
}

// WindowReliability is R(L) over sliding windows of one length (stride one
// minute): the worst window and the distribution of window values.
type WindowReliability struct {
	WindowNs int64 `json:"window_ns"`
	LNs      int64 `json:"l_ns"`
	Windows  int   `json:"windows"` // windows with at least the minimum of probes
	// Worst is the window with the lowest R (ties: the earliest).
	Worst        Reliability `json:"worst"`
	WorstStartNs int64       `json:"worst_start_ns"`
	// Distribution of window R values (nearest rank).
	P1  float64 `json:"p1"`
	P5  float64 `json:"p5"`
	P25 float64 `json:"p25"`
	P50 float64 `json:"p50"`
	Max float64 `json:"max"`
}

// LoadReliability is R(L) restricted to probes sent in one load state.
type LoadReliability struct {
	Load        string        `json:"load"`
	Sent        uint64        `json:"sent"`
	Reliability []Reliability `json:"reliability"`
}

// Verdicts of a requirement profile.
const (
	VerdictPass         = "PASS"
	VerdictFail         = "FAIL"
	VerdictInsufficient = "INSUFFICIENT" // the confidence interval straddles the requirement
)

// RequirementProfile is a latency reliability requirement: at least
// Reliability of probes answered within LatencyNs.
type RequirementProfile struct {
	Name        string  `json:"name"`
	LatencyNs   int64   `json:"latency_ns"`
	Reliability float64 `json:"reliability"` // a fraction, e.g. 0.99
	Source      string  `json:"source,omitempty"`
}

// ProfileVerdict is one profile judged over the whole range (WindowNs 0)
// or over every window of one length: PASS when the lower bound reaches
// the requirement (every window), FAIL when the upper bound is below it
// (any window), else INSUFFICIENT.
type ProfileVerdict struct {
	Profile      string  `json:"profile"`
	WindowNs     int64   `json:"window_ns"`
	Verdict      string  `json:"verdict"`
	Pass         int     `json:"pass"`
	Fail         int     `json:"fail"`
	Insufficient int     `json:"insufficient"`
	WorstR       float64 `json:"worst_r"`
}

// StreamReport is the analysis of one stream over the report's range.
type StreamReport struct {
	Stream int32       `json:"stream"`
	Sent   uint64      `json:"sent"`
	Lost   uint64      `json:"lost"` // includes the late ones
	Late   uint64      `json:"late"`
	RTT    DelayStats  `json:"rtt"`
	Fwd    *DelayStats `json:"fwd,omitempty"`
	Rev    *DelayStats `json:"rev,omitempty"`
	// IdleBaselineNs is the median RTT of idle probes (or the p5 of all
	// probes when no probe was labelled idle): the loaded episodes'
	// reference.
	IdleBaselineNs int64               `json:"idle_baseline_ns"`
	Reliability    []Reliability       `json:"reliability"`
	Windows        []WindowReliability `json:"windows"`
	ByLoad         []LoadReliability   `json:"by_load"`
	Verdicts       []ProfileVerdict    `json:"verdicts,omitempty"`
}

// MonitorReport is the analysis of a time range (docs/monitor.md).
type MonitorReport struct {
	Schema   string               `json:"schema"`
	FromNs   int64                `json:"from_ns"`
	ToNs     int64                `json:"to_ns"`
	Source   string               `json:"source"`          // "raw" (exact) or "rollups"
	Notes    []string             `json:"notes,omitempty"` // the approximations made, in words
	Streams  []MonitorStream      `json:"streams"`
	Stats    []StreamReport       `json:"stats"`
	Profiles []RequirementProfile `json:"profiles,omitempty"`
	Events   []MonitorEvent       `json:"events,omitempty"`
	// Monitor names the monitor the report read (`sonde monitor report`).
	Monitor string `json:"monitor,omitempty"`
	// RawFromNs is where raw samples begin: minutes before it were read
	// from rollups (equal to FromNs: raw throughout; ToNs: rollups only).
	RawFromNs int64 `json:"raw_from_ns,omitempty"`
	// ThresholdsNs are the thresholds L the report counted exactly (the
	// order of SeriesPoint.Within); set with the dashboard's detail.
	ThresholdsNs []int64 `json:"thresholds_ns,omitempty"`
	// Daily is seed 001's Table 19 per stream and UTC day.
	Daily []DailyStats `json:"daily,omitempty"`
	// Series is the time series the HTML report plots, per stream.
	Series []MonitorSeries `json:"series,omitempty"`
	// CDFs are RTT distributions per stream (Load "all") and per load
	// state (raw samples only: rollups keep no histogram per state).
	CDFs []MonitorCDF `json:"cdfs,omitempty"`
}

// DailyStats is one stream's UTC day: seed 001's Table 19 (sent, dropped,
// median, SD, variance) with R(L) at the report's thresholds.
type DailyStats struct {
	Stream      int32         `json:"stream"`
	DayNs       int64         `json:"day_ns"` // start of the UTC day, Unix ns
	Sent        uint64        `json:"sent"`
	Lost        uint64        `json:"lost"` // includes the late ones
	Late        uint64        `json:"late"`
	MeanNs      float64       `json:"mean_ns"`
	SDNs        float64       `json:"sd_ns"`
	P50Ns       int64         `json:"p50_ns"` // from 2 %-wide histogram bins (within 1 %)
	P99Ns       int64         `json:"p99_ns"`
	Reliability []Reliability `json:"reliability"`
}

// MonitorSeries is one stream's per-bucket delay and loss over the range:
// buckets of whole minutes, as many minutes as keep the series under a
// couple of thousand points.
type MonitorSeries struct {
	Stream   int32         `json:"stream"`
	BucketNs int64         `json:"bucket_ns"`
	Points   []SeriesPoint `json:"points"`
}

// SeriesPoint is one bucket: probes sent and lost, and the p50 and p99 of
// the answered ones (histogram bins, within 1 %; 0 when none answered).
type SeriesPoint struct {
	StartNs int64  `json:"start_ns"`
	Sent    uint32 `json:"sent"`
	Lost    uint32 `json:"lost"`
	P50Ns   int64  `json:"p50_ns"`
	P99Ns   int64  `json:"p99_ns"`
	// The dashboard's detail (query.Request.Detail), absent otherwise:
	// SmokeNs is the answered RTTs' distribution at SmokeQuantiles (the
	// smoke graph's bands; exact min and max, the rest from the 2 % bins);
	// Within counts answered, in-time probes with RTT ≤ each of the
	// report's thresholds (MonitorReport.ThresholdsNs); Load counts the
	// probes sent in each load state, in LoadStates' order.
	SmokeNs []int64  `json:"smoke_ns,omitempty"`
	Within  []uint32 `json:"within,omitempty"`
	Load    []uint32 `json:"load,omitempty"`
}

// SmokeQuantiles are the ranks of SeriesPoint.SmokeNs: min, p10, p25,
// median, p75, p90 and max, the bands a smoke graph shades.
var SmokeQuantiles = [...]float64{0, 0.10, 0.25, 0.50, 0.75, 0.90, 1}

// MonitorCDF is an empirical RTT distribution: points (RTT, fraction of
// answered probes at or below it) at histogram bin edges.
type MonitorCDF struct {
	Stream int32      `json:"stream"`
	Load   string     `json:"load"` // "all" or a load state's name
	N      uint64     `json:"n"`
	Points []CDFPoint `json:"points"`
}

// CDFPoint is one point of a MonitorCDF.
type CDFPoint struct {
	RTTNs    int64   `json:"rtt_ns"`
	Fraction float64 `json:"fraction"`
}
