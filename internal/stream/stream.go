// Package stream runs the two ends of a sonde load stream (docs/protocol.md):
// a sender that writes data frames as fast as the connection takes them,
// interleaving small control frames, and a receiver that counts payload and
// hands probe frames to its caller. Server and client both use it, for
// download and upload alike, so both directions behave the same.
package stream

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
)

// Chunk bounds for data frames. The sender adapts the frame size so that one
// write takes about TargetWrite: large frames for throughput on fast paths,
// small ones on slow paths so a control frame never waits long behind data
// in the application (only in the kernel's buffers, which is what a
// self-probe is meant to see).
const (
	MinChunk    = 16 << 10
	MaxChunk    = 1 << 20
	TargetWrite = 10 * time.Millisecond
	copyAlign   = 64
)

// Payload is a block of random bytes shared read-only by every sender of a
// process; random so no middlebox or WebSocket layer can compress it.
type Payload []byte

// NewPayload returns MaxChunk random bytes.
func NewPayload() (Payload, error) {
	p := make([]byte, MaxChunk)
	if _, err := rand.Read(p); err != nil {
		return nil, fmt.Errorf("stream: random payload: %w", err)
	}
	return p, nil
}

// Sender writes data frames to a connection until its context ends, a byte
// limit is reached, or the connection fails.
type Sender struct {
	conn    net.Conn
	payload Payload
	// Budget, if set, is a payload allowance the sender shares with other
	// streams (e.g. all of one test's): each data frame takes its payload
	// from it, and the sender stops when it is spent.
	Budget *Budget
	// ChunkLimit, if set below MaxChunk, caps the data frame size. A
	// browser's WebSocket allocates each message afresh, and above ~1 MB
	// that allocation is a fresh mmap whose page faults cost the page more
	// than the copy itself (docs/browser.md).
	ChunkLimit int
	raw        syscall.RawConn // nil if not a socket
	sent       atomic.Int64
	ctrlMu     sync.Mutex
	ctrl       [][]byte
}

// NewSender returns a sender on conn.
func NewSender(conn net.Conn, payload Payload) *Sender {
	return &Sender{conn: conn, payload: payload, raw: rawConn(conn)}
}

func rawConn(c net.Conn) syscall.RawConn {
	if bc, ok := c.(*BufferedConn); ok {
		c = bc.Conn
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// limitUnsent caps the data the socket keeps queued beyond what is in
// flight (TCP_NOTSENT_LOWAT) to about one frame, i.e. ~TargetWrite of
// sending. Without it the kernel buffers seconds of data on a slow path: a
// phase would drain long after it ended, and a self-probe would measure the
// sender's own socket, not the path. Best effort: not every connection is
// a TCP socket.
func (s *Sender) limitUnsent(n int) {
	if s.raw == nil {
		return
	}
	_ = s.raw.Control(func(fd uintptr) { setNotSentLowat(fd, n) })
}

// Sent returns the payload bytes written so far.
func (s *Sender) Sent() int64 { return s.sent.Load() }

// Queue schedules a complete control frame to be written before the next
// data frame. Safe for concurrent use.
func (s *Sender) Queue(frame []byte) {
	s.ctrlMu.Lock()
	s.ctrl = append(s.ctrl, frame)
	s.ctrlMu.Unlock()
}

func (s *Sender) takeCtrl() [][]byte {
	s.ctrlMu.Lock()
	defer s.ctrlMu.Unlock()
	c := s.ctrl
	s.ctrl = nil
	return c
}

// Run sends until ctx is done (returns nil), Budget is spent (nil), or a
// write fails (the error). ctx's deadline, if any, also bounds each write.
func (s *Sender) Run(ctx context.Context) error {
	dl, hasDeadline := ctx.Deadline()
	if hasDeadline {
		_ = s.conn.SetWriteDeadline(dl)
		defer s.conn.SetWriteDeadline(time.Time{})
	}
	// A cancelled context must also unblock a write stuck on a full buffer.
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()

	out, gather := s.writer()
	direct := gather && directSupported && s.raw != nil
	maxChunk := MaxChunk
	if s.ChunkLimit >= MinChunk && s.ChunkLimit < MaxChunk {
		maxChunk = s.ChunkLimit
	}
	chunk := MinChunk
	s.limitUnsent(chunk)
	var (
		hdr     [protocol.HeaderLen]byte
		bufs    = make(net.Buffers, 0, 8)
		scratch []byte
		seg     int // the socket's segment size, 0 if unknown
		writes  int
	)
	for ctx.Err() == nil {
		if direct && writes%segmentCheck == 0 {
			seg = segmentSize(s.raw)
		}
		writes++
		bufs = bufs[:0]
		bufs = append(bufs, s.takeCtrl()...)
		// Keep each write a multiple of copyAlign long and take the
		// payload from the same offset mod copyAlign as where it lands in
		// the kernel's buffer: a misaligned copy costs about 30% more CPU
		// (measured on loopback, bench/tcp.sh).
		lead := protocol.HeaderLen
		for _, c := range bufs {
			lead += len(c)
		}
		lead %= copyAlign
		n := writeSize(chunk, seg) - lead
		if s.Budget != nil {
			// Taken before the write: bytes granted but not written
			// (a failed write) are lost to the budget, so the streams
			// together never move more than it allows.
			if n = int(s.Budget.Take(int64(n))); n == 0 {
				return nil
			}
		}
		protocol.PutHeader(hdr[:], protocol.FrameData, n)
		bufs = append(bufs, hdr[:], s.payload[lead:lead+n])
		start := time.Now()
		var err error
		switch {
		case direct:
			_, err = writevDirect(s.raw, bufs)
		case gather:
			w := bufs // WriteTo consumes its receiver
			_, err = w.WriteTo(out)
		default:
			err = writeJoined(out, bufs, &scratch)
		}
		if err != nil {
			// The write deadline can fire a moment before the context's
			// own timer marks it done: both mean the phase is over.
			if ctx.Err() != nil || hasDeadline && !time.Now().Before(dl) {
				return nil
			}
			return fmt.Errorf("stream: send: %w", err)
		}
		s.sent.Add(int64(n))
		if next := adapt(chunk, maxChunk, time.Since(start)); next != chunk {
			chunk = next
			s.limitUnsent(chunk)
		}
	}
	return nil
}

// joinedLen is how much of a frame writeJoined copies ahead of the rest:
// one TLS record's worth, so the first write is a full record.
const joinedLen = 16 << 10

// writeJoined writes bufs (control frames, a data header, its payload) to
// a writer that cannot gather (TLS, a WebSocket): the small parts and the
// payload's first bytes go out as one write of at most about joinedLen
// bytes, the rest of the payload from the shared block in a second. Copying
// the whole frame instead would give every such stream a private buffer as
// large as MaxChunk (a megabyte: most of a busy server's heap with 25 TLS
// downloads, bench/mixed_clients.sh) for no fewer records or system calls:
// TLS cuts its writes into 16 KiB records either way.
func writeJoined(out io.Writer, bufs [][]byte, scratch *[]byte) error {
	b := (*scratch)[:0]
	last := len(bufs) - 1
	for _, c := range bufs[:last] {
		b = append(b, c...)
	}
	rest := bufs[last]
	k := min(len(rest), max(joinedLen-len(b), 0))
	b = append(b, rest[:k]...)
	rest = rest[k:]
	*scratch = b[:0]
	if _, err := out.Write(b); err != nil {
		return err
	}
	if len(rest) == 0 {
		return nil
	}
	_, err := out.Write(rest)
	return err
}

// DirectWriter returns a writer on c that writes a bare TCP socket with
// system calls that keep the goroutine's P (see writevDirect), for senders
// that write large blocks back to back; anything else gets c itself. The
// writer is for one goroutine.
func DirectWriter(c net.Conn) io.Writer {
	tc, ok := c.(*net.TCPConn)
	if !ok || !directSupported {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &directWriter{rc: rc}
}

// directWriter is not safe for concurrent use (one per sender).
type directWriter struct {
	rc  syscall.RawConn
	one [1][]byte
}

func (w *directWriter) Write(b []byte) (int, error) {
	w.one[0] = b
	return writevDirect(w.rc, w.one[:])
}

// Budget is a payload allowance shared by several streams, so that a limit
// holds for a whole test whatever the number of streams. Safe for
// concurrent use.
type Budget struct {
	left atomic.Int64
}

// NewBudget returns an allowance of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{}
	b.left.Store(n)
	return b
}

// Take grants up to n bytes: n, or what is left if less, or 0 when the
// budget is spent.
func (b *Budget) Take(n int64) int64 {
	for {
		left := b.left.Load()
		if left <= 0 || n <= 0 {
			return 0
		}
		g := min(n, left)
		if b.left.CompareAndSwap(left, left-g) {
			return g
		}
	}
}

// Spent reports whether nothing is left.
func (b *Budget) Spent() bool { return b.left.Load() <= 0 }

// writer returns where frames are written and whether it takes a gathered
// write (writev) in one system call. net.Buffers gathers only on a bare
// *net.TCPConn; on anything else (TLS, WebSocket) it would issue one write
// per buffer, sending each 8-byte frame header as its own TLS record or
// packet, so those get one flattened write per frame instead.
func (s *Sender) writer() (io.Writer, bool) {
	c := s.conn
	if bc, ok := c.(*BufferedConn); ok {
		c = bc.Conn // BufferedConn changes only reads
	}
	_, tcp := c.(*net.TCPConn)
	return c, tcp
}

// segmentCheck is how many writes a sender makes between readings of its
// socket's segment size (it changes only with the path MTU or the TCP
// options in use).
const segmentCheck = 64

// writeSize is the length of a write of about chunk bytes (control frames,
// header and payload) on a socket whose segments carry seg bytes (0:
// unknown): whole segments, less under copyAlign bytes to keep the write a
// multiple of copyAlign (its last segment is then short by those few
// bytes, not a runt). The kernel sends the tail of a write that does not
// fill a segment as a segment of its own at once (TCP_NODELAY), and a
// segment costs both ends about the same whatever its length: with
// loopback's 64 KB segments a 1 MiB write went out as 16 full segments and
// one of 240 bytes, 6 % more segments than whole writes need. bench/tcp.sh,
// four runs each way: sonde's CPU per GB (both ends, median of the runs'
// medians) fell from 239 to 218 ms for a 1-stream download, 245 to 231
// for 4 streams, 290 to 254 and 283 to 256 for uploads. On Ethernet
// (1448-byte segments) one runt in 725 segments cost little, and whole
// segments cost nothing either. A write that carries 56 bytes or more of
// control frames (rare) still ends in a small segment.
func writeSize(chunk, seg int) int {
	if seg <= 0 || chunk < seg {
		return chunk
	}
	w := chunk - chunk%seg
	return w - w%copyAlign
}

func adapt(chunk, maxChunk int, took time.Duration) int {
	switch {
	case took < TargetWrite/2 && chunk < maxChunk:
		return min(chunk*2, maxChunk)
	case took > TargetWrite*2 && chunk > MinChunk:
		return chunk / 2
	}
	return chunk
}

// Receiver reads frames from a connection, counting data payload.
type Receiver struct {
	conn  net.Conn
	bytes atomic.Int64
	// OnControl, if set, is called with each non-data frame's type and
	// payload (valid only during the call) and the time it was read.
	OnControl func(typ byte, payload []byte, at time.Time)
	// MaxBuf, if above Run's bufSize, lets the read buffer double up to
	// it while reads of payload fill it (protocol.Reader.GrowTo).
	MaxBuf int
}

// NewReceiver returns a receiver on conn.
func NewReceiver(conn net.Conn) *Receiver {
	return &Receiver{conn: conn}
}

// Bytes returns the payload bytes received so far.
func (r *Receiver) Bytes() int64 { return r.bytes.Load() }

// Run reads until EOF (returns nil), ctx ends (nil) or an error.
func (r *Receiver) Run(ctx context.Context, bufSize int) error {
	stop := context.AfterFunc(ctx, func() { _ = r.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	fr := protocol.NewReader(DirectReader(r.conn), bufSize)
	fr.GrowTo(r.MaxBuf)
	count := func(n int) { r.bytes.Add(int64(n)) }
	for {
		typ, p, err := fr.Next(count)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) || isEOF(err) {
				return nil
			}
			return fmt.Errorf("stream: receive: %w", err)
		}
		if typ != protocol.FrameData && r.OnControl != nil {
			r.OnControl(typ, p, time.Now())
		}
	}
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF)
}

// PeerClosed reports whether err means the other end closed or reset the
// connection: the normal way a load phase ends for the side that is sending.
func PeerClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// DirectReader returns a reader of c that reads a bare TCP socket (or a
// BufferedConn on one, after its buffered bytes) with raw system calls
// (readDirect); anything else reads c itself. For one goroutine.
func DirectReader(c net.Conn) io.Reader {
	var pre io.Reader
	sock := c
	if bc, ok := c.(*BufferedConn); ok {
		pre, sock = bc.pre, bc.Conn
	}
	tc, ok := sock.(*net.TCPConn)
	if !ok || !directSupported {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawReader{pre: pre, rc: rc}
}

type rawReader struct {
	pre io.Reader // bytes read before the socket's, nil when drained
	rc  syscall.RawConn
}

func (r *rawReader) Read(b []byte) (int, error) {
	if r.pre != nil {
		n, err := r.pre.Read(b)
		if err == nil || n > 0 && err == io.EOF {
			if err == io.EOF {
				r.pre = nil
			}
			return n, nil
		}
		if err != io.EOF {
			return n, err
		}
		r.pre = nil
	}
	return readDirect(r.rc, b)
}

// BufferedConn is a connection whose first bytes were already read into a
// buffer while parsing the HTTP upgrade; reads drain that buffer first.
// Conn stays the underlying socket, for TCP_INFO and marking.
type BufferedConn struct {
	net.Conn
	rd  io.Reader
	pre io.Reader // the buffered bytes not read yet (shared with rd); nil if none
}

// NewBufferedConn wraps c so that reads return buffered bytes (if any)
// before reading from c.
func NewBufferedConn(c net.Conn, buffered io.Reader, n int) *BufferedConn {
	var rd, pre io.Reader = c, nil
	if n > 0 {
		pre = io.LimitReader(buffered, int64(n))
		rd = io.MultiReader(pre, c)
	}
	return &BufferedConn{Conn: c, rd: rd, pre: pre}
}

func (b *BufferedConn) Read(p []byte) (int, error) { return b.rd.Read(p) }
