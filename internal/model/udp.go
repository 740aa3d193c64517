package model

import "time"

// UDPSchemaVersion names the JSON schema of UDPResult (docs/udp.md).
const UDPSchemaVersion = "sonde.udp/v1"

// UDPResult is one run of `sonde udp`: one or more simultaneous STAMP probe
// flows (several for a QoS classes run), each reported per direction.
type UDPResult struct {
	Schema string    `json:"schema"`
	ID     string    `json:"id"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Client Endpoint  `json:"client"`
	Server Endpoint  `json:"server"`
	Config UDPConfig `json:"config"`
	Flows  []UDPFlow `json:"flows"`
	// Errors lists what failed; everything measured before a failure is kept.
	Errors []string `json:"errors,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// UDPConfig records what was asked for.
type UDPConfig struct {
	Server      string  `json:"server"`
	Embedded    bool    `json:"embedded,omitempty"`
	Profile     string  `json:"profile,omitempty"` // "voice" or empty
	IntervalUs  float64 `json:"interval_us"`
	PacketBytes int     `json:"packet_bytes"` // UDP payload of each probe
	DurationS   float64 `json:"duration_s"`
	TimeoutS    float64 `json:"loss_timeout_s"`
	DSCP        int     `json:"dscp"`
	ECN         int     `json:"ecn"`
	Classes     []Class `json:"classes,omitempty"`
}

// UDPFlow is one STAMP session: the probes of one class (DSCP, ECN, port).
type UDPFlow struct {
	Name string `json:"name"`
	DSCP int    `json:"dscp"`
	ECN  int    `json:"ecn"`
	// ReflectorAddr is the reflector's UDP address used.
	ReflectorAddr string `json:"reflector_addr"`
	// Sent counts probes sent; Replies counts replies received in time.
	Sent    int `json:"sent"`
	Replies int `json:"replies"`
	// ReflectorFormat is the packet format the reflector answered in:
	// "stamp" (RFC 8762; SSID echoed or RFC 8972 TLVs reflected),
	// "twamp-light" (RFC 5357 §4.2.1 unauthenticated: 41 octets and
	// padding, no TLVs), "stamp-or-twamp-light" (44-octet replies that
	// read the same in both), "mixed"; empty without replies.
	ReflectorFormat string `json:"reflector_format,omitempty"`
	// UnparsedReplies counts the datagrams from the reflector that were
	// not a reflection of a probe in either format, by size and reason.
	UnparsedReplies []UnparsedReplies `json:"unparsed_replies,omitempty"`
	// RTTMs is (t4 − t1) − (t3 − t2) of every reply.
	RTTMs        Stats     `json:"rtt_ms"`
	RTTHistogram []HistBin `json:"rtt_histogram,omitempty"`
	// Clock is the reflector clock's offset as estimated from the probes
	// (metrics.md §3), or zero with SharedClock set.
	Clock    ClockOffset       `json:"clock"`
	Forward  UDPDirectionStats `json:"forward"`  // client → reflector
	Backward UDPDirectionStats `json:"backward"` // reflector → client
	// ScheduleErrorUs is how late each probe left against its absolute
	// deadline (µs, send timestamp − deadline).
	ScheduleErrorUs Stats `json:"schedule_error_us"`
	// KernelTimestamps is true when receive times came from SO_TIMESTAMPNS.
	KernelTimestamps bool `json:"kernel_timestamps"`
	// Marks reports whether the DSCP/ECN marks arrived unchanged.
	Marks *MarkCheck `json:"marks,omitempty"`
	// Voice is the E-model estimate (voice profile only).
	Voice *VoiceQuality `json:"voice,omitempty"`
	// Errors of this flow (e.g. reflector gone mid-run).
	Errors []string `json:"errors,omitempty"`
}

// UnparsedReplies counts datagrams of one size from the reflector that
// could not be read as a reply; Bytes 0 stands for other sizes once eight
// kinds were seen.
type UnparsedReplies struct {
	Bytes  int    `json:"bytes"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

// UDPDirectionStats is what one direction of a probe flow did.
type UDPDirectionStats struct {
	Direction string `json:"direction"` // "forward" or "backward"
	// Sent counts packets sent in this direction (for backward: packets the
	// reflector received and reflected). Received counts first arrivals in
	// time; Lost those not arrived within the loss timeout; Late those that
	// arrived after it (also counted in Lost); Duplicates extra copies.
	Sent       int     `json:"sent"`
	Received   int     `json:"received"`
	Lost       int     `json:"lost"`
	LossPct    float64 `json:"loss_pct"`
	Late       int     `json:"late"`
	Duplicates int     `json:"duplicates"`
	// Known is false when the direction's loss could not be split (the
	// reflector's report was missing): Lost then counts round-trip losses.
	Known bool `json:"known"`
	// OWDMs is the one-way delay; an estimate unless Clock.SharedClock.
	OWDMs        Stats     `json:"owd_ms"`
	OWDEstimated bool      `json:"owd_estimated"`
	OWDHistogram []HistBin `json:"owd_histogram,omitempty"`
	// JitterMs is the RFC 3550 interarrival jitter at the end of the run.
	JitterMs float64 `json:"jitter_ms"`
	// IPDVMs is the RFC 3393 IPDV distribution, IPDVAbsMs its magnitude.
	IPDVMs    Stats `json:"ipdv_ms"`
	IPDVAbsMs Stats `json:"ipdv_abs_ms"`
	// PDVMs is the RFC 5481 PDV distribution (OWD − min OWD).
	PDVMs       Stats       `json:"pdv_ms"`
	Reordering  Reordering  `json:"reordering"`
	LossPattern LossPattern `json:"loss_pattern"`
}

// ClockOffset is the reflector clock minus the client clock.
type ClockOffset struct {
	// SharedClock is true when both ends read the same clock (same host or
	// lab namespaces): one-way delays are then measured, not estimated.
	SharedClock bool `json:"shared_clock"`
	// OffsetMs is the estimated offset at the start of the run; DriftPPM its
	// linear drift (µs per s).
	OffsetMs float64 `json:"offset_ms"`
	DriftPPM float64 `json:"drift_ppm"`
	// UncertaintyMs bounds the offset error: at least half the minimum RTT,
	// because the split of a round trip between the directions is unknown.
	UncertaintyMs float64 `json:"uncertainty_ms"`
	// Samples used (the lowest-RTT fraction of each window).
	Samples int `json:"samples"`
	// Steps counts clock steps detected during the run.
	Steps int    `json:"steps,omitempty"`
	Note  string `json:"note,omitempty"`
}

// Reordering is RFC 4737 packet reordering of one direction.
type Reordering struct {
	Received  int     `json:"received"`
	Reordered int     `json:"reordered"`
	RatioPct  float64 `json:"ratio_pct"`
	// ExtentPackets is the reordering extent of each reordered packet.
	ExtentPackets Stats `json:"extent_packets"`
	MaxExtent     int   `json:"max_extent"`
}

// LossPattern is the RFC 3357 loss-distance and loss-period statistics of
// one direction.
type LossPattern struct {
	Packets int `json:"packets"`
	Lost    int `json:"lost"`
	// LossDistance summarises the distance (in sequence numbers) from each
	// lost packet to the previous lost one (the first loss is excluded).
	LossDistance Stats `json:"loss_distance"`
	// Periods counts loss periods (bursts of consecutive losses).
	Periods            int        `json:"loss_periods"`
	PeriodLength       Stats      `json:"loss_period_length"`
	PeriodLengthCounts []CountBin `json:"loss_period_length_counts,omitempty"`
	InterPeriodLength  Stats      `json:"inter_loss_period_length"`
	NoticeableDelta    int        `json:"noticeable_delta"`
	NoticeableLossRate float64    `json:"noticeable_loss_rate"`
}

// HistBin is one bin [Lo, Hi) of a histogram; units from the field.
type HistBin struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Count int     `json:"count"`
}

// CountBin counts occurrences of an integer value.
type CountBin struct {
	Value int `json:"value"`
	Count int `json:"count"`
}

// MarkCheck compares the DSCP/ECN a flow sent with what arrived.
type MarkCheck struct {
	SentDSCP int `json:"sent_dscp"`
	SentECN  int `json:"sent_ecn"`
	// AtReflector is what the reflector saw (CoS TLV DSCP2/ECN), nil when
	// the reflector did not report it.
	AtReflectorDSCP *int `json:"at_reflector_dscp,omitempty"`
	AtReflectorECN  *int `json:"at_reflector_ecn,omitempty"`
	// AtClient is what the client saw on the reflected packets, which the
	// reflector marked with the same DSCP (CoS TLV DSCP1).
	AtClientDSCP *int `json:"at_client_dscp,omitempty"`
	AtClientECN  *int `json:"at_client_ecn,omitempty"`
	// ForwardOK / BackwardOK: nil when unknown.
	ForwardOK  *bool `json:"forward_ok,omitempty"`
	BackwardOK *bool `json:"backward_ok,omitempty"`
	// Changed counts packets whose marks differed from the ones sent.
	ForwardChanged  int `json:"forward_changed"`
	BackwardChanged int `json:"backward_changed"`
}

// VoiceQuality is the simplified E-model (ITU-T G.107, metrics.md §10).
type VoiceQuality struct {
	Codec      string  `json:"codec"`
	DelayMs    float64 `json:"mouth_to_ear_delay_ms"`
	LossPct    float64 `json:"effective_loss_pct"`
	R          float64 `json:"r"`
	MOS        float64 `json:"mos"`
	Assumption string  `json:"assumption"`
}
