// Package protocol defines sonde's own test protocol (docs/protocol.md): the
// JSON control messages exchanged over HTTP and the binary frames carried by
// load and probe streams. Server and clients both import it; it does no I/O
// of its own beyond encoding frames to and from an io.Reader/io.Writer.
package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
)

// Version is the protocol version, part of every path.
const Version = "v1"

// Paths of the control API; {id} is the session ID.
const (
	PathSessions = "/sonde/v1/sessions"
	PathPing     = "/sonde/v1/ping"
	// StreamUpgrade is the Upgrade token of a raw framed stream.
	StreamUpgrade = "sonde-stream/1"
	// CCLossBased is the value of a load stream request's cc parameter
	// that asks the server to send under a loss-based congestion control
	// (cubic, else reno) instead of its host's default.
	CCLossBased = "loss"
)

// Stream kinds, the last path element after the session ID.
const (
	KindDownload = "download"
	KindUpload   = "upload"
	KindProbe    = "probe"
)

// TagBidir starts the tag of every stream of a bidirectional phase
// (download and upload streams at once), so the server's own record keeps
// that phase apart from the one-way phases (docs/protocol.md).
const TagBidir = "bidir-"

// SessionRequest opens a test session (POST PathSessions).
type SessionRequest struct {
	Client string `json:"client"`
	// DurationS is the longest load phase the client intends to run.
	DurationS float64 `json:"duration_s"`
	// TCPInfoIntervalMs asks the server to sample TCP_INFO of its flows at
	// this interval (clamped by the server to [5, 1000]).
	TCPInfoIntervalMs float64 `json:"tcpinfo_interval_ms,omitempty"`
}

// SessionReply grants a session.
type SessionReply struct {
	ID           string  `json:"id"`
	Server       string  `json:"server"`
	MaxDurationS float64 `json:"max_duration_s"`
	MaxStreams   int     `json:"max_streams"`
	MaxBytes     int64   `json:"max_bytes,omitempty"`
	ExpiresS     float64 `json:"expires_s"`
	// ExtraPorts are further ports on which the server accepts streams
	// (for QoS classes on different ports).
	ExtraPorts []int `json:"extra_ports,omitempty"`
}

// ErrorReply is the body of every non-2xx reply of the control API.
type ErrorReply struct {
	Error string `json:"error"`
}

// FlowReport is what the server measured of one stream.
type FlowReport struct {
	ID   int    `json:"id"`
	Kind string `json:"kind"`
	// Tag is the client's name for the stream (the stream request's tag
	// parameter), so the client can match reports to its own flows.
	Tag    string  `json:"tag,omitempty"`
	DSCP   int     `json:"dscp,omitempty"`
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Bytes is payload the server received (upload) or sent (download).
	Bytes int64 `json:"bytes"`
	// Counts is the server-side receive series (upload flows only).
	Counts      []model.ByteCount `json:"counts,omitempty"`
	TCPInfo     []model.TCPSample `json:"tcpinfo"`
	SndBufBytes int               `json:"sndbuf_bytes,omitempty"`
	RcvBufBytes int               `json:"rcvbuf_bytes,omitempty"`
	Error       string            `json:"error,omitempty"`
	// Limit names the server limit that ended the stream before the
	// client closed it: LimitBytes or LimitDuration; empty otherwise.
	Limit string `json:"limit,omitempty"`
}

// Limits a server may end a stream at (FlowReport.Limit).
const (
	LimitBytes    = "max_bytes"
	LimitDuration = "max_duration"
)

// Report is the server's side of a session (GET .../{id}/report).
type Report struct {
	ID    string       `json:"id"`
	Flows []FlowReport `json:"flows"`
}

// LiveFlow is the latest state of one stream (GET .../{id}/live), used by
// clients for progress and for --streams auto.
type LiveFlow struct {
	ID      int             `json:"id"`
	Kind    string          `json:"kind"`
	Tag     string          `json:"tag,omitempty"` // the stream request's tag
	Bytes   int64           `json:"bytes"`
	TCPInfo model.TCPSample `json:"tcpinfo"`
	Done    bool            `json:"done"`
}

// Live lists the session's flows.
type Live struct {
	TS    float64    `json:"t_s"`
	Flows []LiveFlow `json:"flows"`
}

// Frame types on a stream.
const (
	FrameData       byte = 1 // payload: incompressible bytes
	FrameProbe      byte = 2 // payload: Probe (client → server)
	FrameProbeReply byte = 3 // payload: ProbeReply (server → client)
)

// HeaderLen is the size of a frame header: type (1), reserved (3), payload
// length (4, big endian).
const HeaderLen = 8

// MaxPayload bounds a frame's payload; larger frames are a protocol error.
const MaxPayload = 4 << 20

// ProbeLen and ProbeReplyLen are the payload sizes of probe frames.
const (
	ProbeLen      = 16
	ProbeReplyLen = 32
)

// ErrFrame reports a malformed frame.
var ErrFrame = errors.New("protocol: malformed frame")

// Probe is an echo request. SentNs is opaque to the server (the client's own
// monotonic clock).
type Probe struct {
	Seq    uint64
	SentNs int64
}

// ProbeReply echoes a Probe with the server's receive and send times in ns
// since the session started (server clock).
type ProbeReply struct {
	Seq    uint64
	SentNs int64
	RecvNs int64
	SendNs int64
}

// PutHeader writes a frame header for a payload of n bytes into b[:HeaderLen].
func PutHeader(b []byte, typ byte, n int) {
	b[0] = typ
	b[1], b[2], b[3] = 0, 0, 0
	binary.BigEndian.PutUint32(b[4:8], uint32(n))
}

// ParseHeader decodes a frame header.
func ParseHeader(b []byte) (typ byte, n int, err error) {
	typ = b[0]
	n = int(binary.BigEndian.Uint32(b[4:8]))
	switch {
	case typ < FrameData || typ > FrameProbeReply:
		return 0, 0, fmt.Errorf("%w: unknown type %d", ErrFrame, typ)
	case b[1]|b[2]|b[3] != 0:
		return 0, 0, fmt.Errorf("%w: reserved bytes set", ErrFrame)
	case n > MaxPayload:
		return 0, 0, fmt.Errorf("%w: payload %d bytes exceeds %d", ErrFrame, n, MaxPayload)
	case typ == FrameProbe && n != ProbeLen, typ == FrameProbeReply && n != ProbeReplyLen:
		return 0, 0, fmt.Errorf("%w: type %d with length %d", ErrFrame, typ, n)
	}
	return typ, n, nil
}

// AppendProbe appends a complete probe frame to b.
func AppendProbe(b []byte, p Probe) []byte {
	var h [HeaderLen]byte
	PutHeader(h[:], FrameProbe, ProbeLen)
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, p.Seq)
	return binary.BigEndian.AppendUint64(b, uint64(p.SentNs))
}

// AppendProbeReply appends a complete probe reply frame to b.
func AppendProbeReply(b []byte, r ProbeReply) []byte {
	var h [HeaderLen]byte
	PutHeader(h[:], FrameProbeReply, ProbeReplyLen)
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(r.SentNs))
	b = binary.BigEndian.AppendUint64(b, uint64(r.RecvNs))
	return binary.BigEndian.AppendUint64(b, uint64(r.SendNs))
}

// DecodeProbe decodes a probe payload.
func DecodeProbe(b []byte) Probe {
	return Probe{Seq: binary.BigEndian.Uint64(b[0:8]), SentNs: int64(binary.BigEndian.Uint64(b[8:16]))}
}

// DecodeProbeReply decodes a probe reply payload.
func DecodeProbeReply(b []byte) ProbeReply {
	return ProbeReply{
		Seq:    binary.BigEndian.Uint64(b[0:8]),
		SentNs: int64(binary.BigEndian.Uint64(b[8:16])),
		RecvNs: int64(binary.BigEndian.Uint64(b[16:24])),
		SendNs: int64(binary.BigEndian.Uint64(b[24:32])),
	}
}

// Reader parses frames from a stream with one buffer, so data payloads are
// counted and discarded without a copy per frame.
type Reader struct {
	r     io.Reader
	buf   []byte
	start int
	end   int
	// grow, if above len(buf), is the size the buffer may double to
	// while data reads fill it (GrowTo).
	grow int
}

// GrowTo lets the buffer double, up to max bytes, each time a read of
// data payload fills it: a fast stream is then read in fewer, larger
// system calls, and a slow one keeps its small buffer.
func (fr *Reader) GrowTo(max int) { fr.grow = max }

// NewReader returns a Reader with a buffer of size bytes (≥ 4 KiB).
func NewReader(r io.Reader, size int) *Reader {
	if size < 4096 {
		size = 4096
	}
	return &Reader{r: r, buf: make([]byte, size)}
}

// fill ensures at least n buffered bytes (n ≤ len(buf)).
func (fr *Reader) fill(n int) error {
	if fr.end-fr.start >= n {
		return nil
	}
	if fr.start > 0 {
		fr.end = copy(fr.buf, fr.buf[fr.start:fr.end])
		fr.start = 0
	}
	for fr.end < n {
		m, err := fr.r.Read(fr.buf[fr.end:])
		fr.end += m
		if err != nil {
			if fr.end >= n {
				return nil
			}
			if errors.Is(err, io.EOF) && fr.end > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// Next reads one frame. For FrameData it discards the payload, calling
// onData with each chunk's length as it arrives (so receivers count bytes
// while a large frame is still in flight), and returns a nil payload. For
// probe frames it returns the payload, valid until the next call.
func (fr *Reader) Next(onData func(n int)) (typ byte, payload []byte, err error) {
	if err := fr.fill(HeaderLen); err != nil {
		return 0, nil, err
	}
	typ, n, err := ParseHeader(fr.buf[fr.start : fr.start+HeaderLen])
	if err != nil {
		return 0, nil, err
	}
	fr.start += HeaderLen
	if typ != FrameData {
		if err := fr.fill(n); err != nil {
			return 0, nil, err
		}
		p := fr.buf[fr.start : fr.start+n]
		fr.start += n
		return typ, p, nil
	}
	for n > 0 {
		if fr.start == fr.end {
			fr.start, fr.end = 0, 0
			m, err := fr.r.Read(fr.buf)
			fr.end = m
			if err != nil && m == 0 {
				if errors.Is(err, io.EOF) {
					return 0, nil, io.ErrUnexpectedEOF
				}
				return 0, nil, err
			}
		}
		m := min(n, fr.end-fr.start)
		fr.start += m
		n -= m
		if onData != nil {
			onData(m)
		}
		if fr.end == len(fr.buf) && fr.start == fr.end && len(fr.buf) < fr.grow {
			// A read filled the buffer with payload, all of it
			// counted now: nothing buffered is lost.
			fr.buf = make([]byte, min(2*len(fr.buf), fr.grow))
			fr.start, fr.end = 0, 0
		}
	}
	return typ, nil, nil
}

// ParseServer reads a sonde server address: "host", "host:port" or
// "http(s)://host[:port]". The default port is 8080 (443 for https); path,
// query and fragment are dropped.
func ParseServer(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("no server address given")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid server address %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid server address %q: scheme must be http or https", s)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("invalid server address %q: no host", s)
	}
	if u.Port() == "" {
		port := "8080"
		if u.Scheme == "https" {
			port = "443"
		}
		u.Host = net.JoinHostPort(u.Hostname(), port)
	}
	u.Path, u.RawQuery, u.Fragment = "", "", ""
	return u, nil
}
