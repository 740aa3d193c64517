package iperf3

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// TestConfig is one iperf3 test run by the client.
type TestConfig struct {
	Addr    string        // host:port of the iperf3 server
	Time    time.Duration // the test's length (whole seconds on the wire)
	Streams int           // -P
	Reverse bool          // -R: the server sends
	// Ref is time zero of the series (the suite's start).
	Ref time.Time
	// Idle, if set, runs once the server has taken the test (its
	// PARAM_EXCHANGE), before the parameters are sent: the server is
	// busy with this test, so other connections to it are answered
	// ACCESS_DENIED instead of being read as failed tests (iperf3 -s
	// exits after a few of those in a row).
	Idle func()
	// RetryRefused retries a refused connection and ACCESS_DENIED for a
	// few seconds (a test right after another to iperf3 -s).
	RetryRefused bool
	// Loaded, if set, runs while the data flows, until stop closes; the
	// client waits for it to return before it ends the test.
	Loaded func(stop <-chan struct{})
}

// ClientStream is what the client saw of one data stream.
type ClientStream struct {
	ID     int
	Sender bool // the client sent on it
	Bytes  int64
	// Counts are the client's receive counts (Sender false); TCPInfo the
	// client socket's TCP_INFO series; both on Ref's clock.
	Counts         []model.ByteCount
	TCPInfo        []model.TCPSample
	SndBuf, RcvBuf int
}

// ClientTest is a finished test: the client's streams, the span of the
// data (seconds since Ref) and the server's results.
type ClientTest struct {
	StartS, EndS float64
	Streams      []ClientStream
	Server       Results
}

// setupTimeout bounds each step of the protocol outside the data phase.
const setupTimeout = 10 * time.Second

// RunTest runs one TCP test against an iperf3 server. A server that
// answers ACCESS_DENIED or SERVER_ERROR is a refusal
// (*apiclient.RefusedError).
func RunTest(ctx context.Context, cfg TestConfig) (*ClientTest, error) {
	t, err := runTest(ctx, cfg)
	// iperf3 -s is still busy with the previous test for a moment after
	// it ends: a test right after it may retry ACCESS_DENIED too.
	var refused *apiclient.RefusedError
	for wait := 100 * time.Millisecond; cfg.RetryRefused && errors.As(err, &refused) && refused.Status == busyStatus && wait < 4*time.Second; wait *= 2 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		t, err = runTest(ctx, cfg)
	}
	return t, err
}

// busyStatus marks the refusal that was ACCESS_DENIED (HTTP's 429, the
// status sonde's own servers give a busy client).
const busyStatus = 429

func runTest(ctx context.Context, cfg TestConfig) (*ClientTest, error) {
	if cfg.Streams < 1 || cfg.Streams > MaxStreams {
		return nil, fmt.Errorf("iperf3: %d streams, want 1–%d", cfg.Streams, MaxStreams)
	}
	secs := int(math.Ceil(cfg.Time.Seconds()))
	if secs < 1 || secs > MaxTime {
		return nil, fmt.Errorf("iperf3: test time %s out of range", cfg.Time)
	}
	d := net.Dialer{Timeout: setupTimeout}
	ctrl, err := d.DialContext(ctx, "tcp", cfg.Addr)
	// iperf3 -s closes its listener after each test and opens it again:
	// right after a test, a refused connection is that gap.
	for wait := 50 * time.Millisecond; err != nil && cfg.RetryRefused && isConnRefused(err) && wait < 4*time.Second; wait *= 2 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		ctrl, err = d.DialContext(ctx, "tcp", cfg.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("iperf3: %w", err)
	}
	defer ctrl.Close()
	stop := context.AfterFunc(ctx, func() { ctrl.SetDeadline(time.Now()) })
	defer stop()
	cookie := newCookie()
	ctrl.SetWriteDeadline(time.Now().Add(setupTimeout))
	if _, err := ctrl.Write(cookie[:]); err != nil {
		return nil, fmt.Errorf("iperf3: sending the cookie: %w", err)
	}
	c := &clientTest{cfg: cfg, ctrl: ctrl, cookie: cookie, res: &ClientTest{}}
	defer c.closeStreams()
	defer c.stopLoaded()
	states := make(chan State, 4)
	readErr := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	c.resultsRead = make(chan struct{})
	var extra [8]byte // SERVER_ERROR's i_errno and errno
	go func() {
		for {
			var b [1]byte
			if _, err := io.ReadFull(ctrl, b[:]); err != nil {
				readErr <- err
				return
			}
			st := State(int8(b[0]))
			if st == ServerError {
				io.ReadFull(ctrl, extra[:])
			}
			select {
			case states <- st:
			case <-quit:
				return
			}
			switch st {
			case ExchangeResults:
				// The main loop reads the results' JSON, then this
				// goroutine the next state.
				select {
				case <-c.resultsRead:
				case <-quit:
					return
				}
			case AccessDenied, ServerError, IperfDone, ServerTerminate, DisplayResults:
				return
			}
		}
	}()
	var timer <-chan time.Time
	ctrl.SetReadDeadline(time.Now().Add(setupTimeout))
	for {
		var st State
		select {
		case st = <-states:
		case err := <-readErr:
			return c.res, fmt.Errorf("iperf3: the server closed the control connection: %w", err)
		case <-timer:
			c.stopLoaded()
			c.endData()
			ctrl.SetWriteDeadline(time.Now().Add(setupTimeout))
			if _, err := ctrl.Write([]byte{TestEnd.wire()}); err != nil {
				return c.res, fmt.Errorf("iperf3: sending TEST_END: %w", err)
			}
			ctrl.SetReadDeadline(time.Now().Add(setupTimeout))
			timer = nil
			continue
		}
		switch st {
		case ParamExchange:
			if cfg.Idle != nil {
				cfg.Idle()
			}
			p := Params{TCP: true, Time: float64(secs), Parallel: float64(cfg.Streams), Reverse: cfg.Reverse,
				Len: DefaultTCPLen, PacingTimer: defaultPacingUs, ClientVersion: "sonde"}
			ctrl.SetWriteDeadline(time.Now().Add(setupTimeout))
			if err := WriteJSON(ctrl, p); err != nil {
				return nil, err
			}
		case CreateStreams:
			if err := c.createStreams(ctx); err != nil {
				return nil, err
			}
		case TestStart:
			c.start()
		case TestRunning:
			c.run()
			if cfg.Loaded != nil {
				c.loadedStop, c.loadedDone = make(chan struct{}), make(chan struct{})
				go func() {
					defer close(c.loadedDone)
					cfg.Loaded(c.loadedStop)
				}()
			}
			ctrl.SetReadDeadline(time.Now().Add(time.Duration(secs)*time.Second + setupTimeout))
			timer = time.After(time.Duration(secs) * time.Second)
		case ExchangeResults:
			c.stopLoaded()
			c.endData()
			ctrl.SetWriteDeadline(time.Now().Add(setupTimeout))
			if err := WriteJSON(ctrl, c.results()); err != nil {
				return c.res, err
			}
			ctrl.SetReadDeadline(time.Now().Add(setupTimeout))
			err := ReadJSON(ctrl, MaxJSON, &c.res.Server)
			close(c.resultsRead)
			if err != nil {
				return c.res, err
			}
		case DisplayResults:
			ctrl.SetWriteDeadline(time.Now().Add(setupTimeout))
			ctrl.Write([]byte{IperfDone.wire()})
			c.finish()
			return c.res, nil
		case AccessDenied:
			return nil, &apiclient.RefusedError{Status: busyStatus, Reason: "the iperf3 server is busy running a test (ACCESS_DENIED)"}
		case ServerError:
			return nil, &apiclient.RefusedError{Reason: fmt.Sprintf("the iperf3 server failed the test (SERVER_ERROR, i_errno %d, errno %d)",
				int32(binary.BigEndian.Uint32(extra[:4])), int32(binary.BigEndian.Uint32(extra[4:])))}
		case ServerTerminate:
			c.stopLoaded()
			c.endData()
			c.finish()
			return c.res, errors.New("iperf3: the server ended the test (SERVER_TERMINATE)")
		default:
			return c.res, fmt.Errorf("iperf3: unexpected %s from the server", st)
		}
	}
}

// newCookie is 36 random base32 characters and a NUL, as make_cookie.
func newCookie() Cookie {
	const chars = "abcdefghijklmnopqrstuvwxyz234567"
	var c Cookie
	rand.Read(c[:CookieSize-1])
	for i := range CookieSize - 1 {
		c[i] = chars[int(c[i])%len(chars)]
	}
	c[CookieSize-1] = 0
	return c
}

// clientTest is the state of RunTest.
type clientTest struct {
	cfg         TestConfig
	ctrl        net.Conn
	cookie      Cookie
	res         *ClientTest
	resultsRead chan struct{}

	loadedStop, loadedDone chan struct{}

	conns    []net.Conn
	streams  []*clientStream
	stop     chan struct{}
	wg       sync.WaitGroup
	endOnce  sync.Once
	doneOnce sync.Once
}

type clientStream struct {
	id      int
	sender  bool
	conn    net.Conn
	bytes   atomic.Int64
	sampler *tcpinfo.Sampler
	counts  []model.ByteCount
	tcp     []model.TCPSample
}

func (c *clientTest) createStreams(ctx context.Context) error {
	d := net.Dialer{Timeout: setupTimeout}
	for i := range c.cfg.Streams {
		conn, err := d.DialContext(ctx, "tcp", c.cfg.Addr)
		if err != nil {
			return fmt.Errorf("iperf3: opening stream %d: %w", i+1, err)
		}
		conn.SetWriteDeadline(time.Now().Add(setupTimeout))
		if _, err := conn.Write(c.cookie[:]); err != nil {
			conn.Close()
			return fmt.Errorf("iperf3: stream %d's cookie: %w", i+1, err)
		}
		conn.SetWriteDeadline(time.Time{})
		c.conns = append(c.conns, conn)
		c.streams = append(c.streams, &clientStream{id: streamID(i), sender: !c.cfg.Reverse, conn: conn})
	}
	return nil
}

func (c *clientTest) start() {
	c.stop = make(chan struct{})
	c.res.StartS = time.Since(c.cfg.Ref).Seconds()
	for _, s := range c.streams {
		if smp, err := tcpinfo.NewSampler(s.conn, c.cfg.Ref, sampleInterval); err == nil {
			s.sampler = smp
		}
		if !s.sender {
			s.counts = append(s.counts, model.ByteCount{TS: c.res.StartS})
		}
	}
}

func (c *clientTest) run() {
	if c.stop == nil {
		c.start()
	}
	buf := payload(DefaultTCPLen)
	for _, s := range c.streams {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if s.sender {
				for {
					select {
					case <-c.stop:
						return
					default:
					}
					n, err := s.conn.Write(buf)
					s.bytes.Add(int64(n))
					if err != nil {
						return
					}
				}
			}
			rb := make([]byte, 128<<10)
			for {
				n, err := s.conn.Read(rb)
				s.bytes.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		tick(c.stop, func(now time.Time) {
			ts := now.Sub(c.cfg.Ref).Seconds()
			for _, s := range c.streams {
				if !s.sender && len(s.counts) < maxCounts {
					s.counts = append(s.counts, model.ByteCount{TS: ts, Bytes: s.bytes.Load()})
				}
			}
		})
	}()
}

// endData stops the senders and the sampling at the end of the data.
func (c *clientTest) endData() {
	c.endOnce.Do(func() {
		if c.stop == nil {
			return
		}
		c.res.EndS = time.Since(c.cfg.Ref).Seconds()
		close(c.stop)
		for _, s := range c.streams {
			if s.sampler != nil {
				s.tcp, _ = s.sampler.Stop()
			}
		}
		// Senders blocked in a write end when the connections close;
		// receivers read until the server closes its side.
		for _, s := range c.streams {
			if s.sender {
				s.conn.SetWriteDeadline(time.Now())
			}
		}
	})
}

// finish closes the streams and collects what they measured.
func (c *clientTest) finish() {
	c.doneOnce.Do(func() {
		c.closeStreams()
		c.wg.Wait()
		for _, s := range c.streams {
			cs := ClientStream{ID: s.id, Sender: s.sender, Bytes: s.bytes.Load(), TCPInfo: s.tcp}
			if !s.sender {
				cs.Counts = append(s.counts, model.ByteCount{TS: c.res.EndS, Bytes: cs.Bytes})
			}
			c.res.Streams = append(c.res.Streams, cs)
		}
	})
}

func (c *clientTest) closeStreams() {
	for _, conn := range c.conns {
		conn.Close()
	}
}

// results are the client's side of the exchange.
func (c *clientTest) results() Results {
	r := Results{SenderHasRetransmits: -1}
	if !c.cfg.Reverse {
		r.SenderHasRetransmits = 1
	}
	for _, s := range c.streams {
		sr := StreamResult{ID: s.id, Bytes: float64(s.bytes.Load()), Retransmits: -1, EndTime: c.res.EndS - c.res.StartS}
		if s.sender && len(s.tcp) > 0 {
			sr.Retransmits = float64(s.tcp[len(s.tcp)-1].TotalRetrans)
		}
		r.Streams = append(r.Streams, sr)
	}
	return r
}

// stopLoaded ends the Loaded hook and waits for it.
func (c *clientTest) stopLoaded() {
	if c.loadedStop != nil {
		close(c.loadedStop)
		<-c.loadedDone
		c.loadedStop = nil
	}
}
