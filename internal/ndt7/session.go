package ndt7

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

const (
	// scalingFraction: the download message doubles once it is no more
	// than 1/16 of the bytes sent so far (spec appendix).
	scalingFraction = 16

	// Measurements are sent at exponentially distributed intervals, as
	// ndt-server does, so their timing cannot alias with any periodic
	// behaviour of the path. The clamps are ndt-server's.
	meanInterval = 250 * time.Millisecond
	minInterval  = 25 * time.Millisecond
	maxInterval  = 625 * time.Millisecond

	// drainBufferSize is the chunk in which client messages are read and
	// discarded; message size does not matter, so 16 MiB messages cost no
	// more memory than this.
	drainBufferSize = 32 << 10
)

var errUnexpectedBinary = errors.New("ndt7: client sent a binary message during a download")

// errByteLimit stops reading an upload at the server's byte limit.
var errByteLimit = errors.New("ndt7: byte limit reached")

// byteLimitReason is the Close frame's reason when a test ends at the
// server's byte limit (at most 123 bytes, RFC 6455).
const byteLimitReason = "server byte limit reached"

// ErrTimeLimit is wrapped by the error of a test that was still running at
// its hard limit (Duration plus 3 s), e.g. because the client stopped
// reading.
var ErrTimeLimit = errors.New("ndt7: test still running at its hard time limit")

// session is one test on one WebSocket connection. One goroutine (run)
// does all data writes; another (read) does all reads. Control frames may be
// written by either, which gorilla allows.
type session struct {
	h    *Handler
	kind Kind
	conn *websocket.Conn
	// rc reads TCP_INFO; nil if the connection is not a TCP socket.
	rc    syscall.RawConn
	uuid  string
	start time.Time
	// end is when load stops; hardEnd is when the connection is dropped
	// whatever the client does.
	end, hardEnd time.Time

	// sent is the download payload written so far (run's goroutine only).
	sent int64
	// atLimit is set (run's goroutine only) when the download stopped at
	// the byte limit.
	atLimit bool
	// received is the payload read from the client so far.
	received     atomic.Int64
	connInfoSent bool
	// counts and tcp are the measurements sent (run's goroutine only),
	// the first maxRecorded of them, for the test's Result.
	counts []model.ByteCount
	tcp    []model.TCPSample

	// readErr is why reading stopped; it is set before readDone is closed.
	readErr  error
	readDone chan struct{}
}

func newSession(h *Handler, kind Kind, conn *websocket.Conn) *session {
	now := time.Now()
	s := &session{
		h:        h,
		kind:     kind,
		conn:     conn,
		uuid:     newUUID(),
		start:    now,
		end:      now.Add(h.duration),
		hardEnd:  now.Add(h.duration + h.grace),
		readDone: make(chan struct{}),
	}
	if rc, err := tcpinfo.RawConn(conn.NetConn()); err == nil {
		s.rc = rc
	}
	return s
}

// bytes is the test's application-level byte count so far.
func (s *session) bytes() int64 {
	if s.kind == Download {
		return s.sent
	}
	return s.received.Load()
}

// run carries the test to its end and returns why it failed, if it did. It
// returns only after the connection is closed and the reader has exited.
func (s *session) run() error {
	defer func() {
		s.conn.Close()
		<-s.readDone
	}()
	s.conn.SetReadLimit(s.h.readLimit)
	// gorilla applies these deadlines to every frame, so no read or write
	// can outlive the test.
	if err := s.conn.SetReadDeadline(s.hardEnd); err != nil {
		close(s.readDone)
		return fmt.Errorf("ndt7: setting read deadline: %w", err)
	}
	if err := s.conn.SetWriteDeadline(s.hardEnd); err != nil {
		close(s.readDone)
		return fmt.Errorf("ndt7: setting write deadline: %w", err)
	}
	go s.read()
	var err error
	if s.kind == Download {
		err = s.sendLoad()
	} else {
		err = s.acceptLoad()
	}
	select {
	case <-s.readDone:
		if errors.Is(s.readErr, errByteLimit) && err == nil {
			// The reader stopped taking the client's load; say why and
			// end without waiting for the client's Close, which would
			// come after load the server no longer accepts.
			if err := s.sendMeasurement(time.Now()); err != nil {
				return err
			}
			msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, byteLimitReason)
			_ = s.conn.WriteControl(websocket.CloseMessage, msg, s.hardEnd)
			s.h.logf("ndt7: %s: stopped at the byte limit (%d bytes)", s.kind, s.h.maxBytes)
			return nil
		}
		// Reading stopped first (the client closed, broke the protocol or
		// vanished, or the hard limit came); a write error is a consequence.
		return s.readEnded()
	default:
	}
	if err != nil {
		return err
	}
	reason := ""
	if s.atLimit {
		reason = byteLimitReason
		s.h.logf("ndt7: %s: stopped at the byte limit (%d bytes)", s.kind, s.h.maxBytes)
	}
	s.closeHandshake(reason)
	return nil
}

// sendLoad writes binary messages until the test's end, with a measurement
// first, then at random intervals, and last.
func (s *session) sendLoad() error {
	next := time.Now()
	i := 0
	for {
		now := time.Now()
		if !now.Before(s.end) {
			return s.sendMeasurement(now)
		}
		select {
		case <-s.readDone:
			return nil
		default:
		}
		if !now.Before(next) {
			if err := s.sendMeasurement(now); err != nil {
				return err
			}
			next = now.Add(nextInterval())
		}
		if s.h.maxBytes > 0 {
			// The largest message that still fits the byte limit; none
			// fits: the load ends here.
			for i >= 0 && s.sent+int64(InitialMessageSize)<<i > s.h.maxBytes {
				i--
			}
			if i < 0 {
				s.atLimit = true
				return s.sendMeasurement(now)
			}
		}
		if err := s.conn.WritePreparedMessage(s.h.messages[i]); err != nil {
			return s.failed("sending load", err)
		}
		size := int64(InitialMessageSize) << i
		s.sent += size
		if i+1 < len(s.h.messages) && size <= s.sent/scalingFraction {
			i++
		}
	}
}

// acceptLoad sends measurements while the reader counts the client's load.
func (s *session) acceptLoad() error {
	if err := s.sendMeasurement(time.Now()); err != nil {
		return err
	}
	tick := time.NewTimer(nextInterval())
	defer tick.Stop()
	end := time.NewTimer(time.Until(s.end))
	defer end.Stop()
	for {
		select {
		case <-s.readDone:
			return nil
		case <-end.C:
			return s.sendMeasurement(time.Now())
		case <-tick.C:
			if err := s.sendMeasurement(time.Now()); err != nil {
				return err
			}
			tick.Reset(nextInterval())
		}
	}
}

// closeHandshake sends Close and waits, until the hard end at most, for the
// client's Close (or any end of reading). A client that drops the
// connection instead is tolerated, as the spec asks.
func (s *session) closeHandshake(reason string) {
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, reason)
	if err := s.conn.WriteControl(websocket.CloseMessage, msg, s.hardEnd); err != nil {
		s.h.logf("ndt7: %s: sending Close: %v", s.kind, err)
		return
	}
	wait := time.NewTimer(time.Until(s.hardEnd))
	defer wait.Stop()
	select {
	case <-s.readDone:
		if !isNormalClose(s.readErr) {
			s.h.logf("ndt7: %s: closing handshake: %v", s.kind, s.readErr)
		}
	case <-wait.C:
		s.h.logf("ndt7: %s: client did not answer Close within %v", s.kind, s.h.grace)
	}
}

// readEnded classifies why reading stopped before the test's end.
func (s *session) readEnded() error {
	if isNormalClose(s.readErr) {
		return nil
	}
	return s.failed("reading from client", s.readErr)
}

// failed wraps the error that ended a test with what was being done and
// when, and marks time-outs with ErrTimeLimit. gorilla hides the deadline
// error's type, hence the net.Error test.
func (s *session) failed(op string, err error) error {
	after := time.Since(s.start).Round(time.Millisecond)
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w (%v): %s: %s: %v", ErrTimeLimit, s.h.duration+s.h.grace, s.kind, op, err)
	}
	return fmt.Errorf("ndt7: %s: %s after %v: %w", s.kind, op, after, err)
}

func isNormalClose(err error) bool {
	return websocket.IsCloseError(err, websocket.CloseNormalClosure,
		websocket.CloseGoingAway, websocket.CloseNoStatusReceived)
}

// read runs the reader until it fails, records why, and closes the
// connection: whatever stops reading also ends the test, and closing
// unblocks a writer stuck on a client that no longer reads. After a normal
// closing handshake this is the server closing TCP first, as RFC 6455 asks.
func (s *session) read() {
	s.readErr = s.readLoop()
	close(s.readDone)
	if !errors.Is(s.readErr, errByteLimit) {
		s.conn.Close()
	} // else run sends the last measurement and Close, then closes
}

// readLoop counts and discards the client's messages. Binary messages are
// load during an upload and a protocol violation during a download; text
// messages (client measurements) are allowed in both and ignored.
func (s *session) readLoop() error {
	buf := make([]byte, drainBufferSize)
	for {
		typ, r, err := s.conn.NextReader()
		if err != nil {
			return err
		}
		if typ == websocket.BinaryMessage && s.kind == Download {
			return errUnexpectedBinary
		}
		if err := s.drain(r, buf); err != nil {
			return err
		}
	}
}

// drain reads r to its end, counting bytes as they arrive so measurements
// see progress inside large messages. Under a byte limit it never reads
// past it: at the limit it fails with errByteLimit.
func (s *session) drain(r io.Reader, buf []byte) error {
	for {
		b := buf
		if s.h.maxBytes > 0 {
			left := s.h.maxBytes - s.received.Load()
			if left <= 0 {
				return errByteLimit
			}
			b = buf[:min(int64(len(buf)), left)]
		}
		n, err := r.Read(b)
		s.received.Add(int64(n))
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *session) sendMeasurement(now time.Time) error {
	data, err := json.Marshal(s.measure(now))
	if err != nil {
		return fmt.Errorf("ndt7: encoding measurement: %w", err)
	}
	if err := s.conn.WriteMessage(websocket.TextMessage, data); err != nil {
		return s.failed("sending measurement", err)
	}
	return nil
}

func (s *session) measure(now time.Time) Measurement {
	elapsed := now.Sub(s.start)
	m := Measurement{
		AppInfo: &AppInfo{ElapsedTime: elapsed.Microseconds(), NumBytes: s.bytes()},
		Origin:  "server",
		Test:    string(s.kind),
	}
	if !s.connInfoSent {
		m.ConnectionInfo = &ConnectionInfo{
			Client: s.conn.RemoteAddr().String(),
			Server: s.conn.LocalAddr().String(),
			UUID:   s.uuid,
		}
		s.connInfoSent = true
	}
	if len(s.counts) < maxRecorded {
		s.counts = append(s.counts, model.ByteCount{TS: elapsed.Seconds(), Bytes: m.AppInfo.NumBytes})
	}
	if s.rc != nil {
		if smp, err := tcpinfo.Read(s.rc, elapsed.Seconds()); err == nil {
			m.TCPInfo = newTCPInfo(smp, elapsed.Microseconds())
			if len(s.tcp) < maxRecorded {
				s.tcp = append(s.tcp, smp)
			}
		}
	}
	return m
}

// maxRecorded bounds the measurements a Result holds: at one per 25 ms at
// least (minInterval), 1024 cover a 25 s test, more than the longest.
const maxRecorded = 1024

// Result is what the server measured of one test, for its record.
type Result struct {
	Kind Kind
	// UUID names the test (ConnectionInfo.UUID); Client and Server are
	// the connection's addresses.
	UUID           string
	Client, Server string
	Start, End     time.Time
	// Bytes is the application payload sent (download) or received
	// (upload); Counts the same at the start (0), at each measurement and
	// at the end; TCPInfo the server socket's TCP_INFO at each
	// measurement; times in seconds since Start (at most maxRecorded
	// measurements).
	Bytes   int64
	Counts  []model.ByteCount
	TCPInfo []model.TCPSample
	// Err is why the test failed, nil if it ran to its end.
	Err error
}

// result is the test's Result once run has returned.
func (s *session) result(err error) Result {
	end := time.Now()
	// Nothing had moved at the start: the reader may have counted bytes
	// before the first measurement.
	counts := make([]model.ByteCount, 0, len(s.counts)+2)
	counts = append(counts, model.ByteCount{})
	counts = append(counts, s.counts...)
	counts = append(counts, model.ByteCount{TS: end.Sub(s.start).Seconds(), Bytes: s.bytes()})
	return Result{Kind: s.kind, UUID: s.uuid, Client: s.conn.RemoteAddr().String(), Server: s.conn.LocalAddr().String(),
		Start: s.start, End: end, Bytes: s.bytes(), Counts: counts, TCPInfo: s.tcp, Err: err}
}

// nextInterval draws the time to the next measurement.
func nextInterval() time.Duration {
	d := time.Duration(mrand.ExpFloat64() * float64(meanInterval))
	return min(max(d, minInterval), maxInterval)
}

// newUUID returns a random (version 4) UUID naming the test.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails since Go 1.24
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
