// Package model defines sonde's result schema: the data shared by the server,
// the clients, the report writers and any archive. It holds no logic beyond
// small constructors; every figure in it is computed elsewhere (metrics) and
// documented in docs/result-schema.md. Field names carry their units.
package model

import "time"

// SchemaVersion names the JSON schema of Result. Bump the suffix on any
// incompatible change and note it in docs/result-schema.md.
const SchemaVersion = "sonde.result/v1"

// Result is one complete run of `sonde test`.
type Result struct {
	Schema   string     `json:"schema"`
	ID       string     `json:"id"`
	Start    time.Time  `json:"start"`
	End      time.Time  `json:"end"`
	Client   Endpoint   `json:"client"`
	Server   Endpoint   `json:"server"`
	Config   TestConfig `json:"config"`
	Baseline *RTTResult `json:"baseline,omitempty"`
	// BaselineUDP is STAMP probes on the idle path, the reference for
	// the one-way delays under load.
	BaselineUDP *UDPFlow         `json:"baseline_udp,omitempty"`
	Download    *DirectionResult `json:"download,omitempty"`
	Upload      *DirectionResult `json:"upload,omitempty"`
	// Bidir is the bidirectional phase: download and upload at once.
	Bidir   *BidirResult   `json:"bidir,omitempty"`
	Classes *ClassesResult `json:"classes,omitempty"`
	// WebRTC is the browser page's data-channel quality test.
	WebRTC *WebRTCResult `json:"webrtc,omitempty"`
	// Truth holds the configured properties of an emulated path (sonde test
	// --lab), shown next to the measured figures.
	Truth *GroundTruth `json:"ground_truth,omitempty"`
	// Grades read the result on the scales of other speed tests
	// (internal/grade, set when the result is finished).
	Grades *Grades `json:"grades,omitempty"`
	// Errors lists what failed; everything measured before a failure is kept.
	Errors []string `json:"errors,omitempty"`

	// BaselineICMP is ICMP echo on the idle path, where a test runs it
	// beside its other probes (sonde test iperf3://).
	BaselineICMP *RTTResult `json:"baseline_icmp,omitempty"`

	// Notes are caveats a reader needs (e.g. "TTR needs --link-rate").
	Notes []string `json:"notes,omitempty"`
}

// Endpoint describes one side of a test.
type Endpoint struct {
	Address  string `json:"address,omitempty"`
	Software string `json:"software,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
}

// TestConfig records what was asked for.
type TestConfig struct {
	Server      string  `json:"server"`
	Embedded    bool    `json:"embedded,omitempty"`
	TLS         bool    `json:"tls,omitempty"`
	Streams     string  `json:"streams"` // "auto" or a count
	DurationS   float64 `json:"duration_s"`
	LinkRateBps float64 `json:"link_rate_bps,omitempty"`
	DSCP        int     `json:"dscp,omitempty"`
	Classes     []Class `json:"classes,omitempty"`
	ProbeMs     float64 `json:"probe_interval_ms"`
}

// Class is one DSCP class of a QoS classes test.
type Class struct {
	Name string `json:"name"`
	DSCP int    `json:"dscp"`
	Port int    `json:"port,omitempty"`
}

// Stats summarises a sample. Units come from the field that holds it.
type Stats struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	P10    float64 `json:"p10"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
}

// RTTSample is one round trip measured by an application echo.
type RTTSample struct {
	TS    float64 `json:"t_s"`    // send time, seconds since the test start
	RTTMs float64 `json:"rtt_ms"` // (t4-t1) - (t3-t2)
	// ServerMs is the server's own processing time (t3-t2) that was removed.
	ServerMs float64 `json:"server_ms"`
}

// RTTResult is an idle (baseline) or loaded RTT measurement.
type RTTResult struct {
	// RTTMs summarises the application echo RTTs.
	RTTMs   Stats       `json:"rtt_ms"`
	Samples []RTTSample `json:"samples"`
	Lost    int         `json:"lost,omitempty"`
	// TCP_INFO of the probe connection at the end, both ends.
	ClientMinRTTMs float64 `json:"client_tcpinfo_min_rtt_ms"`
	ClientRTTMs    float64 `json:"client_tcpinfo_rtt_ms"`
	ServerMinRTTMs float64 `json:"server_tcpinfo_min_rtt_ms"`
	ServerRTTMs    float64 `json:"server_tcpinfo_rtt_ms"`
}

// ByteCount is a receiver's cumulative payload count at time TS (seconds
// since the test's time zero on the side that counted).
type ByteCount struct {
	TS    float64 `json:"t_s"`
	Bytes int64   `json:"bytes"`
}

// RatePoint is the goodput over one interval ending at TS.
type RatePoint struct {
	TS  float64 `json:"t_s"`
	Bps float64 `json:"bps"`
}

// TCPSample is one TCP_INFO reading. Times in µs as the kernel gives them,
// rates in bit/s, windows in bytes unless named in segments.
type TCPSample struct {
	TS              float64 `json:"t_s"`
	State           uint8   `json:"state"`
	CAState         uint8   `json:"ca_state"`
	RTTUs           uint32  `json:"rtt_us"`
	RTTVarUs        uint32  `json:"rttvar_us"`
	MinRTTUs        uint32  `json:"min_rtt_us"`
	SndCwnd         uint32  `json:"snd_cwnd"` // segments
	SndSsthresh     uint32  `json:"snd_ssthresh"`
	SndMSS          uint32  `json:"snd_mss"`
	RcvMSS          uint32  `json:"rcv_mss"`
	AdvMSS          uint32  `json:"advmss"`
	PMTU            uint32  `json:"pmtu"`
	SndWnd          uint32  `json:"snd_wnd"`
	RcvSpace        uint32  `json:"rcv_space"`
	RcvWnd          uint32  `json:"rcv_wnd"`
	Unacked         uint32  `json:"unacked"`
	TotalRetrans    uint32  `json:"total_retrans"`
	BytesSent       uint64  `json:"bytes_sent"`
	BytesRetrans    uint64  `json:"bytes_retrans"`
	BytesAcked      uint64  `json:"bytes_acked"`
	BytesReceived   uint64  `json:"bytes_received"`
	DeliveryRateBps float64 `json:"delivery_rate_bps"`
	BusyTimeUs      uint64  `json:"busy_time_us"`
	RwndLimitedUs   uint64  `json:"rwnd_limited_us"`
	SndbufLimitedUs uint64  `json:"sndbuf_limited_us"`
	Delivered       uint32  `json:"delivered"`
	DeliveredCE     uint32  `json:"delivered_ce"`
	ReordSeen       uint32  `json:"reord_seen"`
	DsackDups       uint32  `json:"dsack_dups"`
	RcvOOOPack      uint32  `json:"rcv_ooopack"`
	// RcvRTTUs is the receiver's RTT estimate (tcpi_rcv_rtt), the only RTT
	// a pure receiver has.
	RcvRTTUs     uint32 `json:"rcv_rtt_us"`
	NotsentBytes uint32 `json:"notsent_bytes"`
	Lost         uint32 `json:"lost"`
	Retrans      uint32 `json:"retrans"`
}

// Bottleneck attributes a flow's limit over the measurement window
// (metrics.md §1: rwnd_limited and sndbuf_limited over busy_time).
type Bottleneck struct {
	RwndLimitedPct   float64 `json:"rwnd_limited_pct"`
	SndbufLimitedPct float64 `json:"sndbuf_limited_pct"`
	// Verdict is "receiver window", "sender buffer", "network", or
	// "unknown" when the window holds no busy time.
	Verdict string `json:"verdict"`
}

// Flow is one load-carrying TCP connection of a phase.
type Flow struct {
	ID         int     `json:"id"`
	DSCP       int     `json:"dscp,omitempty"`
	StartS     float64 `json:"start_s"`
	EndS       float64 `json:"end_s"`
	Bytes      int64   `json:"bytes"` // payload received by the receiver
	GoodputBps float64 `json:"goodput_bps"`
	// WarmupS is when the flow left slow start, seconds since the test
	// start; -1 if no end of warm-up was detected.
	WarmupS    float64     `json:"warmup_s"`
	WarmupHow  string      `json:"warmup_how,omitempty"`
	Throughput []RatePoint `json:"throughput"`
	// Sender is "server" (download) or "client" (upload): the side whose
	// TCP_INFO is in TCPInfo and from which efficiency is computed.
	Sender        string      `json:"sender"`
	TCPInfo       []TCPSample `json:"tcpinfo"`
	SndBufBytes   int         `json:"sndbuf_bytes,omitempty"`
	RcvBufBytes   int         `json:"rcvbuf_bytes,omitempty"`
	EfficiencyPct float64     `json:"efficiency_pct"`
	BytesSent     uint64      `json:"bytes_sent"`
	BytesRetrans  uint64      `json:"bytes_retrans"`
	Bottleneck    Bottleneck  `json:"bottleneck"`
	// MaxAchievableBps is T = window × 8 / RTT for the observed send window
	// and RTT (RFC 6349).
	MaxAchievableBps float64 `json:"max_achievable_bps"`
	// ReceivedDSCP is the DSCP of the last segment the receiver saw, when
	// the receiver could read it.
	ReceivedDSCP *int `json:"received_dscp,omitempty"`
}

// RPM is responsiveness under working conditions (metrics.md §5).
type RPM struct {
	RPM     float64 `json:"rpm"`
	TCPMs   Stats   `json:"foreign_tcp_ms"`
	TLSMs   *Stats  `json:"foreign_tls_ms,omitempty"`
	HTTPMs  Stats   `json:"foreign_http_ms"`
	SelfMs  Stats   `json:"self_http_ms"`
	IdleRPM float64 `json:"idle_rpm,omitempty"`
}

// RFC6349 is the RFC 6349 report of one direction, over the steady-state
// window (warm-up excluded).
type RFC6349 struct {
	WindowStartS float64 `json:"window_start_s"`
	WindowEndS   float64 `json:"window_end_s"`
	Bytes        int64   `json:"bytes"`
	DurationS    float64 `json:"duration_s"`
	GoodputBps   float64 `json:"goodput_bps"`
	PathMTU      uint32  `json:"path_mtu"`
	MSS          uint32  `json:"mss"`
	// LinkRateBps and what follows from it are zero without --link-rate.
	LinkRateBps      float64  `json:"link_rate_bps,omitempty"`
	MaxGoodputBps    float64  `json:"max_goodput_bps,omitempty"`
	BDPBits          float64  `json:"bdp_bits,omitempty"`
	IdealTransferS   float64  `json:"ideal_transfer_time_s,omitempty"`
	TTR              float64  `json:"ttr,omitempty"`
	EfficiencyPct    float64  `json:"efficiency_pct"`
	BytesSent        uint64   `json:"bytes_sent"`
	BytesRetrans     uint64   `json:"bytes_retrans"`
	BaselineRTTMs    float64  `json:"baseline_rtt_ms"`
	LoadedRTTMeanMs  float64  `json:"loaded_rtt_mean_ms"`
	BufferDelayPct   float64  `json:"buffer_delay_pct"`
	MaxCwndBytes     uint64   `json:"max_cwnd_bytes"`
	MaxSndWndBytes   uint32   `json:"max_snd_wnd_bytes"`
	MaxRcvSpaceBytes uint32   `json:"max_rcv_space_bytes"`
	SndBufBytes      int      `json:"sndbuf_bytes,omitempty"`
	RcvBufBytes      int      `json:"rcvbuf_bytes,omitempty"`
	MaxAchievableBps float64  `json:"max_achievable_bps"`
	Bottleneck       string   `json:"bottleneck"`
	Notes            []string `json:"notes,omitempty"`
}

// DirectionResult is one load phase (download or upload).
type DirectionResult struct {
	Direction   string      `json:"direction"`
	StreamsMode string      `json:"streams_mode"` // "auto" or "fixed"
	Streams     int         `json:"streams"`
	DurationS   float64     `json:"duration_s"`
	Bytes       int64       `json:"bytes"`
	GoodputBps  float64     `json:"goodput_bps"`
	Throughput  []RatePoint `json:"throughput"`
	Flows       []Flow      `json:"flows"`
	Latency     *RTTResult  `json:"latency_under_load,omitempty"`
	// UDPLatency is STAMP probes during the phase: one-way delay per
	// direction, so queueing is attributed to the loaded direction.
	UDPLatency *UDPFlow `json:"udp_latency_under_load,omitempty"`
	RPM        *RPM     `json:"rpm,omitempty"`
	RFC6349    *RFC6349 `json:"rfc6349,omitempty"`

	// ICMPLatency is ICMP echo during the phase, where the test ran it
	// (sonde test iperf3://).
	ICMPLatency *RTTResult `json:"icmp_latency_under_load,omitempty"`
}

// BidirResult is the bidirectional phase: download and upload streams
// loading the path at the same time (as Crusader and LibreQoS run it, and
// as a video call loads it), each direction's goodput from its own
// receiver, and the latency under both loads together. The directions'
// own Latency and UDPLatency are left empty: the phase has one of each.
type BidirResult struct {
	StartS    float64          `json:"start_s"`
	DurationS float64          `json:"duration_s"`
	Download  *DirectionResult `json:"download,omitempty"`
	Upload    *DirectionResult `json:"upload,omitempty"`
	// Latency is the probe stream's RTT while both directions ran.
	Latency *RTTResult `json:"latency_under_load,omitempty"`
	// UDPLatency is STAMP probes during the phase (one-way delay per
	// direction: which queue grew).
	UDPLatency *UDPFlow `json:"udp_latency_under_load,omitempty"`
}

// ClassFlow is one class's result in a QoS classes test.
type ClassFlow struct {
	Class        Class   `json:"class"`
	Direction    string  `json:"direction"`
	Bytes        int64   `json:"bytes"`
	GoodputBps   float64 `json:"goodput_bps"`
	RTTMs        *Stats  `json:"rtt_ms,omitempty"`
	ReceivedDSCP *int    `json:"received_dscp,omitempty"`
	// MarksOK is nil when the receiver could not read the mark.
	MarksOK *bool `json:"marks_ok,omitempty"`
	// UDP is the class's STAMP probe flow, run beside its TCP flow with
	// the same DSCP: delay, jitter and loss per direction, and the marks
	// as they arrived (ReceivedDSCP and MarksOK come from it).
	UDP *UDPFlow `json:"udp,omitempty"`
}

// ClassesResult is a QoS classes test: one flow per class at the same time.
type ClassesResult struct {
	DurationS float64     `json:"duration_s"`
	Flows     []ClassFlow `json:"flows"`
}

// GroundTruth is the configured path of an emulated (lab) run.
type GroundTruth struct {
	Profile   string  `json:"profile"`
	BaseRTTMs float64 `json:"base_rtt_ms"`
	// ProbeRTTMs is the true RTT of one RTT probe: BaseRTTMs plus the
	// serialisation of the probe and its reply at the bottleneck rates.
	ProbeRTTMs     float64 `json:"probe_rtt_ms,omitempty"`
	DownRateBps    float64 `json:"down_rate_bps"`
	UpRateBps      float64 `json:"up_rate_bps"`
	DownLoss       float64 `json:"down_loss,omitempty"`
	UpLoss         float64 `json:"up_loss,omitempty"`
	DownQueueBytes int     `json:"down_queue_bytes,omitempty"`
	UpQueueBytes   int     `json:"up_queue_bytes,omitempty"`
	MTU            int     `json:"mtu,omitempty"`
	// Queue limits given in packets, and the queue disciplines, of the
	// bottleneck link in each direction.
	DownQueuePackets int    `json:"down_queue_packets,omitempty"`
	UpQueuePackets   int    `json:"up_queue_packets,omitempty"`
	DownQdisc        string `json:"down_qdisc,omitempty"`
	UpQdisc          string `json:"up_qdisc,omitempty"`
}
