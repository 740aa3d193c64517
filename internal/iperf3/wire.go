// Package iperf3 speaks the protocol of esnet/iperf 3.x (docs/iperf3.md):
// its control connection's states, the cookie, the length-prefixed JSON
// blobs and the UDP datagram header, with every field a peer sends bounded
// before it allocates. The server (Server) answers iperf3 clients under
// limits its caller supplies; the client (Run) drives any iperf3 server.
package iperf3

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// State is one byte of the control connection: the server announces each
// state of a test, the client answers some (src/iperf_api.h).
type State int8

// The states of src/iperf_api.h.
const (
	TestStart       State = 1
	TestRunning     State = 2
	TestEnd         State = 4
	ParamExchange   State = 9
	CreateStreams   State = 10
	ServerTerminate State = 11
	ClientTerminate State = 12
	ExchangeResults State = 13
	DisplayResults  State = 14
	IperfStart      State = 15
	IperfDone       State = 16
	AccessDenied    State = -1
	ServerError     State = -2
)

// wire is the state's byte on the control connection.
func (s State) wire() byte { return byte(s) }

func (s State) String() string {
	switch s {
	case TestStart:
		return "TEST_START"
	case TestRunning:
		return "TEST_RUNNING"
	case TestEnd:
		return "TEST_END"
	case ParamExchange:
		return "PARAM_EXCHANGE"
	case CreateStreams:
		return "CREATE_STREAMS"
	case ServerTerminate:
		return "SERVER_TERMINATE"
	case ClientTerminate:
		return "CLIENT_TERMINATE"
	case ExchangeResults:
		return "EXCHANGE_RESULTS"
	case DisplayResults:
		return "DISPLAY_RESULTS"
	case IperfStart:
		return "IPERF_START"
	case IperfDone:
		return "IPERF_DONE"
	case AccessDenied:
		return "ACCESS_DENIED"
	case ServerError:
		return "SERVER_ERROR"
	}
	return fmt.Sprintf("state %d", int8(s))
}

// CookieSize is the cookie's length on the wire: 36 characters and a NUL
// (COOKIE_SIZE). Every connection of a test, control and data, starts
// with it.
const CookieSize = 37

// Cookie identifies one test.
type Cookie [CookieSize]byte

// ReadCookie reads the 37 bytes of a cookie. iperf3 makes it of base32
// characters; the server accepts any bytes (it only compares them).
func ReadCookie(r io.Reader) (Cookie, error) {
	var c Cookie
	if _, err := io.ReadFull(r, c[:]); err != nil {
		return c, fmt.Errorf("iperf3: reading the cookie: %w", err)
	}
	return c, nil
}

// MaxJSON bounds one JSON blob a peer sends (parameters or results).
// iperf3 3.12 reads any length its peer announces; the largest honest one
// is a client's results of 256 streams, under 64 KiB, or a server's
// results carrying its text output.
const MaxJSON = 1 << 20

// ErrJSONTooLong is a blob announced longer than the reader's bound.
var ErrJSONTooLong = errors.New("iperf3: JSON blob longer than its bound")

// WriteJSON sends v as iperf3 does (JSON_write): its length as 4 bytes in
// network order, then the JSON text.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("iperf3: encoding JSON: %w", err)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("iperf3: writing JSON: %w", err)
	}
	return nil
}

// ReadJSON reads one length-prefixed blob of at most limit bytes into v.
func ReadJSON(r io.Reader, limit int, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return fmt.Errorf("iperf3: reading a JSON length: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(limit) {
		return fmt.Errorf("%w: %d bytes announced, at most %d", ErrJSONTooLong, n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("iperf3: reading %d bytes of JSON: %w", n, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("iperf3: parsing JSON: %w", err)
	}
	return nil
}

// Params are the test parameters a client sends (send_parameters). Numbers
// are float64 as cJSON writes them; Check bounds them before use.
type Params struct {
	TCP              bool    `json:"-"`
	UDP              bool    `json:"-"`
	SCTP             bool    `json:"-"`
	Omit             float64 `json:"omit"`
	Time             float64 `json:"time"`
	Num              float64 `json:"num,omitempty"`
	BlockCount       float64 `json:"blockcount,omitempty"`
	MSS              float64 `json:"MSS,omitempty"`
	NoDelay          bool    `json:"-"`
	Parallel         float64 `json:"parallel"`
	Reverse          bool    `json:"-"`
	Bidirectional    bool    `json:"-"`
	Window           float64 `json:"window,omitempty"`
	Len              float64 `json:"len,omitempty"`
	Bandwidth        float64 `json:"bandwidth,omitempty"`
	FQRate           float64 `json:"fqrate,omitempty"`
	PacingTimer      float64 `json:"pacing_timer,omitempty"`
	Burst            float64 `json:"burst,omitempty"`
	TOS              float64 `json:"TOS,omitempty"`
	FlowLabel        float64 `json:"flowlabel,omitempty"`
	Title            string  `json:"title,omitempty"`
	ExtraData        string  `json:"extra_data,omitempty"`
	Congestion       string  `json:"congestion,omitempty"`
	CongestionUsed   string  `json:"congestion_used,omitempty"`
	GetServerOutput  bool    `json:"-"`
	UDPCounters64    bool    `json:"-"`
	RepeatingPayload bool    `json:"-"`
	DontFragment     bool    `json:"-"`
	ZeroCopy         bool    `json:"-"`
	AuthToken        string  `json:"authtoken,omitempty"`
	ClientVersion    string  `json:"client_version,omitempty"`
}

// UnmarshalJSON reads the parameters as get_parameters does: a key's
// presence turns a flag on, whatever its value.
func (p *Params) UnmarshalJSON(b []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	type plain Params
	var q plain
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = Params(q)
	_, p.TCP = keys["tcp"]
	_, p.UDP = keys["udp"]
	_, p.SCTP = keys["sctp"]
	_, p.NoDelay = keys["nodelay"]
	_, p.Reverse = keys["reverse"]
	_, p.Bidirectional = keys["bidirectional"]
	_, p.GetServerOutput = keys["get_server_output"]
	_, p.UDPCounters64 = keys["udp_counters_64bit"]
	_, p.RepeatingPayload = keys["repeating_payload"]
	_, p.DontFragment = keys["dont_fragment"]
	_, p.ZeroCopy = keys["zerocopy"]
	_, hasParallel := keys["parallel"]
	if !hasParallel {
		p.Parallel = 1
	}
	_, hasTime := keys["time"]
	if !hasTime {
		p.Time = DefaultTime
	}
	return nil
}

// MarshalJSON writes the parameters as send_parameters does: flags as
// keys that are present only when set.
func (p Params) MarshalJSON() ([]byte, error) {
	type plain Params
	b, err := json.Marshal(plain(p))
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	flag := func(k string, on bool) {
		if on {
			m[k] = true
		}
	}
	flag("tcp", p.TCP)
	flag("udp", p.UDP)
	flag("nodelay", p.NoDelay)
	flag("reverse", p.Reverse)
	flag("bidirectional", p.Bidirectional)
	if p.GetServerOutput {
		m["get_server_output"] = 1
	}
	if p.UDPCounters64 {
		m["udp_counters_64bit"] = 1
	}
	return json.Marshal(m)
}

// Defaults and bounds of iperf3's parameters (src/iperf.h, iperf_api.h).
const (
	DefaultTime      = 10
	DefaultTCPLen    = 128 * 1024
	DefaultUDPLen    = 1460
	MaxTCPLen        = 1 << 20 // MAX_BLOCKSIZE
	MaxUDPLen        = 65507   // MAX_UDP_BLOCKSIZE
	MinUDPLen        = 16      // sec, usec and a 64-bit count
	MaxStreams       = 128     // MAX_STREAMS
	MaxOmit          = 600     // MAX_OMIT_TIME
	MaxTime          = 86400   // MAX_TIME
	MaxWindow        = 64 << 20
	MaxMSS           = 9216 // MAX_MSS
	MaxBandwidth     = 1e12 // bit/s
	MaxTitleLen      = 1024
	DefaultUDPRate   = 1e6 // bit/s (UDP_RATE)
	defaultPacingUs  = 1000
	maxPacingTimerUs = 1e6
)

// Checked are the parameters after Check: integers in their bounds, the
// defaults filled in.
type Checked struct {
	UDP           bool
	Omit          int // seconds
	Time          int // seconds; 0 with Num or BlockCount
	Num           int64
	BlockCount    int64
	Parallel      int
	Reverse       bool
	Bidirectional bool
	Window        int
	Len           int
	MSS           int
	NoDelay       bool
	Bandwidth     float64 // bit/s; 0: unlimited (TCP only)
	Congestion    string
	ServerOutput  bool
	Counters64    bool
	PacingTimer   int // µs
	Burst         int
	Title         string
}

// Check bounds every size, count and duration of p, so nothing is
// allocated or started from an unchecked number.
func (p *Params) Check() (Checked, error) {
	var c Checked
	if p.SCTP {
		return c, errors.New("iperf3: SCTP is not served")
	}
	if p.UDP && p.TCP {
		return c, errors.New("iperf3: both tcp and udp set")
	}
	c.UDP = p.UDP
	in := func(name string, v, lo, hi float64) (int64, error) {
		if math.IsNaN(v) || v < lo || v > hi || v != math.Trunc(v) {
			return 0, fmt.Errorf("iperf3: %s %v outside [%v, %v]", name, v, lo, hi)
		}
		return int64(v), nil
	}
	var err error
	var v int64
	if v, err = in("omit", p.Omit, 0, MaxOmit); err != nil {
		return c, err
	}
	c.Omit = int(v)
	if v, err = in("time", p.Time, 0, MaxTime); err != nil {
		return c, err
	}
	c.Time = int(v)
	if c.Num, err = in("num", p.Num, 0, 1<<53); err != nil {
		return c, err
	}
	if c.BlockCount, err = in("blockcount", p.BlockCount, 0, 1<<53); err != nil {
		return c, err
	}
	if v, err = in("parallel", p.Parallel, 1, MaxStreams); err != nil {
		return c, err
	}
	c.Parallel = int(v)
	if v, err = in("window", p.Window, 0, MaxWindow); err != nil {
		return c, err
	}
	c.Window = int(v)
	maxLen := float64(MaxTCPLen)
	if c.UDP {
		maxLen = MaxUDPLen
	}
	if v, err = in("len", p.Len, 0, maxLen); err != nil {
		return c, err
	}
	c.Len = int(v)
	switch {
	case c.Len == 0 && c.UDP:
		c.Len = DefaultUDPLen
	case c.Len == 0:
		c.Len = DefaultTCPLen
	case c.UDP && c.Len < MinUDPLen:
		return c, fmt.Errorf("iperf3: UDP len %d under %d", c.Len, MinUDPLen)
	}
	if v, err = in("MSS", p.MSS, 0, MaxMSS); err != nil {
		return c, err
	}
	c.MSS = int(v)
	if c.Bandwidth = p.Bandwidth; math.IsNaN(c.Bandwidth) || c.Bandwidth < 0 || c.Bandwidth > MaxBandwidth {
		return c, fmt.Errorf("iperf3: bandwidth %v outside [0, %v]", p.Bandwidth, float64(MaxBandwidth))
	}
	if c.UDP && c.Bandwidth == 0 {
		c.Bandwidth = DefaultUDPRate
	}
	if v, err = in("pacing_timer", p.PacingTimer, 0, maxPacingTimerUs); err != nil {
		return c, err
	}
	c.PacingTimer = int(v)
	if c.PacingTimer == 0 {
		c.PacingTimer = defaultPacingUs
	}
	if v, err = in("burst", p.Burst, 0, 1000); err != nil {
		return c, err
	}
	c.Burst = int(v)
	if len(p.Congestion) > 16 || len(p.Title) > MaxTitleLen {
		return c, errors.New("iperf3: congestion or title too long")
	}
	c.Reverse, c.Bidirectional = p.Reverse, p.Bidirectional
	if c.Reverse && c.Bidirectional {
		return c, errors.New("iperf3: reverse and bidirectional together")
	}
	c.NoDelay, c.Congestion, c.Title = p.NoDelay, p.Congestion, p.Title
	c.ServerOutput, c.Counters64 = p.GetServerOutput, p.UDPCounters64
	if c.Time == 0 && c.Num == 0 && c.BlockCount == 0 {
		return c, errors.New("iperf3: no time, bytes or blocks: an endless test")
	}
	return c, nil
}

// Streams is the number of data connections the client opens.
func (c Checked) Streams() int {
	if c.Bidirectional {
		return 2 * c.Parallel
	}
	return c.Parallel
}

// StreamResult is one stream's entry of the results both ends exchange
// (send_results).
//
// Numbers are float64 as cJSON holds them: iperf3 3.12 writes the -1 of
// "no retransmits known" as 18446744073709551615.
type StreamResult struct {
	ID          int     `json:"id"`
	Bytes       float64 `json:"bytes"`
	Retransmits float64 `json:"retransmits"`
	Jitter      float64 `json:"jitter"`
	Errors      float64 `json:"errors"`
	Packets     float64 `json:"packets"`
	// The counts at the end of the omitted seconds (iperf3 3.14 on;
	// older peers subtract their own): Errors and Packets are totals.
	OmittedErrors  float64 `json:"omitted_errors"`
	OmittedPackets float64 `json:"omitted_packets"`
	StartTime      float64 `json:"start_time"`
	EndTime        float64 `json:"end_time"`
}

// Results are what each end sends the other after TEST_END.
type Results struct {
	CPUUtilTotal         float64         `json:"cpu_util_total"`
	CPUUtilUser          float64         `json:"cpu_util_user"`
	CPUUtilSystem        float64         `json:"cpu_util_system"`
	SenderHasRetransmits float64         `json:"sender_has_retransmits"`
	CongestionUsed       string          `json:"congestion_used,omitempty"`
	Streams              []StreamResult  `json:"streams"`
	ServerOutputText     string          `json:"server_output_text,omitempty"`
	ServerOutputJSON     json.RawMessage `json:"server_output_json,omitempty"`
}

// MaxResultStreams bounds the stream entries read from a peer's results.
const MaxResultStreams = 2 * MaxStreams

// The 4-byte datagrams that open a UDP stream (src/iperf_udp.c): the
// client's message and the server's reply, written in the sender's byte
// order; 3.0's reply is still accepted by clients.
const (
	UDPConnectMsg         = 0x36373839
	UDPConnectReply       = 0x39383736
	LegacyUDPConnectReply = 987654321
)

// UDPHeader is the start of every UDP datagram: the sender's wall clock
// (seconds, microseconds) and the packet's number from 1, in 32 or (with
// udp_counters_64bit) 64 bits, all in network order.
type UDPHeader struct {
	Sec, Usec uint32
	Count     uint64
}

// HeaderLen is the header's size with 32- or 64-bit counters.
func HeaderLen(counters64 bool) int {
	if counters64 {
		return 16
	}
	return 12
}

// Put writes h at the start of b (which holds HeaderLen bytes).
func (h UDPHeader) Put(b []byte, counters64 bool) {
	binary.BigEndian.PutUint32(b[0:], h.Sec)
	binary.BigEndian.PutUint32(b[4:], h.Usec)
	if counters64 {
		binary.BigEndian.PutUint64(b[8:], h.Count)
	} else {
		binary.BigEndian.PutUint32(b[8:], uint32(h.Count))
	}
}

// ParseUDPHeader reads the header at the start of b.
func ParseUDPHeader(b []byte, counters64 bool) (UDPHeader, error) {
	if len(b) < HeaderLen(counters64) {
		return UDPHeader{}, fmt.Errorf("iperf3: UDP datagram of %d bytes, shorter than its header", len(b))
	}
	h := UDPHeader{Sec: binary.BigEndian.Uint32(b[0:]), Usec: binary.BigEndian.Uint32(b[4:])}
	if counters64 {
		h.Count = binary.BigEndian.Uint64(b[8:])
	} else {
		h.Count = uint64(binary.BigEndian.Uint32(b[8:]))
	}
	return h, nil
}
