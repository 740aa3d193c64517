package model

// AnalyzeSchema names the JSON schema of Analysis (`sonde analyze`).
const AnalyzeSchema = "sonde.analyze/v1"

// Analysis is the result of analysing one or more capture files.
type Analysis struct {
	Schema  string        `json:"schema"`
	Files   []CaptureFile `json:"files"`
	Packets uint64        `json:"packets"`
	Bytes   uint64        `json:"bytes"`
	Skipped uint64        `json:"skipped_packets"` // not IP, fragments, malformed
	// Filter is the capture filter expression applied (empty: none);
	// Filtered counts the packets of the files that it left out (a live
	// capture filters in the kernel, so they are never seen).
	Filter    string         `json:"filter,omitempty"`
	Filtered  uint64         `json:"filtered_packets,omitempty"`
	Live      *LiveCapture   `json:"live,omitempty"`
	StartUnix float64        `json:"start_unix_s"`
	DurationS float64        `json:"duration_s"`
	TCP       []TCPConn      `json:"tcp,omitempty"`
	QUIC      []QUICConn     `json:"quic,omitempty"`
	HTTPPages []HTTPPage     `json:"http_pages,omitempty"`
	Truth     *TruthCompare  `json:"ground_truth,omitempty"`
	Samples   []PassiveRTT   `json:"samples,omitempty"` // with --samples
	Errors    []string       `json:"errors,omitempty"`
	Notes     []string       `json:"notes,omitempty"`
	Stats     AnalyzeRuntime `json:"runtime"`
	// Spill, when set, holds the TCP and QUIC records instead of TCP and
	// QUIC (then empty): a long capture's finished connections kept on
	// disk, in order, by the analyser. EachTCP, EachQUIC and the counts
	// read either form; the outputs that need every record in memory (the
	// HTML report, comparisons) are given an analysis without one.
	Spill RecordSpill `json:"-"`
}

// RecordSpill yields an analysis's records in their order (start, then
// the ends' names), read back from where they were kept.
type RecordSpill interface {
	Len() (tcp, quic int)
	// EachTCP and EachQUIC give records that fn must not keep (as
	// Analysis.EachTCP).
	EachTCP(fn func(*TCPConn) error) error
	EachQUIC(fn func(*QUICConn) error) error
}

// NumTCP is the number of TCP connection records, kept or spilled.
func (r *Analysis) NumTCP() int {
	if r.Spill != nil {
		n, _ := r.Spill.Len()
		return n
	}
	return len(r.TCP)
}

// NumQUIC is the number of QUIC flow records, kept or spilled.
func (r *Analysis) NumQUIC() int {
	if r.Spill != nil {
		_, n := r.Spill.Len()
		return n
	}
	return len(r.QUIC)
}

// EachTCP calls fn with every TCP record in order; the first error stops
// it. fn must not keep the record nor change it: a spilled record is
// decoded into one value, reused for the next (its slices too); copy
// what is kept (the strings and the HTTP and TimeSeq pointers may be
// kept).
func (r *Analysis) EachTCP(fn func(*TCPConn) error) error {
	if r.Spill != nil {
		return r.Spill.EachTCP(fn)
	}
	for i := range r.TCP {
		if err := fn(&r.TCP[i]); err != nil {
			return err
		}
	}
	return nil
}

// EachQUIC calls fn with every QUIC record in order, as EachTCP.
func (r *Analysis) EachQUIC(fn func(*QUICConn) error) error {
	if r.Spill != nil {
		return r.Spill.EachQUIC(fn)
	}
	for i := range r.QUIC {
		if err := fn(&r.QUIC[i]); err != nil {
			return err
		}
	}
	return nil
}

// CaptureFile describes one input file.
// LiveCapture describes a live capture (sonde capture).
type LiveCapture struct {
	Interface string `json:"interface"`
	// KernelReceived and KernelDropped are the socket's counts
	// (PACKET_STATISTICS), summed over the sockets: packets that passed
	// the filter (those dropped included), and those lost because the
	// analyser fell behind. On loopback every packet is
	// counted twice (leaving and arriving; only the arrival is analysed).
	KernelReceived uint64 `json:"kernel_received"`
	KernelDropped  uint64 `json:"kernel_dropped"`
	// KernelRingFull counts the times a ring filled up, every block
	// waiting for sonde (tp_freeze_q_cnt): packets that arrive then are
	// dropped.
	KernelRingFull uint64 `json:"kernel_ring_full"`
	// Unread counts the packets still in the ring when the capture
	// stopped: neither dropped nor analysed.
	Unread uint64 `json:"unread"`
	// Workers is the number of AF_PACKET sockets, in one fanout group
	// (a symmetric flow hash) when more than one, each analysed by its
	// own goroutine; RingBytes is each one's TPACKET_V3 ring.
	Workers   int   `json:"workers"`
	RingBytes int64 `json:"ring_bytes"`
}

type CaptureFile struct {
	Path    string `json:"path"`
	Format  string `json:"format"`
	Packets uint64 `json:"packets"`
	// DamageOffset is the byte offset where reading stopped on a truncated
	// or corrupt file (-1: read to the end).
	DamageOffset int64  `json:"damage_offset"`
	Damage       string `json:"damage,omitempty"`
}

// AnalyzeRuntime reports the analyser's own cost.
type AnalyzeRuntime struct {
	WallS          float64 `json:"wall_s"`
	PacketsPerS    float64 `json:"packets_per_s"`
	PeakLiveFlows  int     `json:"peak_live_flows"`
	EvictedFlows   int     `json:"evicted_flows"`
	TruncatedFlows int     `json:"truncated_flows,omitempty"` // flows beyond --max-flows, not analysed
	// AfterClose counts segments of connections that had closed and been
	// evicted (a late FIN, ACK or RST): they start no new connection.
	AfterClose uint64 `json:"after_close_segments,omitempty"`
}

// RTTSummary summarises one RTT method's valid samples, milliseconds.
type RTTSummary struct {
	Samples  int     `json:"samples"`
	Rejected int     `json:"rejected,omitempty"`
	MinMs    float64 `json:"min_ms,omitempty"`
	MeanMs   float64 `json:"mean_ms,omitempty"`
	MedianMs float64 `json:"median_ms,omitempty"`
	P90Ms    float64 `json:"p90_ms,omitempty"`
	MaxMs    float64 `json:"max_ms,omitempty"`
}

// TCPDir is one direction of a TCP connection (A→B is client→server when
// the SYN was seen).
type TCPDir struct {
	Packets         uint64 `json:"packets"`
	Bytes           uint64 `json:"bytes"` // IP bytes
	DataPackets     uint64 `json:"data_packets"`
	DataBytes       uint64 `json:"data_bytes"`   // payload, retransmissions included
	UniqueBytes     uint64 `json:"unique_bytes"` // new sequence space
	Retransmissions uint64 `json:"retransmissions"`
	OutOfOrder      uint64 `json:"out_of_order"`
	DupACKs         uint64 `json:"dup_acks"`
	ZeroWindows     uint64 `json:"zero_windows"`
	// ZeroWindowProbes is data sent while the peer's window was 0 (as
	// tcptrace's "zwnd probe pkts"; not counted as retransmissions).
	ZeroWindowProbes uint64 `json:"zero_window_probes"`

	MSS           int     `json:"mss,omitempty"`
	WindowScale   int     `json:"window_scale"` // -1: not offered
	SACKPermitted bool    `json:"sack_permitted"`
	SACKBlocks    uint64  `json:"sack_blocks,omitempty"`
	Timestamps    bool    `json:"timestamps"`
	GoodputBps    float64 `json:"goodput_bps"` // unique bytes over the connection's duration
	// GoodputSeries is unique bytes per interval as bit/s.
	GoodputSeries []float64 `json:"goodput_series_bps,omitempty"`
}

// TCPConn is one TCP connection.
type TCPConn struct {
	A         string  `json:"a"` // client (SYN sender) when seen, else the lower-port guess
	B         string  `json:"b"`
	SawSYN    bool    `json:"saw_syn"`
	Closed    string  `json:"closed,omitempty"` // fin, rst or "" (open at the end)
	StartS    float64 `json:"start_s"`          // since the first packet of the analysis
	DurationS float64 `json:"duration_s"`
	IntervalS float64 `json:"interval_s"`
	AB        TCPDir  `json:"a_to_b"`
	BA        TCPDir  `json:"b_to_a"`
	// RTT: TCP timestamps (pping), full and per side; SEQ/ACK with Karn's
	// rule per data direction. "Side B" is observer → B → observer.
	TSFull      RTTSummary `json:"ts_full_rtt"`
	TSSideA     RTTSummary `json:"ts_side_a_rtt"`
	TSSideB     RTTSummary `json:"ts_side_b_rtt"`
	SeqAckSideA RTTSummary `json:"seqack_side_a_rtt"`
	SeqAckSideB RTTSummary `json:"seqack_side_b_rtt"`
	HTTP        *HTTPConn  `json:"http,omitempty"`
	// TimeSeq is kept for the HTML report's time-sequence graph when the
	// analyser is asked to (passive.Config.TimeSequence); not in the JSON.
	TimeSeq *TimeSequence `json:"-"`
}

// TimeSequence is a tcptrace-style time-sequence record of a connection's
// main data direction (the one with more unique bytes), bounded: past a
// limit only every Stride-th segment or ACK is kept (retransmissions up to
// their own limit). Times are seconds since the start of the analysis,
// sequence numbers bytes relative to the direction's first.
type TimeSequence struct {
	Dir     string // "A>B" or "B>A"
	Stride  int
	Data    []SeqSegment
	Retrans []SeqSegment
	Acks    []SeqAck // from the other direction
}

// SeqSegment is one data segment: [Seq, End) at T.
type SeqSegment struct {
	T        float64
	Seq, End int64
}

// SeqAck is one ACK: the cumulative ACK and the right edge of the
// advertised window (Ack + scaled window).
type SeqAck struct {
	T        float64
	Ack, Win int64
}

// HTTPConn is HTTP/1.x behaviour on one connection, as seen at the
// observer (times are capture times, docs/analyze.md "HTTP/1.x").
type HTTPConn struct {
	Version   string `json:"version"` // of the first request: HTTP/1.0 or HTTP/1.1
	Requests  int    `json:"requests"`
	Responses int    `json:"responses"` // final (non-1xx) responses
	// Pipelined counts requests sent before the previous response was complete.
	Pipelined int `json:"pipelined,omitempty"`
	// KeepAlive: the last response left the connection open for reuse
	// (HTTP/1.1 without "Connection: close", HTTP/1.0 with "keep-alive").
	KeepAlive bool `json:"keep_alive"`
	// CloseBy is who sent the first FIN or RST (client, server; "" open at
	// the end) and CloseHow which (fin, rst).
	CloseBy  string `json:"close_by,omitempty"`
	CloseHow string `json:"close_how,omitempty"`
	// IdleBeforeCloseS is the time from the last response's completion
	// to the first FIN/RST (a keep-alive timeout shows here).
	IdleBeforeCloseS float64 `json:"idle_before_close_s,omitempty"`
	// Incomplete says why parsing stopped early: "gap" (segments missing
	// from the capture), "mid-stream" (connection start not captured),
	// "truncated" (snap length cut headers), "malformed", "upgrade"
	// (101/CONNECT tunnel), "limit" (header block over 64 KiB).
	Incomplete string `json:"incomplete,omitempty"`
	// Exchanges are the request/response pairs in order (at most 1000
	// per connection; Requests counts them all).
	Exchanges []HTTPExchange `json:"exchanges,omitempty"`
}

// HTTPExchange is one request and its response.
type HTTPExchange struct {
	Method  string `json:"method"`
	Host    string `json:"host,omitempty"`
	Path    string `json:"path"`
	Version string `json:"version"`
	Status  int    `json:"status,omitempty"` // 0: no response seen
	// ReqBytes and RespBytes are header plus body bytes of each message;
	// RespBodyBytes the response body alone (chunk framing excluded).
	ReqBytes      uint64 `json:"request_bytes"`
	RespBytes     uint64 `json:"response_bytes,omitempty"`
	RespBodyBytes uint64 `json:"response_body_bytes,omitempty"`
	// RequestS is the request's first byte, since the start of the analysis.
	RequestS float64 `json:"request_s"`
	// TTFBMs is request's first byte → response's first byte (1xx
	// included) at the observer; CompleteMs request's first byte → the
	// response's last byte (0: response not complete).
	TTFBMs     float64 `json:"ttfb_ms,omitempty"`
	CompleteMs float64 `json:"complete_ms,omitempty"`
	// KeepAlive is this exchange's persistence decision (version default
	// and Connection headers of request and response).
	KeepAlive bool `json:"keep_alive"`
}

// HTTPPage is one page load: a client's HTTP exchanges grouped by time
// (docs/analyze.md: exchanges of one client address separated by less
// than the page gap belong to one page load).
type HTTPPage struct {
	Client string  `json:"client"`  // client IP address
	StartS float64 `json:"start_s"` // first SYN (or request) of the page's connections
	// CompletionS is StartS → the last response byte of the page.
	CompletionS float64  `json:"completion_s"`
	Connections int      `json:"connections"`
	NewConns    int      `json:"new_connections"` // opened (SYN seen) during the page load
	Requests    int      `json:"requests"`
	Responses   int      `json:"responses"`
	MaxParallel int      `json:"max_parallel_connections"`
	RespBytes   uint64   `json:"response_bytes"`
	MeanTTFBMs  float64  `json:"mean_ttfb_ms,omitempty"`
	Incomplete  int      `json:"incomplete_connections,omitempty"`
	Hosts       []string `json:"hosts,omitempty"`
}

// QUICConn is one QUIC connection (per UDP 4-tuple).
type QUICConn struct {
	Client    string    `json:"client"`
	Server    string    `json:"server"`
	Version   string    `json:"version"`
	DCIDLen   [2]int    `json:"dcid_len"` // short-header DCID length client→server, server→client
	StartS    float64   `json:"start_s"`
	DurationS float64   `json:"duration_s"`
	Packets   [2]uint64 `json:"packets"`
	Bytes     [2]uint64 `json:"bytes"`
	Short     [2]uint64 `json:"short_header_packets"`
	Coalesced uint64    `json:"coalesced_packets"`
	Greased   uint64    `json:"greased_fixed_bit"`
	CIDChange [2]int    `json:"cid_changes"`
	Spin      string    `json:"spin"` // unknown, spinning, constant, random, not-analysed (a version sonde does not read)
	// SpinDir classifies each direction (client→server, server→client)
	// on its own: unknown, spinning, constant, random.
	SpinDir   [2]string     `json:"spin_dir"`
	Edges     [2]int        `json:"edges"`
	Glitches  [2]int        `json:"reorder_glitches"`
	Rejected  []Count       `json:"rejected,omitempty"`
	SpinRTT   [2]RTTSummary `json:"spin_rtt"`      // per direction of the edges
	Component [2]RTTSummary `json:"component_rtt"` // [0]: observer→server→observer, [1]: →client→
	// LossBits: Q/L loss bits (RFC 9506), per direction where present.
	LossBits []QUICLossBits `json:"loss_bits,omitempty"`
}

// QUICLossBits is the loss-bit report of one direction of a QUIC flow.
type QUICLossBits struct {
	Direction string `json:"direction"` // "up" (client→server) or "down"
	// Complete Q blocks (64 packets each at the sender), the packets the
	// sender sent in them and those the observer saw.
	Blocks       int `json:"q_blocks"`
	Expected     int `json:"q_expected_packets"`
	Seen         int `json:"q_seen_packets"`
	UpstreamLost int `json:"upstream_lost"` // sender → observer
	// UpstreamLossPct is UpstreamLost / Expected in percent.
	UpstreamLossPct float64 `json:"upstream_loss_pct"`
	// EndToEndLost counts L marks: packets the sender declared lost on
	// the whole path; EndToEndLossPct is that over the packets seen.
	EndToEndLost    int     `json:"end_to_end_lost"`
	EndToEndLossPct float64 `json:"end_to_end_loss_pct"`
}

// Count is a named counter.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// PassiveRTT is one RTT sample.
type PassiveRTT struct {
	TimeS  float64 `json:"t_s"` // since the start of the analysis
	Flow   string  `json:"flow"`
	Method string  `json:"method"` // ts-full, ts-side-a, ts-side-b, seqack-side-a/b, spin-full-up/down, spin-side-server/client
	RTTMs  float64 `json:"rtt_ms"`
	Valid  bool    `json:"valid"`
	Flag   string  `json:"flag,omitempty"`
	// TrueMs is the ground truth for this sample (0: not matched).
	TrueMs float64 `json:"true_ms,omitempty"`
}

// TruthCompare is the error of every RTT method against ground truth.
type TruthCompare struct {
	File     string        `json:"file"`
	Observer string        `json:"observer"` // e.g. "link 1 end A"
	Methods  []MethodError `json:"methods"`
}

// MethodError is one RTT method's error, e = (est − true) / true, with the
// statistics over |e| in percent as seed 004 reports them.
type MethodError struct {
	Method  string `json:"method"`
	Samples int    `json:"samples"`
	Matched int    `json:"matched"`
	// Dropped counts samples with a packet that the emulated path dropped
	// on the measured side: the truth has no delay for it, so no true RTT.
	Dropped       int     `json:"dropped,omitempty"`
	MeanAbsPct    float64 `json:"mean_abs_error_pct"`
	StddevPct     float64 `json:"stddev_pct"`
	MedianPct     float64 `json:"median_pct"`
	P90Pct        float64 `json:"p90_pct"`
	P99Pct        float64 `json:"p99_pct"`
	MaxPct        float64 `json:"max_pct"`
	MeanSignedPct float64 `json:"mean_signed_error_pct"`
	SamplesPerS   float64 `json:"samples_per_s"`
	MeanTrueMs    float64 `json:"mean_true_ms"`
}

// Method returns the error figures of the named method: zero figures
// (Samples 0) when the comparison has none.
func (c *TruthCompare) Method(name string) MethodError {
	if c != nil {
		for _, m := range c.Methods {
			if m.Method == name {
				return m
			}
		}
	}
	return MethodError{Method: name}
}
