package model

// MBMTCP is how a TCP test of RFC 8337 §8 (internal/mbm/tcprun) produced
// its pattern and what the sender's TCP_INFO measured: enough to tell a
// verdict on the path from a pattern the host could not produce.
type MBMTCP struct {
	// CongestionControl is the sender socket's (TCP_CONGESTION, read
	// back); MSS its tcpi_snd_mss.
	CongestionControl string `json:"congestion_control"`
	MSS               int    `json:"mss_bytes"`
	// PacingRateBps is SO_MAX_PACING_RATE as read back (8.1.1), in bit/s
	// of TCP payload (the kernel paces payload bytes); 0: unpaced.
	PacingRateBps float64 `json:"pacing_rate_bps"`
	// BurstPackets and HeadwayMs are a burst test's pattern (8.4,
	// 8.5.1): a write of BurstPackets target packets every HeadwayMs;
	// Derate (8.5.1) scales both.
	BurstPackets int64   `json:"burst_packets,omitempty"`
	HeadwayMs    float64 `json:"headway_ms,omitempty"`
	Derate       float64 `json:"derate,omitempty"`
	// SlowStartAfterIdle is net.ipv4.tcp_slow_start_after_idle where the
	// sender ran (-1: unknown); 1 lets cwnd collapse after an idle RTO.
	SlowStartAfterIdle int `json:"slow_start_after_idle"`
	// GrowthS and TestS are the lengths of the growth period (not
	// counted) and of the test period (counted).
	GrowthS float64 `json:"growth_s"`
	TestS   float64 `json:"test_s"`
	// GoodputBps is the payload the receiver acknowledged over the test
	// period (tcpi_bytes_acked, frame headers taken out) per second;
	// MinWindowRateBps the lowest delivery rate over the precondition's
	// sliding window (WindowS) from the growth period's end (0: no whole
	// window).
	GoodputBps       float64 `json:"goodput_bps"`
	MinWindowRateBps float64 `json:"min_window_rate_bps"`
	WindowS          float64 `json:"window_s"`
	// DipSamples counts test-period samples whose window rate was below
	// the precondition while the congestion window did not hold the flow
	// back (in flight < cwnd − 2): the sending host's pacing or stalled
	// acknowledgements, not the path's capacity. The test measures on;
	// a PASS needs the test period's goodput above the precondition.
	DipSamples int `json:"dip_samples,omitempty"`
	// Samples of TCP_INFO in the test period, their planned interval and
	// the longest gap seen between two (a stalled host).
	Samples          int     `json:"samples"`
	SampleIntervalMs float64 `json:"sample_interval_ms"`
	MaxSampleGapMs   float64 `json:"max_sample_gap_ms"`
	// HoldMs is how long each sample's counts waited before they were
	// fed to the SPRT, for the DSACKs of spurious retransmissions to
	// come back first (about 1.5 RTT).
	HoldMs float64 `json:"hold_ms"`
	// Delivered, Retrans, DSACKDups and CE are the test period's counter
	// deltas (segments); Losses = Retrans − DSACKDups. CounterResets
	// counts samples where a counter went backwards (not counted).
	Delivered     int64 `json:"delivered"`
	Retrans       int64 `json:"retrans"`
	DSACKDups     int64 `json:"dsack_dups"`
	CE            int64 `json:"ce"`
	CounterResets int   `json:"counter_resets,omitempty"`
	// RwndLimitedPct and SndbufLimitedPct are the test period's shares
	// of busy time limited by the receiver's window and the sender's
	// buffer; NotsentEmptyPct the share of samples in which the sender
	// had no data waiting in the socket (app-limited).
	RwndLimitedPct   float64 `json:"rwnd_limited_pct"`
	SndbufLimitedPct float64 `json:"sndbuf_limited_pct"`
	NotsentEmptyPct  float64 `json:"notsent_empty_pct"`
	// The writes' schedule in the test period (in the growth period if
	// the test never began): Writes done, MissedHeadways (a write that
	// started more than half a headway late, or a headway skipped); and
	// over the whole run, the largest lateness of a write's start and the
	// writes that blocked longer than a headway (the socket had not
	// drained: backpressure from the path, not a host fault).
	Writes         int64   `json:"writes"`
	MissedHeadways int64   `json:"missed_headways,omitempty"`
	MaxLatenessMs  float64 `json:"max_lateness_ms,omitempty"`
	BlockedWrites  int64   `json:"blocked_writes,omitempty"`
	// WholeBurstsPct is the share of bursts written when cwnd − in flight
	// let the whole burst leave at once (8.5.1; otherwise TCP held part
	// of it back and the ACK clock spread it).
	WholeBurstsPct float64 `json:"whole_bursts_pct,omitempty"`
	// CwndBelowBurstPct is the share of test-period samples whose cwnd
	// was below BurstPackets: a burst could not leave whole.
	CwndBelowBurstPct float64 `json:"cwnd_below_burst_pct,omitempty"`
}
