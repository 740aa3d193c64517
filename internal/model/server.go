package model

import "time"

// ServerRecordSchemaVersion names the JSON schema of ServerRecord
// (docs/result-schema.md).
const ServerRecordSchemaVersion = "sonde.server-record/v1"

// The kinds of stored results: the page's assembled Result, and the
// server's own records of each kind of test it serves.
const (
	KindPage = "page" // the browser page's Result, assembled by the server
	KindTCP  = "tcp"  // a sonde test session (CLI or page): the server's side
	KindNDT7 = "ndt7" // one ndt7 download or upload
	KindUDP  = "udp"  // one STAMP test session of the reflector
	KindMBM  = "mbm"  // one Model Based Metrics run the server took part in
	// KindIperf3 is one test of an iperf3 client (docs/iperf3.md).
	KindIperf3 = "iperf3"
	// KindRPM and KindLibreSpeed are one client IP's HTTP load test of the
	// responsiveness test or LibreSpeed (internal/httpload).
	KindRPM        = "rpm"
	KindLibreSpeed = "librespeed"
)

// ResultKinds lists every kind, the page's first.
func ResultKinds() []string {
	return []string{KindPage, KindTCP, KindNDT7, KindUDP, KindMBM, KindIperf3, KindRPM, KindLibreSpeed}
}

// ServerRecord is what a server measured of one finished test, from its
// own side only: the bytes it sent and received, the TCP_INFO of its
// sockets, its reflector's counts. It holds no figure only the client
// could measure (the client's receive counts, its probe RTTs): those are
// in the client's Result. Like ndt-server's archive, one record per test.
type ServerRecord struct {
	Schema string `json:"schema"`
	// ID is the record's own ID (32 lower-case hex digits); Session the
	// test's ID on the wire (the sonde session ID, the ndt7 UUID, the
	// STAMP session ID); TestSession the sonde session a UDP session ran
	// beside, if any.
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	Session     string    `json:"session,omitempty"`
	TestSession string    `json:"test_session,omitempty"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Client      Endpoint  `json:"client"`
	Server      Endpoint  `json:"server"`
	// Download and Upload are the server's view of the load (tcp, ndt7):
	// a download's goodput is the bytes the client's TCP acknowledged
	// (TCP_INFO bytes_acked, stream framing included), with RFC 6349 from
	// the server's own TCP_INFO as the sender; an upload's is the payload
	// the server received, without sender figures (the client sent).
	Download *DirectionResult `json:"download,omitempty"`
	Upload   *DirectionResult `json:"upload,omitempty"`
	// Bidir is the server's view of a bidirectional phase (its streams'
	// tags start with protocol.TagBidir), as Download and Upload.
	Bidir *BidirResult `json:"bidir,omitempty"`
	// IdleRTTMs is the server's TCP min_rtt on the idle probe stream
	// (tcp) or of the test's connection (ndt7); LoadedRTTMs the median
	// TCP_INFO RTT of the server's sending flows under load. 0: none.
	IdleRTTMs   float64 `json:"idle_tcpinfo_min_rtt_ms"`
	LoadedRTTMs float64 `json:"loaded_tcpinfo_rtt_ms"`
	// Probe is the server's view of the probe stream(s) of a tcp session.
	Probe *ServerProbe `json:"probe,omitempty"`
	// UDP is what the reflector saw of a STAMP session.
	UDP *ServerUDP `json:"udp,omitempty"`
	// MBM is a Model Based Metrics run as the server recorded it.
	MBM *MBMResult `json:"mbm,omitempty"`
	// Ended says why the test ended ("closed by the client", a limit).
	Ended  string   `json:"ended,omitempty"`
	Errors []string `json:"errors,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// ServerProbe is the server's TCP_INFO of a session's probe streams.
type ServerProbe struct {
	Streams int `json:"streams"`
	// RTTMs summarises the smoothed RTT (tcpi_rtt) of every sample.
	RTTMs    Stats   `json:"tcpinfo_rtt_ms"`
	MinRTTMs float64 `json:"tcpinfo_min_rtt_ms"`
}

// ServerUDP is what the STAMP reflector saw of one session.
type ServerUDP struct {
	IntervalUs  float64 `json:"interval_us"`
	PacketBytes int     `json:"packet_bytes"`
	DSCP        int     `json:"dscp"`
	ECN         int     `json:"ecn"`
	// GrantedS is the sending time the server granted.
	GrantedS float64 `json:"granted_s"`
	// The reflector's counts (stamp.SessionReport): first copies
	// received, replies sent, extra copies, probes over the rate, after
	// expiry, and replies that failed to send.
	Received    int `json:"received"`
	Reflected   int `json:"reflected"`
	Duplicates  int `json:"duplicates"`
	RateLimited int `json:"rate_limited"`
	Late        int `json:"late"`
	SendErrors  int `json:"send_errors"`
	// HighestSeq is the highest sequence number received (−1: none);
	// Missing counts the numbers below it that never arrived: forward
	// loss as the reflector sees it (probes after the last one received
	// cannot be told from probes never sent). Both only within the
	// session's packet budget.
	HighestSeq int64 `json:"highest_seq"`
	Missing    int64 `json:"missing"`
	// TOS counts the DS field values the probes arrived with.
	TOS []TOSCount `json:"tos,omitempty"`
}

// TOSCount is how many probes arrived with one DSCP and ECN.
type TOSCount struct {
	DSCP  int `json:"dscp"`
	ECN   int `json:"ecn"`
	Count int `json:"count"`
}
