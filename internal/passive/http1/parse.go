// Package http1 follows HTTP/1.x over the two byte streams of a captured TCP
// connection: it reassembles each direction's payload just far enough to
// read header blocks (bodies are skipped by length, chunk framing or the
// close, never buffered), pairs requests with responses and reports per
// exchange the time to first byte and completion, the connection's
// persistence, who closed it, and page loads across connections. Anything
// it cannot follow (segments missing from the capture, a capture that
// starts mid-stream, a snap length cutting headers) stops the connection's
// analysis with a reason instead of guessing.
package http1

import (
	"bytes"
	"strconv"
	"strings"
)

// Limits bounding the per-connection state.
const (
	maxHeaderBlock = 64 << 10 // bytes of one message's start line and headers
	maxLine        = 4 << 10  // a chunk-size or trailer line
)

type state uint8

const (
	sIdle      state = iota // between messages
	sHeader                 // reading the start line and headers
	sBody                   // skipping `remaining` body bytes
	sChunkSize              // reading a chunk-size line
	sChunkData              // skipping chunk data
	sChunkEnd               // the CRLF after chunk data
	sTrailer                // trailer lines after the last chunk
	sClose                  // body delimited by the connection's close
	sDead
)

// bodyKind is how a message's body is delimited.
type bodyKind uint8

const (
	bodyNone bodyKind = iota
	bodyLength
	bodyChunked
	bodyClose
	bodyTunnel // 101 Switching Protocols or a CONNECT tunnel: stop parsing
)

// message is the parsed head of a request or response.
type message struct {
	request bool
	method  string // request
	target  string // request
	host    string
	version string // "HTTP/1.1"
	status  int    // response
	minor   int    // HTTP/1.minor
	// connection header tokens
	close, keepAlive bool
	chunked          bool // Transfer-Encoding ends with chunked
	otherTE          bool // Transfer-Encoding present, not chunked-final
	length           int64
	hasLength        bool
	headerBytes      int
}

// events receives a parser's messages.
type events interface {
	start(t int64)
	head(m *message) (bodyKind, int64)
	end(t int64, msgBytes, bodyBytes uint64)
	fail(reason string)
}

// parser reads one direction's byte stream as a sequence of HTTP/1.x
// messages.
type parser struct {
	request   bool
	ev        events
	st        state
	buf       []byte
	scanned   int
	remaining int64
	msgBytes  uint64
	bodyBytes uint64
	lastT     int64
}

// looksLikeStart reports whether b plausibly begins a message of this
// direction.
func (p *parser) looksLikeStart(b []byte) bool {
	if !p.request {
		return bytes.HasPrefix(b, []byte("HTTP/1."))
	}
	return LooksLikeRequest(b)
}

// LooksLikeRequest reports whether b, a connection's first client bytes,
// plausibly begins an HTTP/1.x request: an upper-case method, a space and,
// if the line is complete, an HTTP/1.x version at its end.
func LooksLikeRequest(b []byte) bool {
	i := bytes.IndexByte(b, ' ')
	if i <= 0 || i > 20 {
		return false
	}
	for _, c := range b[:i] {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	if j := bytes.IndexByte(b, '\n'); j >= 0 { // a whole request line: it names the version
		return bytes.HasPrefix(bytes.TrimRight(b[bytes.LastIndexByte(b[:j], ' ')+1:j], "\r"), []byte("HTTP/1."))
	}
	return true
}

// MayStartResponse reports whether b (a server's first captured bytes,
// perhaps cut by the snap length) can begin an HTTP/1.x response: its
// status line's version.
func MayStartResponse(b []byte) bool {
	const v = "HTTP/1."
	return string(b[:min(len(b), len(v))]) == v[:min(len(b), len(v))]
}

func (p *parser) die(reason string) {
	if p.st != sDead {
		p.st = sDead
		p.buf = nil
		p.ev.fail(reason)
	}
}

// feed consumes n stream bytes at capture time t, of which data holds the
// first len(data) (the rest were cut by the capture's snap length).
func (p *parser) feed(t int64, data []byte, n int) {
	p.lastT = t
	for n > 0 {
		switch p.st {
		case sDead:
			return
		case sIdle:
			if len(data) == 0 {
				p.die("truncated")
				return
			}
			if data[0] == '\r' || data[0] == '\n' { // tolerated between messages
				data, n = data[1:], n-1
				continue
			}
			p.st, p.buf, p.scanned, p.msgBytes, p.bodyBytes = sHeader, p.buf[:0], 0, 0, 0
			p.ev.start(t)
		case sHeader:
			if len(data) == 0 {
				p.die("truncated")
				return
			}
			old := len(p.buf)
			take := min(len(data), maxHeaderBlock+4-old)
			p.buf = append(p.buf, data[:take]...)
			end := p.headerEnd()
			if end < 0 {
				if len(p.buf) > maxHeaderBlock {
					p.die("limit")
					return
				}
				data, n = data[take:], n-take
				continue
			}
			used := end - old
			data, n = data[used:], n-used
			p.msgBytes += uint64(end)
			if !p.headDone(t, p.buf[:end]) {
				return
			}
		case sBody, sChunkData:
			k := int(min(int64(n), p.remaining))
			data, n = data[min(k, len(data)):], n-k
			p.remaining -= int64(k)
			p.msgBytes += uint64(k)
			p.bodyBytes += uint64(k)
			if p.remaining == 0 {
				if p.st == sBody {
					p.finish(t)
				} else {
					p.st, p.remaining = sChunkEnd, 2
				}
			}
		case sChunkEnd:
			// CRLF after chunk data (a bare LF is tolerated).
			if len(data) == 0 {
				p.die("truncated")
				return
			}
			c := data[0]
			data, n = data[1:], n-1
			p.msgBytes++
			switch {
			case c == '\n':
				p.st, p.buf = sChunkSize, p.buf[:0]
			case c == '\r' && p.remaining == 2:
				p.remaining = 1
			default:
				p.die("malformed")
				return
			}
		case sChunkSize, sTrailer:
			if len(data) == 0 {
				p.die("truncated")
				return
			}
			i := bytes.IndexByte(data, '\n')
			k := i + 1
			if i < 0 {
				k = len(data)
			}
			p.buf = append(p.buf, data[:k]...)
			data, n = data[k:], n-k
			p.msgBytes += uint64(k)
			if len(p.buf) > maxLine {
				p.die("limit")
				return
			}
			if i < 0 {
				continue
			}
			line := bytes.TrimRight(p.buf, "\r\n")
			p.buf = p.buf[:0]
			if p.st == sTrailer {
				if len(line) == 0 {
					p.finish(t)
				}
				continue
			}
			if j := bytes.IndexByte(line, ';'); j >= 0 { // chunk extensions
				line = line[:j]
			}
			size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
			if err != nil || size < 0 {
				p.die("malformed")
				return
			}
			if size == 0 {
				p.st = sTrailer
			} else {
				p.st, p.remaining = sChunkData, size
			}
		case sClose:
			k := n
			data, n = data[min(k, len(data)):], 0
			p.msgBytes += uint64(k)
			p.bodyBytes += uint64(k)
		}
	}
}

// eof is the direction's end (FIN or RST) at time t.
func (p *parser) eof(t int64) {
	switch p.st {
	case sClose:
		p.finish(p.lastT)
	case sIdle, sDead:
	default:
		p.die("truncated") // the stream ended inside a message
	}
	p.st = sDead
}

func (p *parser) finish(t int64) {
	p.st = sIdle
	p.ev.end(t, p.msgBytes, p.bodyBytes)
}

// headerEnd returns the length of the header block in buf (through its
// empty line), or -1 when it is not complete yet.
func (p *parser) headerEnd() int {
	b := p.buf
	for i := p.scanned; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 >= len(b) {
			p.scanned = i
			return -1
		}
		if b[i+1] == '\n' {
			return i + 2
		}
		if b[i+1] == '\r' {
			if i+2 >= len(b) {
				p.scanned = i
				return -1
			}
			if b[i+2] == '\n' {
				return i + 3
			}
		}
	}
	p.scanned = len(b)
	return -1
}

// headDone parses a complete header block and sets the body state; false
// when the stream cannot be followed further.
func (p *parser) headDone(t int64, block []byte) bool {
	var m message
	if !parseHead(block, p.request, &m) {
		p.die("malformed")
		return false
	}
	m.headerBytes = len(block)
	kind, n := p.ev.head(&m)
	p.buf = p.buf[:0]
	switch kind {
	case bodyNone:
		p.finish(t)
	case bodyLength:
		if n == 0 {
			p.finish(t)
		} else {
			p.st, p.remaining = sBody, n
		}
	case bodyChunked:
		p.st = sChunkSize
	case bodyClose:
		p.st = sClose
	case bodyTunnel:
		p.die("upgrade")
		return false
	}
	return p.st != sDead
}

// parseHead parses a start line and header fields.
func parseHead(block []byte, request bool, m *message) bool {
	m.request = request
	lines := strings.Split(string(block), "\n")
	first := strings.TrimRight(lines[0], "\r")
	if request {
		parts := strings.Split(first, " ")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
			return false
		}
		for _, c := range parts[0] {
			if c <= ' ' || c >= 0x7f {
				return false
			}
		}
		m.method, m.target, m.version = parts[0], parts[1], parts[2]
	} else {
		v, rest, _ := strings.Cut(first, " ")
		m.version = v
		code, _, _ := strings.Cut(rest, " ")
		st, err := strconv.Atoi(code)
		if err != nil || len(code) != 3 || st < 100 {
			return false
		}
		m.status = st
	}
	switch m.version {
	case "HTTP/1.0":
		m.minor = 0
	case "HTTP/1.1":
		m.minor = 1
	default:
		return false
	}
	for _, l := range lines[1:] {
		l = strings.TrimRight(l, "\r")
		if l == "" {
			break
		}
		if l[0] == ' ' || l[0] == '\t' { // obsolete line folding: ignored
			continue
		}
		name, val, ok := strings.Cut(l, ":")
		if !ok {
			return false
		}
		val = strings.TrimSpace(val)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "host":
			m.host = val
		case "content-length":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 0 || (m.hasLength && n != m.length) {
				return false // invalid or conflicting lengths: request smuggling territory
			}
			m.length, m.hasLength = n, true
		case "transfer-encoding":
			codings := strings.Split(val, ",")
			last := strings.ToLower(strings.TrimSpace(codings[len(codings)-1]))
			m.chunked = last == "chunked"
			m.otherTE = !m.chunked
		case "connection":
			for _, tok := range strings.Split(val, ",") {
				switch strings.ToLower(strings.TrimSpace(tok)) {
				case "close":
					m.close = true
				case "keep-alive":
					m.keepAlive = true
				}
			}
		}
	}
	return true
}
