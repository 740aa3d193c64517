package model

// WebRTCResult is the browser page's data-channel quality test
// (docs/browser.md): sequence-numbered messages over an unordered data
// channel without retransmissions (maxRetransmits 0), so a lost message
// stays lost as a UDP datagram would, one direction after the other.
type WebRTCResult struct {
	// MessageBytes is the size of every test message (below the path MTU,
	// so one message is one SCTP DATA chunk in one UDP datagram).
	MessageBytes int `json:"message_bytes"`
	// DurationS is the planned sending time of each direction.
	DurationS float64 `json:"duration_s"`
	// Pair is the selected ICE candidate pair, as "local ↔ remote" on the
	// server's side.
	Pair string `json:"candidate_pair,omitempty"`
	// Upload is browser → server (measured by the server), Download server
	// → browser (the page's arrival records, computed by the server).
	Upload   *WebRTCDirection `json:"upload,omitempty"`
	Download *WebRTCDirection `json:"download,omitempty"`
	Errors   []string         `json:"errors,omitempty"`
}

// WebRTCDirection is what one direction of the data-channel test did.
type WebRTCDirection struct {
	Direction string `json:"direction"` // "upload" or "download"
	// Sent is the sender's count of messages; SentKnown is false when the
	// sender's count never arrived and Sent is the highest sequence number
	// seen + 1 (losses at the end are then invisible).
	Sent      int  `json:"sent"`
	SentKnown bool `json:"sent_known"`
	// Received counts distinct messages, Lost = Sent − Received,
	// Duplicates extra copies, Malformed messages that were not test
	// messages of this direction.
	Received   int     `json:"received"`
	Lost       int     `json:"lost"`
	LossPct    float64 `json:"loss_pct"`
	Duplicates int     `json:"duplicates"`
	Malformed  int     `json:"malformed,omitempty"`
	// SendRateBps is what the sender offered (sent × size over its sending
	// time); GoodputBps what arrived (received × size over the span from
	// first to last arrival); MessagesPerS the arrival rate.
	SendRateBps  float64 `json:"send_rate_bps"`
	GoodputBps   float64 `json:"goodput_bps"`
	MessagesPerS float64 `json:"messages_per_s"`
	DurationS    float64 `json:"duration_s"`
	// JitterMs is the RFC 3550 interarrival jitter in arrival order.
	JitterMs    float64     `json:"jitter_ms"`
	Reordering  Reordering  `json:"reordering"`
	LossPattern LossPattern `json:"loss_pattern"`
	// Datagrams compares the packets of the phase that the sending end's
	// ICE transport sent with those the receiving end's received (absent
	// when either end could not count them).
	Datagrams *DatagramCount `json:"datagrams,omitempty"`
}

// DatagramCount is one direction's datagrams during a phase, as the two
// ends' ICE candidate pairs counted them: every packet of the association
// (test messages, acknowledgements, SCTP control), so LossPct is the loss
// on the path and at the receiving socket, whatever the sending SCTP stack
// did with messages. A message loss well above it is the sender's stack
// dropping messages itself. The counts' windows differ by the odd control
// packet (a couple in tens of thousands).
type DatagramCount struct {
	Sent     int     `json:"sent"`
	Received int     `json:"received"`
	LossPct  float64 `json:"loss_pct"`
}
