package stamp

// The control channel: JSON over sonde's HTTP port (docs/udp.md). A client
// opens a reflector session before sending probes; the reflector answers
// only probes from the client's address that carry the session's SSID.

// PathSessions is the control path: POST opens a session, DELETE
// PathSessions/{id} closes it and returns its SessionReport.
const PathSessions = "/sonde/v1/udp/sessions"

// SessionRequest opens a reflector session.
type SessionRequest struct {
	Client string `json:"client,omitempty"` // software name
	// TestSession, if set, is the ID of a running sonde test session: the
	// reflector session then belongs to it (no second admission) and ends
	// with it.
	TestSession string  `json:"test_session,omitempty"`
	DurationS   float64 `json:"duration_s"`
	// IntervalUs is the planned probe interval; the reflector allows
	// somewhat more than the resulting rate, and drops the excess.
	IntervalUs  float64 `json:"interval_us"`
	PacketBytes int     `json:"packet_bytes"`
	// DSCP and ECN the client will send; the reflector marks its replies
	// with the DSCP asked for in each probe's CoS TLV and with this ECN.
	DSCP int `json:"dscp"`
	ECN  int `json:"ecn"`
	// Monitor asks for a long-lived monitor session (`sonde monitor`):
	// granted up to MonitorMaxDurationS without a test admission, within
	// the monitor limits below; a monitor renews it by opening the next
	// session before this one expires.
	Monitor bool `json:"monitor,omitempty"`
}

// Limits of a monitor session (SessionRequest.Monitor), which a server
// grants outside its test admission because it costs little: at most
// MonitorMaxRatePPS probes of at most MonitorMaxPacketBytes for at most
// MonitorMaxDurationS per grant.
const (
	MonitorMaxRatePPS     = 100
	MonitorMaxPacketBytes = 200
	MonitorMaxDurationS   = 86400
)

// SessionReply describes an opened session.
type SessionReply struct {
	ID   string `json:"id"`
	SSID uint16 `json:"ssid"`
	// Port is the reflector's UDP port (on the server's address).
	Port int `json:"port"`
	// ExpiresS is when the session ends, seconds from now; probes after it
	// are not reflected.
	ExpiresS float64 `json:"expires_s"`
	// DurationS is the granted sending time: the request's duration_s,
	// or less when the server's limit is lower. Older servers omit it.
	DurationS  float64 `json:"duration_s,omitempty"`
	MaxRatePPS float64 `json:"max_rate_pps"`
	MaxPackets int     `json:"max_packets"`
	// Clock lets a client on the same host measure one-way delay exactly.
	Clock ClockInfo `json:"clock"`
}

// ClockInfo describes the reflector's timestamp clock.
type ClockInfo struct {
	// BootID of the reflector's kernel; EpochNs its clock minus
	// CLOCK_MONOTONIC (see Clock). Equal boot IDs mean a shared
	// CLOCK_MONOTONIC, so the offset between two Clocks is the difference of
	// their epochs, exactly.
	BootID  string `json:"boot_id"`
	EpochNs int64  `json:"epoch_ns"`
}

// SessionReport is what the reflector saw of a session.
type SessionReport struct {
	// Received counts probes accepted (first copies); Reflected replies
	// sent; Duplicates extra copies of a sequence number (also reflected);
	// RateLimited probes dropped above the session's rate; Late probes
	// after expiry.
	Received    int `json:"received"`
	Reflected   int `json:"reflected"`
	Duplicates  int `json:"duplicates"`
	RateLimited int `json:"rate_limited"`
	Late        int `json:"late"`
	SendErrors  int `json:"send_errors"`
	// Bitmap has bit s (byte s/8, bit s%8 from the least significant) set
	// when the probe with Session-Sender sequence number s arrived; it
	// covers sequence numbers below MaxPackets.
	Bitmap []byte `json:"bitmap"`
	// TOS counts the received DS field values (DSCP << 2 | ECN).
	TOS map[int]int `json:"tos"`
}

// Has reports whether probe seq reached the reflector.
func (r *SessionReport) Has(seq uint32) bool {
	i := int(seq / 8)
	return i < len(r.Bitmap) && r.Bitmap[i]&(1<<(seq%8)) != 0
}
