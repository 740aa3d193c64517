// Package mbmwire is the wire format of sonde's MBM run mode over UDP
// (docs/mbm-protocol.md): the JSON control messages that open and end a
// session over the server's HTTP port, the data datagram the client sends
// (session token, sequence number, send timestamp, pattern position) and
// the feedback datagram the server returns (the final fate of every packet
// in a window: arrived, ECN CE); and the TCP sessions of 8.1.2 over TCP
// (tcp.go: the request's window, the server's readback, the receive-buffer
// rule). Every parser checks every field before use and allocates nothing
// beyond what its caller gives it.
package mbmwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// Control paths on the server's HTTP port. POST PathSessions opens a
// session; POST PathSessions/{id}/end ends it and returns its Report.
const PathSessions = "/sonde/v1/mbm/sessions"

// Bounds of a session (the server may grant less).
const (
	// MaxPackets bounds the packets of one session: the server's record is
	// two bits per granted packet (4 MiB at this bound).
	MaxPackets = 1 << 24
	// MinPacketBytes is a data header; MaxPacketBytes a UDP payload that
	// fits a 9000-byte jumbo frame.
	MinPacketBytes = DataHeaderLen
	MaxPacketBytes = 8972
	// MaxFeedbackPackets bounds one feedback datagram's window: two
	// bitmaps of 512 bytes, so a feedback datagram fits a 1280-byte MTU.
	MaxFeedbackPackets = 4096
	// MinReorderPackets and MaxReorderPackets bound the reorder tolerance.
	MinReorderPackets = 1
	MaxReorderPackets = 1 << 16
	// MaxLossTimeoutMs bounds how long a packet may be late.
	MaxLossTimeoutMs = 10_000
	// MaxTextLen bounds every free-text field a peer sends.
	MaxTextLen = 256
)

// SessionRequest opens an MBM session: what the client will send.
type SessionRequest struct {
	Client string `json:"client,omitempty"` // software name
	// Test is the RFC 8337 section of the test ("8.1.1"); Pattern its
	// traffic pattern, for the server's log and record.
	Test string `json:"test"`
	// RateBps is the target rate, the session's mean sending rate in bit/s
	// of UDP payload; PacketBytes the UDP payload of every data datagram.
	RateBps     float64 `json:"rate_bps"`
	PacketBytes int     `json:"packet_bytes"`
	// TargetRTTMs and TargetMTU are the target (recorded with the result).
	TargetRTTMs float64 `json:"target_rtt_ms"`
	TargetMTU   int     `json:"target_mtu"`
	// DurationS is the planned sending time, Packets the planned packets.
	DurationS float64 `json:"duration_s"`
	Packets   int64   `json:"packets"`
	// ReorderPackets: a packet not arrived when one ReorderPackets later
	// has is final (lost). LossTimeoutMs: so is one not arrived this long
	// after the latest arrival.
	ReorderPackets int     `json:"reorder_packets"`
	LossTimeoutMs  float64 `json:"loss_timeout_ms"`
	// FeedbackPackets (0: none) asks for a feedback datagram after every
	// this many arrivals too, besides the timer: a windowed sender (8.1.2)
	// is clocked by them as TCP by its ACKs.
	FeedbackPackets int `json:"feedback_packets,omitempty"`
	// Transport is TransportUDP ("" too) or TransportTCP: a TCP session
	// (tcp.go) needs only the client, test, rate, target, duration and
	// ReceiveWindowBytes; ReceiveBufferBytes (0: ReceiveBufferFor the
	// window) is the SO_RCVBUF the server sets before listen().
	Transport          string `json:"transport,omitempty"`
	ReceiveWindowBytes int    `json:"receive_window_bytes,omitempty"`
	ReceiveBufferBytes int    `json:"receive_buffer_bytes,omitempty"`
}

// SessionReply is the grant.
type SessionReply struct {
	ID string `json:"id"`
	// Token goes in every data datagram; the server drops datagrams with
	// an unknown token or from another address than the client's.
	Token uint64 `json:"token"`
	// Port is the server's MBM UDP port (on the server's address).
	Port int `json:"port"`
	// Packets and DurationS are the grant: at most the request's, less
	// when the server's limits (duration, bytes) are lower.
	Packets   int64   `json:"packets"`
	DurationS float64 `json:"duration_s"`
	// ExpiresS is when the server drops the session, seconds from now.
	ExpiresS float64 `json:"expires_s"`
	// FeedbackMs is the feedback interval.
	FeedbackMs float64 `json:"feedback_ms"`
	// MaxRateBps is the server's rate limit.
	MaxRateBps float64 `json:"max_rate_bps"`
	// TCPPort (a TCP session) is the port of the session's own listener,
	// on the server's MBM address: the client connects once, writes Token
	// (TCPTokenLen bytes, big-endian) and then its data. ReceiveBufferBytes
	// is SO_RCVBUF as read back on that listener (the kernel doubles the
	// value set).
	TCPPort            int `json:"tcp_port,omitempty"`
	ReceiveBufferBytes int `json:"receive_buffer_bytes,omitempty"`
}

// EndRequest ends a session. Sent is how many data datagrams the client
// sent (sequence numbers 0 … Sent−1): those the server never saw are lost.
// From asks for the fates of packets From … Sent−1 in the Report (the
// client's SPRT has consumed those before From).
type EndRequest struct {
	Sent int64 `json:"sent"`
	From int64 `json:"from"`
	// Verdict and Reason are the client's decision, recorded by the server
	// with its own counts.
	Verdict model.MBMVerdict `json:"verdict,omitempty"`
	Reason  string           `json:"reason,omitempty"`
}

// Report is the server's record of a session.
type Report struct {
	ID string `json:"id"`
	// Sent is the client's count; Received distinct packets arrived in
	// time (each sequence number once); CE those of them with ECN CE.
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"`
	CE       int64 `json:"ce"`
	// Duplicates are further copies of an arrived packet; Reordered
	// arrivals with a sequence number below one already seen (RFC 4737);
	// Late arrivals after their fate was final (counted lost);
	// OutOfRange sequence numbers beyond the grant.
	Duplicates int64 `json:"duplicates"`
	Reordered  int64 `json:"reordered"`
	Late       int64 `json:"late"`
	OutOfRange int64 `json:"out_of_range"`
	// Bytes of payload received in time; FirstNs, LastNs the first and
	// last arrival (server clock, Unix ns); RateBps the received rate over
	// that span, MinRateBps the least over sliding windows of WindowMs,
	// both of IP packets (payload + 28 bytes of IPv4 and UDP headers).
	Bytes      int64   `json:"bytes"`
	FirstNs    int64   `json:"first_ns,omitempty"`
	LastNs     int64   `json:"last_ns,omitempty"`
	RateBps    float64 `json:"rate_bps"`
	MinRateBps float64 `json:"min_rate_bps"`
	WindowMs   float64 `json:"window_ms"`
	// From, Arrived and CEMarks are the fates of packets From … Sent−1:
	// bit i (LSB first) of Arrived says whether packet From+i arrived in
	// time, of CEMarks whether it carried CE.
	From    int64  `json:"from"`
	Arrived []byte `json:"arrived,omitempty"`
	CEMarks []byte `json:"ce_marks,omitempty"`
	// TCP is a TCP session's readback (nil for UDP).
	TCP *TCPReport `json:"tcp,omitempty"`
}

// Fate returns whether packet seq (From ≤ seq < Sent) arrived and was CE.
func (r *Report) Fate(seq int64) (arrived, ce, ok bool) {
	i := seq - r.From
	if i < 0 || seq >= r.Sent || i/8 >= int64(len(r.Arrived)) || i/8 >= int64(len(r.CEMarks)) {
		return false, false, false
	}
	return r.Arrived[i/8]&(1<<(i%8)) != 0, r.CEMarks[i/8]&(1<<(i%8)) != 0, true
}

// Validate checks a request's fields before the server uses any of them:
// those of every session, then its transport's.
func (q *SessionRequest) Validate() error {
	check := q.validateUDP
	switch q.Transport {
	case "", TransportUDP:
	case TransportTCP:
		check = q.validateTCP
	default:
		return fmt.Errorf("transport %.32q: want udp or tcp", q.Transport)
	}
	if err := q.validateCommon(); err != nil {
		return err
	}
	return check()
}

// validateCommon checks the fields every session has: the names, the
// target and the planned duration.
func (q *SessionRequest) validateCommon() error {
	switch {
	case len(q.Client) > MaxTextLen || len(q.Test) > MaxTextLen:
		return fmt.Errorf("client and test names: at most %d bytes", MaxTextLen)
	case !finiteIn(q.RateBps, 1, 1e12):
		return fmt.Errorf("rate_bps %g: want 1 to 1e12", q.RateBps)
	case !finiteIn(q.TargetRTTMs, 0, 60_000):
		return fmt.Errorf("target_rtt_ms %g: want 0 to 60000", q.TargetRTTMs)
	case q.TargetMTU < 0 || q.TargetMTU > 65535:
		return fmt.Errorf("target_mtu %d: want 0 to 65535", q.TargetMTU)
	case !finiteIn(q.DurationS, 0, 86400) || q.DurationS == 0:
		return fmt.Errorf("duration_s %g: want more than 0, at most 86400", q.DurationS)
	}
	return nil
}

// validateUDP checks the fields of a UDP session: its datagrams, the
// server's record of them and the feedback.
func (q *SessionRequest) validateUDP() error {
	switch {
	case q.PacketBytes < MinPacketBytes || q.PacketBytes > MaxPacketBytes:
		return fmt.Errorf("packet_bytes %d: want %d to %d", q.PacketBytes, MinPacketBytes, MaxPacketBytes)
	case q.Packets < 1 || q.Packets > MaxPackets:
		return fmt.Errorf("packets %d: want 1 to %d", q.Packets, MaxPackets)
	case q.ReorderPackets < MinReorderPackets || q.ReorderPackets > MaxReorderPackets:
		return fmt.Errorf("reorder_packets %d: want %d to %d", q.ReorderPackets, MinReorderPackets, MaxReorderPackets)
	case !finiteIn(q.LossTimeoutMs, 1, MaxLossTimeoutMs):
		return fmt.Errorf("loss_timeout_ms %g: want 1 to %d", q.LossTimeoutMs, MaxLossTimeoutMs)
	case q.FeedbackPackets < 0 || q.FeedbackPackets > MaxFeedbackPackets:
		return fmt.Errorf("feedback_packets %d: want 0 to %d", q.FeedbackPackets, MaxFeedbackPackets)
	}
	return nil
}

// Validate checks an end request against the session's grant.
func (e *EndRequest) Validate(granted int64) error {
	switch {
	case e.Sent < 0 || e.Sent > granted:
		return fmt.Errorf("sent %d: want 0 to the %d packets granted", e.Sent, granted)
	case e.From < 0 || e.From > e.Sent:
		return fmt.Errorf("from %d: want 0 to sent (%d)", e.From, e.Sent)
	case len(e.Verdict) > MaxTextLen || len(e.Reason) > MaxTextLen:
		return fmt.Errorf("verdict and reason: at most %d bytes", MaxTextLen)
	}
	if e.Verdict == "" || e.Verdict.Valid() {
		return nil
	}
	return fmt.Errorf("verdict %q: want PASS, FAIL, INCONCLUSIVE or ERROR", e.Verdict)
}

func finiteIn(v, lo, hi float64) bool {
	return !math.IsNaN(v) && v >= lo && v <= hi
}

// Data datagram layout (big-endian), DataHeaderLen bytes then padding to
// the session's packet size:
//
//	0  magic "SMBD"     4  version (1)   5  kind (1: data)   6  flags (0)  7 reserved
//	8  token (8)        16 sequence number (8)
//	24 send time (8, sender's clock, Unix ns)
//	32 pattern position (4): the packet's index in its burst (0 for paced)
//	36 burst number (4)
const (
	DataHeaderLen = 40
	Version       = 1
	kindData      = 1
	kindFeedback  = 2
)

var (
	magicData     = [4]byte{'S', 'M', 'B', 'D'}
	magicFeedback = [4]byte{'S', 'M', 'B', 'F'}
)

// Data is one data datagram's header.
type Data struct {
	Token  uint64
	Seq    uint64
	SendNs int64
	// Pos is the packet's position in its burst, Burst the burst's number
	// (paced patterns: every packet its own burst, Pos 0).
	Pos   uint32
	Burst uint32
}

// Errors of the parsers, for counting what a server drops.
var (
	ErrShort   = errors.New("mbmwire: datagram too short")
	ErrMagic   = errors.New("mbmwire: not an MBM datagram")
	ErrVersion = errors.New("mbmwire: unknown version or kind")
	ErrField   = errors.New("mbmwire: field out of range")
	// ErrReserved: a data datagram with its flags or reserved byte set,
	// which version 1 defines as 0 (a sender of a later version, or noise).
	ErrReserved = errors.New("mbmwire: reserved flags set")
)

// PutData writes d's header into b (len(b) ≥ DataHeaderLen); the rest of b
// is the caller's padding.
func PutData(b []byte, d Data) {
	_ = b[DataHeaderLen-1]
	copy(b[0:4], magicData[:])
	b[4], b[5], b[6], b[7] = Version, kindData, 0, 0
	binary.BigEndian.PutUint64(b[8:], d.Token)
	binary.BigEndian.PutUint64(b[16:], d.Seq)
	binary.BigEndian.PutUint64(b[24:], uint64(d.SendNs))
	binary.BigEndian.PutUint32(b[32:], d.Pos)
	binary.BigEndian.PutUint32(b[36:], d.Burst)
}

// ParseData reads a data datagram's header.
func ParseData(b []byte) (Data, error) {
	if len(b) < DataHeaderLen {
		return Data{}, ErrShort
	}
	if [4]byte(b[0:4]) != magicData {
		return Data{}, ErrMagic
	}
	if b[4] != Version || b[5] != kindData {
		return Data{}, ErrVersion
	}
	if b[6] != 0 || b[7] != 0 {
		return Data{}, ErrReserved
	}
	d := Data{
		Token:  binary.BigEndian.Uint64(b[8:]),
		Seq:    binary.BigEndian.Uint64(b[16:]),
		SendNs: int64(binary.BigEndian.Uint64(b[24:])),
		Pos:    binary.BigEndian.Uint32(b[32:]),
		Burst:  binary.BigEndian.Uint32(b[36:]),
	}
	if d.Seq >= MaxPackets {
		return Data{}, ErrField
	}
	return d, nil
}

// Feedback datagram layout (big-endian):
//
//	0  magic "SMBF"   4 version (1)   5 kind (2: feedback)   6 flags   7 reserved
//	8  token (8)
//	16 first (8): the window's first sequence number
//	24 count (4): packets in the window, all final (count ≤ MaxFeedbackPackets)
//	28 reserved (4)
//	32 highest+1 (8): one past the highest sequence number seen
//	40 received (8)   48 ce (8)   56 duplicates (8)   64 reordered (8)   72 late (8)
//	80 arrived bitmap (ceil(count/8) bytes, LSB first), then the CE bitmap
const FeedbackHeaderLen = 80

// Feedback is the server's report of the final fates of packets
// First … First+Count−1 (every packet below First+Count is final), with
// the session's counts so far.
type Feedback struct {
	Token                                     uint64
	First                                     uint64
	Count                                     uint32
	Next                                      uint64 // highest sequence number seen + 1
	Received, CE, Duplicates, Reordered, Late uint64
	// Arrived and CEMarks hold ceil(Count/8) bytes each (LSB first).
	Arrived, CEMarks []byte
}

// Fate is packet First+i's fate (i < Count).
func (f *Feedback) Fate(i uint32) (arrived, ce bool) {
	return f.Arrived[i/8]&(1<<(i%8)) != 0, f.CEMarks[i/8]&(1<<(i%8)) != 0
}

// FeedbackLen is the length of a feedback datagram for count packets.
func FeedbackLen(count uint32) int { return FeedbackHeaderLen + 2*int((count+7)/8) }

// AppendFeedback appends f as a datagram to b. Count must be at most
// MaxFeedbackPackets and the bitmaps ceil(Count/8) bytes.
func AppendFeedback(b []byte, f *Feedback) ([]byte, error) {
	nb := int((f.Count + 7) / 8)
	if f.Count > MaxFeedbackPackets || len(f.Arrived) != nb || len(f.CEMarks) != nb {
		return b, fmt.Errorf("feedback of %d packets with %d and %d bitmap bytes: %w", f.Count, len(f.Arrived), len(f.CEMarks), ErrField)
	}
	var h [FeedbackHeaderLen]byte
	copy(h[0:4], magicFeedback[:])
	h[4], h[5] = Version, kindFeedback
	binary.BigEndian.PutUint64(h[8:], f.Token)
	binary.BigEndian.PutUint64(h[16:], f.First)
	binary.BigEndian.PutUint32(h[24:], f.Count)
	binary.BigEndian.PutUint64(h[32:], f.Next)
	binary.BigEndian.PutUint64(h[40:], f.Received)
	binary.BigEndian.PutUint64(h[48:], f.CE)
	binary.BigEndian.PutUint64(h[56:], f.Duplicates)
	binary.BigEndian.PutUint64(h[64:], f.Reordered)
	binary.BigEndian.PutUint64(h[72:], f.Late)
	b = append(b, h[:]...)
	b = append(b, f.Arrived...)
	return append(b, f.CEMarks...), nil
}

// ParseFeedback reads a feedback datagram; the bitmaps alias b.
func ParseFeedback(b []byte) (Feedback, error) {
	if len(b) < FeedbackHeaderLen {
		return Feedback{}, ErrShort
	}
	if [4]byte(b[0:4]) != magicFeedback {
		return Feedback{}, ErrMagic
	}
	if b[4] != Version || b[5] != kindFeedback {
		return Feedback{}, ErrVersion
	}
	f := Feedback{
		Token:      binary.BigEndian.Uint64(b[8:]),
		First:      binary.BigEndian.Uint64(b[16:]),
		Count:      binary.BigEndian.Uint32(b[24:]),
		Next:       binary.BigEndian.Uint64(b[32:]),
		Received:   binary.BigEndian.Uint64(b[40:]),
		CE:         binary.BigEndian.Uint64(b[48:]),
		Duplicates: binary.BigEndian.Uint64(b[56:]),
		Reordered:  binary.BigEndian.Uint64(b[64:]),
		Late:       binary.BigEndian.Uint64(b[72:]),
	}
	switch {
	case f.Count > MaxFeedbackPackets, f.First > MaxPackets, f.First+uint64(f.Count) > MaxPackets, f.Next > MaxPackets:
		return Feedback{}, ErrField
	case len(b) != FeedbackLen(f.Count):
		return Feedback{}, ErrShort
	}
	nb := int((f.Count + 7) / 8)
	f.Arrived = b[FeedbackHeaderLen : FeedbackHeaderLen+nb]
	f.CEMarks = b[FeedbackHeaderLen+nb : FeedbackHeaderLen+2*nb]
	return f, nil
}
