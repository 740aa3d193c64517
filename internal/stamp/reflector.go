package stamp

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Reflector is a stateful STAMP Session-Reflector (RFC 8762 §4.3) that
// reflects only for sessions opened with Open: a probe is answered when its
// source address is the session's client address and its SSID is the
// session's, within the session's lifetime and rate. The reply has exactly
// the probe's length (never more), so the reflector cannot amplify, and an
// unsolicited or spoofed probe gets no answer at all.
type Reflector struct {
	conn  *Conn
	clock *Clock
	est   ErrorEstimate
	boot  string

	mu       sync.RWMutex
	sessions map[sessionKey]*Session
	byID     map[string]*Session

	// Counters of probes not reflected for want of a session, or too short.
	unsolicited, malformed, reflected atomic.Int64
}

type sessionKey struct {
	addr netip.Addr
	ssid uint16
}

// SessionSpec sets a session's limits.
type SessionSpec struct {
	Client netip.Addr
	// RatePPS and Burst bound the probes reflected (token bucket).
	RatePPS float64
	Burst   int
	Expires time.Time
	// MaxPackets bounds the sequence numbers recorded in the report.
	MaxPackets int
	// ECN marks the replies (the DSCP comes from each probe's CoS TLV,
	// else DSCP).
	DSCP, ECN int
}

// Session is one open reflector session.
type Session struct {
	ID   string
	SSID uint16
	spec SessionSpec

	mu     sync.Mutex
	tokens float64
	last   time.Time
	seq    uint32
	rep    SessionReport
}

// NewReflector reflects on conn, stamping with clock.
func NewReflector(conn *Conn, clock *Clock) *Reflector {
	return &Reflector{
		conn: conn, clock: clock, est: LocalErrorEstimate(), boot: BootID(),
		sessions: map[sessionKey]*Session{}, byID: map[string]*Session{},
	}
}

// Addr returns the reflector's UDP address.
func (r *Reflector) Addr() netip.AddrPort { return r.conn.LocalAddr() }

// ClockInfo describes the reflector's clock for clients.
func (r *Reflector) ClockInfo() ClockInfo {
	return ClockInfo{BootID: r.boot, EpochNs: r.clock.Epoch()}
}

// Open registers a session and picks its SSID (non-zero, unique for the
// client address).
func (r *Reflector) Open(spec SessionSpec) (*Session, error) {
	if !spec.Client.IsValid() {
		return nil, errors.New("stamp: session without a client address")
	}
	if spec.RatePPS <= 0 || spec.MaxPackets <= 0 {
		return nil, fmt.Errorf("stamp: session needs a positive rate and packet count, got %v pps, %d", spec.RatePPS, spec.MaxPackets)
	}
	spec.Client = spec.Client.Unmap()
	spec.Burst = max(spec.Burst, 1)
	var idb [16]byte
	_, _ = rand.Read(idb[:])
	s := &Session{
		ID: hex.EncodeToString(idb[:]), spec: spec, tokens: float64(spec.Burst),
		rep: SessionReport{Bitmap: make([]byte, (spec.MaxPackets+7)/8), TOS: map[int]int{}},
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for range 64 {
		var b [2]byte
		_, _ = rand.Read(b[:])
		ssid := binary.BigEndian.Uint16(b[:])
		if ssid == 0 {
			continue
		}
		k := sessionKey{spec.Client, ssid}
		if _, taken := r.sessions[k]; !taken {
			s.SSID = ssid
			r.sessions[k] = s
			r.byID[s.ID] = s
			return s, nil
		}
	}
	return nil, errors.New("stamp: no free SSID for this client")
}

// Close ends a session and returns its report; ok is false for an unknown
// ID. Probes of a closed session are no longer reflected.
func (r *Reflector) Close(id string) (rep SessionReport, ok bool) {
	r.mu.Lock()
	s := r.byID[id]
	if s != nil {
		delete(r.byID, id)
		delete(r.sessions, sessionKey{s.spec.Client, s.SSID})
	}
	r.mu.Unlock()
	if s == nil {
		return SessionReport{}, false
	}
	return s.report(), true
}

// Sessions counts open sessions.
func (r *Reflector) Sessions() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byID)
}

// Counters returns probes reflected, unsolicited (no session) and malformed.
func (r *Reflector) Counters() (reflected, unsolicited, malformed int64) {
	return r.reflected.Load(), r.unsolicited.Load(), r.malformed.Load()
}

func (s *Session) report() SessionReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep := s.rep
	rep.Bitmap = append([]byte(nil), s.rep.Bitmap...)
	rep.TOS = make(map[int]int, len(s.rep.TOS))
	for k, v := range s.rep.TOS {
		rep.TOS[k] = v
	}
	return rep
}

// admit records a probe and decides whether to reflect it; it returns the
// reflector sequence number to use.
func (s *Session) admit(seq uint32, tos int, now time.Time) (uint32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.spec.Expires) {
		s.rep.Late++
		return 0, false
	}
	// Arrival times may step back a little (one probe timed by the
	// kernel, the next by its read): the bucket never refills backwards.
	if s.last.IsZero() {
		s.last = now
	} else if el := now.Sub(s.last); el > 0 {
		s.tokens = min(float64(s.spec.Burst), s.tokens+el.Seconds()*s.spec.RatePPS)
		s.last = now
	}
	if s.tokens < 1 {
		s.rep.RateLimited++
		return 0, false
	}
	s.tokens--
	if int64(seq) < int64(s.spec.MaxPackets) {
		i, bit := seq/8, byte(1)<<(seq%8)
		if s.rep.Bitmap[i]&bit != 0 {
			s.rep.Duplicates++
		} else {
			s.rep.Bitmap[i] |= bit
			s.rep.Received++
		}
	} else {
		s.rep.Received++
	}
	if tos >= 0 {
		s.rep.TOS[tos]++
	}
	n := s.seq
	s.seq++
	return n, true
}

func (s *Session) sent(err error) {
	s.mu.Lock()
	if err != nil {
		s.rep.SendErrors++
	} else {
		s.rep.Reflected++
	}
	s.mu.Unlock()
}

// Serve reflects until the socket is closed (then it returns nil) or fails.
func (r *Reflector) Serve() error {
	in := make([]byte, MaxPacketLen+1)
	out := make([]byte, MaxPacketLen)
	oob := make([]byte, OOBLen())
	for {
		n, info, err := r.conn.Read(in, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("stamp: reflector read: %w", err)
		}
		t2 := r.clock.At(info.At)
		if info.KernelNs != 0 {
			if k, ok := r.clock.FromKernel(info.KernelNs, info.At); ok {
				t2 = k
			}
		}
		if n < BaseLen || n > MaxPacketLen {
			r.malformed.Add(1)
			continue
		}
		ssid := binary.BigEndian.Uint16(in[14:])
		r.mu.RLock()
		s := r.sessions[sessionKey{info.From.Addr(), ssid}]
		r.mu.RUnlock()
		if s == nil {
			r.unsolicited.Add(1)
			continue
		}
		rseq, ok := s.admit(binary.BigEndian.Uint32(in[0:]), info.TOS, arrival(info))
		if !ok {
			continue
		}
		tos := Reflect(out[:n], in[:n], ReflectInfo{
			Seq: rseq, Receive: TimestampFromNs(t2), Error: r.est, TTL: info.TTL, TOS: info.TOS,
			DSCP: s.spec.DSCP, ECN: s.spec.ECN,
		})
		// T3 as late as possible: just before the send.
		binary.BigEndian.PutUint64(out[4:], uint64(TimestampFromNs(r.clock.Now())))
		err = r.conn.WriteTo(out[:n], info.From, tos)
		s.sent(err)
		if err == nil {
			r.reflected.Add(1)
		}
	}
}

// maxReadLag bounds the read lag arrival trusts; a larger one means the
// kernel and user-space clocks disagree (a wall-clock step).
const maxReadLag = 10 * time.Second

// arrival is when a probe reached the host: the read time moved back by
// how long it waited in the socket's queue (kernel timestamp to read, both
// on the wall clock), keeping the read time's monotonic reading. The rate
// limit and the expiry are judged on it, not on the read time: a
// reflector starved of CPU reads a backlog of probes at once, and judged
// at their read time a steady 50 probes/s would look like one burst and
// all but the bucket's burst be dropped (under load, half a session's
// probes were, counted as forward loss).
func arrival(info RecvInfo) time.Time {
	if info.KernelNs == 0 {
		return info.At
	}
	lag := time.Duration(info.At.UnixNano() - info.KernelNs)
	if lag <= 0 || lag > maxReadLag {
		return info.At
	}
	return info.At.Add(-lag)
}

// ReflectInfo is what the reflector adds to a reply.
type ReflectInfo struct {
	Seq     uint32
	Receive Timestamp
	Error   ErrorEstimate
	// TTL and TOS received with the probe (−1: unknown).
	TTL, TOS int
	// DSCP and ECN for the reply when the probe has no CoS TLV (DSCP) and
	// always (ECN).
	DSCP, ECN int
}

// Reflect writes into out (len(out) == len(in) ≥ BaseLen) the reflector
// packet answering in, with the reply timestamp left for the caller to set
// last, and returns the DS field to send it with. TLVs are copied and
// answered per RFC 8972: the U flag is cleared on the types the reflector
// knows (Extra Padding, CoS) and set on others; a CoS TLV gets the received
// DSCP and ECN, and its DSCP1 marks the reply; a malformed TLV gets the M
// flag and ends the walk, the rest being copied unchanged.
func Reflect(out, in []byte, ri ReflectInfo) (tos int) {
	binary.BigEndian.PutUint32(out[0:], ri.Seq)
	binary.BigEndian.PutUint64(out[4:], 0)
	binary.BigEndian.PutUint16(out[12:], uint16(ri.Error))
	copy(out[14:16], in[14:16]) // SSID
	binary.BigEndian.PutUint64(out[16:], uint64(ri.Receive))
	copy(out[24:38], in[0:14]) // sender seq, timestamp, error estimate
	clear(out[38:44])
	if ri.TTL >= 0 {
		out[40] = byte(ri.TTL)
	}
	copy(out[BaseLen:], in[BaseLen:])
	tos = (ri.DSCP&0x3f)<<2 | ri.ECN&0x3
	for off := BaseLen; off < len(out); {
		if len(out)-off < TLVHeaderLen {
			break
		}
		n := int(binary.BigEndian.Uint16(out[off+2:]))
		if off+TLVHeaderLen+n > len(out) {
			out[off] |= FlagM
			break
		}
		v := out[off+TLVHeaderLen : off+TLVHeaderLen+n]
		switch out[off+1] {
		case TypeExtraPadding:
			out[off] &^= FlagU
		case TypeCoS:
			if c, err := ParseCoS(v); err == nil {
				out[off] &^= FlagU
				if ri.TOS >= 0 {
					c.DSCP2, c.ECN = uint8(ri.TOS>>2), uint8(ri.TOS&0x3)
				}
				c.RP = 0
				c.put(v)
				tos = int(c.DSCP1)<<2 | ri.ECN&0x3
			} else {
				out[off] |= FlagM
			}
		default:
			out[off] |= FlagU
		}
		off += TLVHeaderLen + n
	}
	return tos
}
