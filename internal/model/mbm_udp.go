package model

// MBMUDP is what a UDP test of RFC 8337 §8 (internal/mbm/udprun, `sonde
// mbm --mode udp`) records beside its verdict: the pattern, the sender's
// log of its own schedule (the conformance check), and the server's counts.
type MBMUDP struct {
	// Pattern says the schedule in words; Derate is 8.5.1's, BurstPackets
	// the packets per burst, GrowthPackets those sent before the SPRT
	// counts.
	Pattern       string  `json:"pattern,omitempty"`
	Derate        float64 `json:"derate,omitempty"`
	BurstPackets  int64   `json:"burst_packets,omitempty"`
	GrowthPackets int64   `json:"growth_packets,omitempty"`
	// PacketsSent are every datagram sent (growth included);
	// DecisionPackets the packets the SPRT used to decide (0: undecided).
	PacketsSent     int64 `json:"packets_sent,omitempty"`
	DecisionPackets int64 `json:"decision_packets,omitempty"`
	// The server's counts (RFC 4737 / RFC 8337 §7.3): arrivals below the
	// highest sequence number seen, copies, arrivals after their fate
	// was final (counted lost).
	Reordered  int64 `json:"reordered,omitempty"`
	Duplicates int64 `json:"duplicates,omitempty"`
	Late       int64 `json:"late,omitempty"`
	// FeedbackGaps are feedback datagrams that came after packets the
	// client had not heard of (lost feedback; the end report filled them).
	FeedbackGaps int64 `json:"feedback_gaps,omitempty"`
	// WindowPackets bounds the packets in flight (8.1.2), WindowWaitMs
	// is the time the sender waited for it.
	WindowPackets int64   `json:"window_packets,omitempty"`
	WindowWaitMs  float64 `json:"window_wait_ms,omitempty"`
	// SendErrors are packets this host refused to send.
	SendErrors int64   `json:"send_errors,omitempty"`
	DurationMs float64 `json:"duration_ms,omitempty"`
	// Rates in bit/s of IP packets (UDP payload + 28 bytes of IPv4 and
	// UDP headers, as the target's MTU counts them): the sender's mean and least over
	// sliding windows of RateWindowMs, the receiver's the same; the
	// precondition is least ≥ MinRateFraction × target.
	SenderRateBps      float64 `json:"sender_rate_bps,omitempty"`
	SenderMinRateBps   float64 `json:"sender_min_rate_bps,omitempty"`
	ReceiverRateBps    float64 `json:"receiver_rate_bps,omitempty"`
	ReceiverMinRateBps float64 `json:"receiver_min_rate_bps,omitempty"`
	RateWindowMs       float64 `json:"rate_window_ms,omitempty"`
	MinRateFraction    float64 `json:"min_rate_fraction,omitempty"`
	// The send schedule: deadlines (bursts or packets sent at once),
	// those missed by more than the pattern's spacing (at least 1 ms),
	// and the error (send − deadline) p50, p99 and max in µs.
	Deadlines          int64   `json:"deadlines,omitempty"`
	MissedDeadlines    int64   `json:"missed_deadlines,omitempty"`
	ScheduleErrorP50Us float64 `json:"schedule_error_p50_us,omitempty"`
	ScheduleErrorP99Us float64 `json:"schedule_error_p99_us,omitempty"`
	ScheduleErrorMaxUs float64 `json:"schedule_error_max_us,omitempty"`
	// Scan is the standing queue scan of 8.2.x (MBMScan); AQM the
	// slowstart rounds of 8.3.2 (MBMAQM).
	Scan *MBMScan `json:"scan,omitempty"`
	AQM  *MBMAQM  `json:"aqm,omitempty"`
}
