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
)

// LoadStates lists the states a report breaks results down by, in order.
var LoadStates = [...]LoadState{LoadIdle, LoadUp, LoadDown, LoadBoth, LoadUnknown}

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
	LatenessNs int32     `json:"lateness_ns"`
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
