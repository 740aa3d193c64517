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

	// 8.1.2 (full data windowed rate) only: the window, bounded by the
	// receiver's buffer set before the handshake, and its readback.
	// WindowPackets is W; ReceiveWindowBytes the window asked of the
	// receiver (W × MSS); ReceiveBufferSetBytes the SO_RCVBUF the server
	// set on its listener and ReceiveBufferBytes as the kernel held it
	// (doubled); WindowAttempts the sessions opened to land the window
	// (a retry asks for a buffer corrected by the window read back).
	WindowPackets         int64 `json:"window_packets,omitempty"`
	ReceiveWindowBytes    int   `json:"receive_window_bytes,omitempty"`
	ReceiveBufferSetBytes int   `json:"receive_buffer_set_bytes,omitempty"`
	ReceiveBufferBytes    int   `json:"receive_buffer_bytes,omitempty"`
	WindowAttempts        int   `json:"window_attempts,omitempty"`
	// The server's readback of its connection: the largest window it
	// advertised (tcpi_rcv_wnd; 0 before Linux 6.2), its tcpi_rcv_space
	// and TCP_WINDOW_CLAMP at the end, and the bytes it received.
	ServerMaxRcvWndBytes   int64 `json:"server_max_rcv_wnd_bytes,omitempty"`
	ServerRcvSpaceBytes    int64 `json:"server_rcv_space_bytes,omitempty"`
	ServerWindowClampBytes int64 `json:"server_window_clamp_bytes,omitempty"`
	ServerBytes            int64 `json:"server_bytes,omitempty"`
	// The sender's readback over the test period: the largest window the
	// receiver advertised (tcpi_snd_wnd) and the most segments in flight
	// (tcpi_unacked), which must stay within W + WindowSlackPackets.
	MaxSndWndBytes     int64 `json:"max_snd_wnd_bytes,omitempty"`
	MaxInFlight        int64 `json:"max_in_flight,omitempty"`
	WindowSlackPackets int64 `json:"window_slack_packets,omitempty"`
	// The per-RTT delivery check: segments delivered per smoothed RTT
	// (mean over RTTSpans spans of at least one srtt each, from TCP_INFO
	// deltas sampled at most every RTT/2), and the share of spans that
	// delivered fewer than W − WindowSlackPackets.
	DeliveredPerRTT float64 `json:"delivered_per_rtt,omitempty"`
	RTTSpans        int     `json:"rtt_spans,omitempty"`
	ShortRTTPct     float64 `json:"short_rtt_pct,omitempty"`
}
