package model

// MBMScan is RFC 8337 §8.2's standing queue scan over UDP: a window
// clocked by the receiver's per-arrival feedback, one packet larger every
// two windows delivered, with the round trip of each step. Every 8.2 test
// of one run carries the same scan.
type MBMScan struct {
	// BaseRTTMs is the least RTT of single packets sent one at a time,
	// before the scan; QueueThresholdMs the RTT rise above it that counts
	// as a standing queue.
	BaseRTTMs        float64 `json:"base_rtt_ms"`
	QueueThresholdMs float64 `json:"queue_threshold_ms"`
	// CeilingBps is the sender's pacing ceiling (twice the target rate):
	// a bottleneck faster than that never queues.
	CeilingBps float64 `json:"ceiling_bps"`
	// OnsetWindow is the largest window before the RTT rose (0: it never
	// did); OnsetPacket the first packet sent with a standing queue.
	OnsetWindow int64 `json:"onset_window,omitempty"`
	OnsetPacket int64 `json:"onset_packet,omitempty"`
	// FirstMarkPacket and FirstMarkWindow: the first packet lost or CE
	// (−1: none); FirstLossPacket the first lost (−1: none).
	FirstMarkPacket int64 `json:"first_mark_packet"`
	FirstMarkWindow int64 `json:"first_mark_window,omitempty"`
	FirstLossPacket int64 `json:"first_loss_packet"`
	// QueueAtMarkMs is the RTT above the base at the first mark (or the
	// largest seen, with no mark); QueueAtMarkPackets the same in packets
	// at CapacityBps, the delivery rate with a standing queue.
	QueueAtMarkMs      float64 `json:"queue_at_mark_ms"`
	QueueAtMarkPackets float64 `json:"queue_at_mark_packets"`
	CapacityBps        float64 `json:"capacity_bps,omitempty"`
	// StandingPackets are those delivered between the onset of queueing
	// and the first mark (8.2.1's count against the run length).
	StandingPackets int64 `json:"standing_packets"`
	// LossesAtOnset are the losses in the two round trips from the first
	// loss, AllowedLosses 8.2.3's bound for them.
	LossesAtOnset int64 `json:"losses_at_onset"`
	AllowedLosses int64 `json:"allowed_losses"`
	// MaxExcessMs is the largest RTT above the queueing time of the
	// window at CapacityBps (8.2.4).
	MaxExcessMs float64 `json:"max_excess_ms"`
	// Refills are the packets sent when the window opened (it was full
	// before), LateRefills those sent more than RefillLimitMs after the
	// feedback that opened it (this host ran late: the window was not
	// held), MaxRefillLagMs the longest.
	Refills        int64   `json:"refills"`
	LateRefills    int64   `json:"late_refills"`
	RefillLimitMs  float64 `json:"refill_limit_ms"`
	MaxRefillLagMs float64 `json:"max_refill_lag_ms"`
	// Stop says why the scan ended.
	Stop  string        `json:"stop"`
	Steps []MBMScanStep `json:"steps,omitempty"`
}

// MBMScanStep is one window of the scan: packets From … From+Packets−1.
type MBMScanStep struct {
	Window  int64   `json:"window"`
	From    int64   `json:"from"`
	Packets int64   `json:"packets"`
	RTTMs   float64 `json:"rtt_ms"` // least RTT of the step's second half (0: no sample)
	RateBps float64 `json:"rate_bps"`
	Losses  int64   `json:"losses"`
	CE      int64   `json:"ce"`
}

// MBMAQM is RFC 8337 §8.3.2's slowstart against an AQM: rounds of
// sending at twice the target rate until the first loss or CE mark, each
// followed by a pause that drains the queue.
type MBMAQM struct {
	BaseRTTMs float64       `json:"base_rtt_ms"`
	RateBps   float64       `json:"rate_bps"`
	Rounds    []MBMAQMRound `json:"rounds"`
}

// MBMAQMRound is one slowstart round.
type MBMAQMRound struct {
	Packets int64 `json:"packets"`
	// DeliveredBeforeMark are the packets delivered before the first
	// mark (−1 in FirstMark: none in the round's bound).
	DeliveredBeforeMark int64   `json:"delivered_before_mark"`
	FirstMark           int64   `json:"first_mark"`
	Losses              int64   `json:"losses"`
	CE                  int64   `json:"ce"`
	MaxRTTMs            float64 `json:"max_rtt_ms"`
	// SojournAfterMarkMs is the RTT above the base of the first packet
	// delivered after the first mark: RFC 8337 §8.3.2 asks for at least
	// half the target RTT.
	SojournAfterMarkMs float64 `json:"sojourn_after_mark_ms"`
}
