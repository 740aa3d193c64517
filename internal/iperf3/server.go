package iperf3

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// Options are what the server needs of its host: admission, limits, and
// where a finished test goes.
type Options struct {
	// Admit decides whether the client at remote may start a test; it
	// returns a release that frees what it took (called exactly once),
	// or an error whose text the server logs (the client sees
	// ACCESS_DENIED: iperf3 has no way to carry a reason).
	Admit func(remote net.Addr) (release func(), err error)
	// MaxDuration bounds a test from TEST_START to its hard end (0: the
	// client's time plus Grace only).
	MaxDuration time.Duration
	// MaxBytes bounds the payload of a test, all streams and directions
	// together (0: unlimited).
	MaxBytes int64
	// SetupTimeout bounds each step before the test runs and after it
	// ends: the cookie, the parameters, the streams' connections, the
	// results (default 10 s).
	SetupTimeout time.Duration
	// Done receives each test that ran (may be nil). It is called on the
	// test's goroutine after the control connection is closed.
	Done func(*Test)
	// Logf receives one line per refused or failed test (may be nil).
	Logf func(format string, args ...any)
}

// terminateWait bounds the wait for a client to leave after
// SERVER_TERMINATE.
const terminateWait = 2 * time.Second

// Bounds of the connections that have not sent their cookie yet: a
// test's client opens at most 2 × MaxStreams + 1 in a burst.
const (
	MaxGreetingsPerIP = 2*MaxStreams + 8
	MaxGreetings      = 4096
)

// Grace is how long past the client's own time (omit + time) the server
// waits for TEST_END before it ends the test itself.
const Grace = 10 * time.Second

// Test is what the server saw of one iperf3 test, for its record.
type Test struct {
	Client     net.Addr
	Version    string // the client's client_version
	Params     Checked
	Start, End time.Time // TEST_START, the streams' end
	// Flows are the streams as sonde's own records describe them
	// (Kind download: the server sent; upload: it received), times in
	// seconds since Start.
	Flows []protocol.FlowReport
	// UDP holds the receiver's counters of UDP streams the server
	// received, by stream id.
	UDP []StreamResult
	// Ended says why the test ended: "" when the client ended it,
	// protocol.LimitDuration or protocol.LimitBytes, or the error.
	Ended string
	Err   error
}

// Server answers iperf3 clients. Many tests run at once, each admitted
// by Options.Admit, instead of iperf3's one at a time.
type Server struct {
	opts Options

	mu      sync.Mutex
	pending map[Cookie]*session // tests waiting for their data connections
	// greeting counts the connections still to send their cookie, per
	// client address; greetings all of them.
	greeting  map[string]int
	greetings int
	udp       *udpDemux

	wg sync.WaitGroup
}

// NewServer returns a server with opts.
func NewServer(opts Options) *Server {
	if opts.SetupTimeout <= 0 {
		opts.SetupTimeout = 10 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &Server{opts: opts, pending: map[Cookie]*session{}}
}

// Serve accepts connections on ln until ctx ends, and UDP streams on pc
// (nil: no UDP tests; pc must be bound to ln's port, see ListenUDP). It
// waits for the running tests to end (each is bounded in time) before
// returning.
func (s *Server) Serve(ctx context.Context, ln net.Listener, pc *net.UDPConn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if pc != nil {
		s.udp = newUDPDemux(pc)
		go s.udp.run()
		defer s.udp.close()
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	defer s.wg.Wait()
	var delay time.Duration
	// seq numbers connections in accept order, which is the order the
	// client connected them: its data streams' roles follow that order
	// (addTCP), not the order their cookies happen to be read in.
	var seq uint64
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTemporary(err)) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("iperf3: accept: %w", err)
		}
		delay = 0
		s.wg.Add(1)
		n := seq
		seq++
		go func() {
			defer s.wg.Done()
			s.handle(ctx, c, n)
		}()
	}
}

// errTemporary keeps accepting after EMFILE and the like: the listener
// itself is fine.
func errTemporary(err error) error {
	if strings.Contains(err.Error(), "too many open files") {
		return err
	}
	return errNever
}

var errNever = errors.New("never")

// handle reads a connection's cookie: a pending test's cookie makes it
// that test's data connection, any other a new test's control connection.
// seq is its place in accept order.
func (s *Server) handle(ctx context.Context, c net.Conn, seq uint64) {
	// Connections that have not sent their cookie yet are bounded per
	// client address and in all: each holds a goroutine for up to
	// SetupTimeout before any admission.
	host := hostOf(c.RemoteAddr())
	s.mu.Lock()
	if s.greeting == nil {
		s.greeting = map[string]int{}
	}
	if s.greeting[host] >= MaxGreetingsPerIP || s.greetings >= MaxGreetings {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.greeting[host]++
	s.greetings++
	s.mu.Unlock()
	c.SetReadDeadline(time.Now().Add(s.opts.SetupTimeout))
	cookie, err := ReadCookie(c)
	s.mu.Lock()
	if s.greeting[host]--; s.greeting[host] == 0 {
		delete(s.greeting, host)
	}
	s.greetings--
	s.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	s.mu.Lock()
	ses := s.pending[cookie]
	s.mu.Unlock()
	if ses != nil {
		if !ses.addTCP(c, seq) {
			// A stream too many: refused as iperf3 refuses a stranger.
			c.Write([]byte{AccessDenied.wire()})
			c.Close()
		}
		return
	}
	s.control(ctx, c, cookie)
}

// control runs one test on its control connection c.
func (s *Server) control(ctx context.Context, c net.Conn, cookie Cookie) {
	defer c.Close()
	release, err := s.opts.Admit(c.RemoteAddr())
	if err != nil {
		s.opts.Logf("iperf3 test from %s refused: %v", c.RemoteAddr(), err)
		c.SetWriteDeadline(time.Now().Add(s.opts.SetupTimeout))
		c.Write([]byte{AccessDenied.wire()})
		return
	}
	defer release()
	ses := &session{srv: s, ctrl: c, cookie: cookie, test: &Test{Client: c.RemoteAddr()}, arrived: make(chan struct{}, 1)}
	err = ses.run(ctx)
	if err != nil && ses.test.Ended == "" {
		ses.test.Ended = err.Error()
		ses.test.Err = err
		s.opts.Logf("iperf3 test from %s: %v", c.RemoteAddr(), err)
	}
	c.Close()
	if ses.started && !ses.ended {
		ses.endStreams()
	}
	ses.closeStreams()
	if ses.started && s.opts.Done != nil {
		s.opts.Done(ses.test)
	}
}

// session is one test on the server.
type session struct {
	srv    *Server
	ctrl   net.Conn
	cookie Cookie
	test   *Test
	p      Checked

	mu      sync.Mutex
	streams []*stream
	want    int
	arrived chan struct{} // a stream arrived

	started bool
	cpuUser time.Duration // the process's CPU times at TEST_START
	cpuSys  time.Duration
	ended   bool // endStreams ran
	// congestion is the congestion control of the first stream, read
	// while it is open.
	congestion string
	countDone  chan struct{} // closed when count returns
	start      time.Time
	total      atomic.Int64 // payload moved, all streams
	sent       atomic.Int64 // payload the server sent, all streams (for -n)
	blocks     atomic.Int64 // blocks or datagrams the server sent (for -k)
	stop       chan struct{}
	stopped    sync.Once
	limit      atomic.Value // string: the limit that stopped the streams
}

func (ses *session) setState(st State) error {
	ses.ctrl.SetWriteDeadline(time.Now().Add(ses.srv.opts.SetupTimeout))
	if _, err := ses.ctrl.Write([]byte{st.wire()}); err != nil {
		return fmt.Errorf("iperf3: writing %s: %w", st, err)
	}
	return nil
}

// serverError ends a test as iperf3 ends one that failed on its server:
// SERVER_ERROR, then i_errno and errno in network order.
func (ses *session) serverError(ierrno int32, cause error) error {
	ses.ctrl.SetWriteDeadline(time.Now().Add(ses.srv.opts.SetupTimeout))
	b := []byte{ServerError.wire(), 0, 0, 0, 0, 0, 0, 0, 0}
	b[1], b[2], b[3], b[4] = byte(ierrno>>24), byte(ierrno>>16), byte(ierrno>>8), byte(ierrno)
	ses.ctrl.Write(b)
	return cause
}

// i_errno values of src/iperf_api.h (3.12) the server sends.
const (
	ieRecvParams   = 117 // IERECVPARAMS: "unable to receive parameters from client"
	ieStreamAccept = 121 // IEACCEPT-ish; the client prints its own text
)

func (ses *session) run(ctx context.Context) error {
	opts := &ses.srv.opts
	if err := ses.setState(ParamExchange); err != nil {
		return err
	}
	ses.ctrl.SetReadDeadline(time.Now().Add(opts.SetupTimeout))
	var raw Params
	if err := ReadJSON(ses.ctrl, MaxJSON/16, &raw); err != nil {
		return ses.serverError(ieRecvParams, err)
	}
	p, err := raw.Check()
	if err != nil {
		return ses.serverError(ieRecvParams, err)
	}
	if p.UDP && ses.srv.udp == nil {
		return ses.serverError(ieRecvParams, errors.New("iperf3: UDP tests are not served here"))
	}
	ses.p, ses.test.Params, ses.test.Version = p, p, raw.ClientVersion
	ses.want = p.Streams()

	// Data connections: TCP ones arrive through handle by their cookie,
	// UDP ones through the demux by their client's address.
	ses.srv.mu.Lock()
	ses.srv.pending[ses.cookie] = ses
	ses.srv.mu.Unlock()
	defer func() {
		ses.srv.mu.Lock()
		delete(ses.srv.pending, ses.cookie)
		ses.srv.mu.Unlock()
	}()
	if p.UDP {
		host := hostOf(ses.ctrl.RemoteAddr())
		ses.srv.udp.wait(host, ses)
		defer ses.srv.udp.done(host, ses)
	}
	if err := ses.setState(CreateStreams); err != nil {
		return err
	}
	if err := ses.awaitStreams(ctx); err != nil {
		return err
	}
	ses.srv.mu.Lock()
	delete(ses.srv.pending, ses.cookie)
	ses.srv.mu.Unlock()

	// The test: TEST_START and TEST_RUNNING, then the streams run until
	// the client's TEST_END or a limit.
	ses.stop = make(chan struct{})
	ses.start = time.Now()
	ses.test.Start = ses.start
	ses.started = true
	ses.cpuUser, ses.cpuSys = cpuTimes()
	if err := ses.setState(TestStart); err != nil {
		return err
	}
	ses.startStreams()
	if err := ses.setState(TestRunning); err != nil {
		return err
	}
	hard := time.Duration(0)
	if p.Time > 0 {
		hard = time.Duration(p.Omit+p.Time)*time.Second + Grace
	}
	if opts.MaxDuration > 0 && (hard == 0 || opts.MaxDuration < hard) {
		hard = opts.MaxDuration
	}
	var omitTimer *time.Timer
	if p.Omit > 0 {
		omitTimer = time.AfterFunc(time.Duration(p.Omit)*time.Second, ses.endOmit)
		defer omitTimer.Stop()
	}
	msg, err := ses.awaitEnd(hard)
	if omitTimer != nil {
		omitTimer.Stop()
	}
	if l, _ := ses.limit.Load().(string); err != nil && l != "" {
		// A limit: SERVER_TERMINATE while the streams are still open
		// (stopped, not closed), so the client reads it before any
		// write of its fails; then a moment for it to leave.
		ses.stopped.Do(func() { close(ses.stop) })
		ses.test.Ended = l
		ses.setState(ServerTerminate)
		ses.ctrl.SetReadDeadline(time.Now().Add(terminateWait))
		io.Copy(io.Discard, io.LimitReader(ses.ctrl, 1<<10))
		ses.endStreams()
		return err
	}
	ses.endStreams()
	if err != nil {
		return err
	}
	if msg != TestEnd {
		return fmt.Errorf("iperf3: client sent %s while the test ran", msg)
	}

	// The results, both ways, then DISPLAY_RESULTS and the client's
	// IPERF_DONE.
	if err := ses.setState(ExchangeResults); err != nil {
		return err
	}
	ses.ctrl.SetReadDeadline(time.Now().Add(opts.SetupTimeout))
	var theirs Results
	if err := ReadJSON(ses.ctrl, MaxJSON, &theirs); err != nil {
		return err
	}
	ses.ctrl.SetWriteDeadline(time.Now().Add(opts.SetupTimeout))
	if err := WriteJSON(ses.ctrl, ses.results()); err != nil {
		return err
	}
	if err := ses.setState(DisplayResults); err != nil {
		return err
	}
	var b [1]byte
	ses.ctrl.SetReadDeadline(time.Now().Add(opts.SetupTimeout))
	if _, err := io.ReadFull(ses.ctrl, b[:]); err != nil {
		return nil // the test is done; a client that leaves early lost only its goodbye
	}
	return nil
}

// awaitStreams waits for every data connection, within SetupTimeout.
func (ses *session) awaitStreams(ctx context.Context) error {
	t := time.NewTimer(ses.srv.opts.SetupTimeout)
	defer t.Stop()
	// The control connection closing (client gone) ends the wait too.
	gone := make(chan struct{})
	// The deadline is set here, not in the goroutine: set there, it
	// could come after the deferred unblocking below and hold it.
	ses.ctrl.SetReadDeadline(time.Now().Add(ses.srv.opts.SetupTimeout))
	go func() {
		var b [1]byte
		ses.ctrl.Read(b[:])
		close(gone)
	}()
	defer func() {
		ses.ctrl.SetReadDeadline(time.Now()) // unblock the reader
		<-gone
		ses.ctrl.SetReadDeadline(time.Time{})
	}()
	for {
		ses.mu.Lock()
		n := len(ses.streams)
		ses.mu.Unlock()
		if n >= ses.want {
			return nil
		}
		select {
		case <-ses.arrived:
		case <-gone:
			return errors.New("iperf3: the client left while its streams were created")
		case <-t.C:
			return fmt.Errorf("iperf3: %d of %d streams connected within %s", n, ses.want, ses.srv.opts.SetupTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// awaitEnd reads the client's next state while the streams run, until the
// hard end (0: none).
func (ses *session) awaitEnd(hard time.Duration) (State, error) {
	deadline := time.Time{}
	if hard > 0 {
		deadline = ses.start.Add(hard)
	}
	ses.ctrl.SetReadDeadline(deadline)
	type res struct {
		b   byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var b [1]byte
		_, err := io.ReadFull(ses.ctrl, b[:])
		ch <- res{b[0], err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			var ne net.Error
			if errors.As(r.err, &ne) && ne.Timeout() {
				ses.limit.CompareAndSwap(nil, protocol.LimitDuration)
				return 0, fmt.Errorf("iperf3: the test reached its maximum duration (%s)", hard)
			}
			return 0, fmt.Errorf("iperf3: the client left during the test: %w", r.err)
		}
		return State(int8(r.b)), nil
	case <-ses.stop:
		// A limit stopped the streams (the bytes).
		ses.ctrl.SetReadDeadline(time.Now())
		<-ch
		return 0, fmt.Errorf("iperf3: the test reached its maximum bytes (%d)", ses.srv.opts.MaxBytes)
	}
}

// addTCP takes c, accepted seq-th, as one of the session's data streams;
// false if it has all. The client opens its streams one after another
// without waiting, so their cookies are read concurrently and may finish
// out of order: the streams are kept in accept order, and each one's
// number and role (with --bidir the first half are the client's senders)
// follow its place there, as iperf3 -s, which reads cookies one at a
// time, gives them.
func (ses *session) addTCP(c net.Conn, seq uint64) bool {
	ses.mu.Lock()
	defer ses.mu.Unlock()
	if len(ses.streams) >= ses.want {
		return false
	}
	c.SetReadDeadline(time.Time{})
	st := ses.newStream(c, nil)
	st.seq = seq
	i := len(ses.streams)
	for i > 0 && ses.streams[i-1].seq > seq {
		i--
	}
	ses.streams = slices.Insert(ses.streams, i, st)
	for j, st := range ses.streams {
		st.id, st.sender = streamID(j), ses.isSender(j)
	}
	select {
	case ses.arrived <- struct{}{}:
	default:
	}
	return true
}

// addUDP takes u as the session's next data stream; false if it has all.
func (ses *session) addUDP(u *net.UDPConn) bool {
	ses.mu.Lock()
	defer ses.mu.Unlock()
	if len(ses.streams) >= ses.want {
		return false
	}
	ses.streams = append(ses.streams, ses.newStream(nil, u))
	select {
	case ses.arrived <- struct{}{}:
	default:
	}
	return true
}

// newStream makes the i-th stream, in the order iperf3's client opens
// them: with --bidir the first half are the client's senders.
func (ses *session) newStream(c net.Conn, u *net.UDPConn) *stream {
	i := len(ses.streams)
	st := &stream{ses: ses, id: streamID(i), sender: ses.isSender(i), tcp: c, udp: u}
	if c != nil {
		setTCPOptions(c, ses.p)
	} else {
		setUDPOptions(u, ses.p)
	}
	return st
}

// isSender tells whether the server sends on the i-th stream.
func (ses *session) isSender(i int) bool {
	return ses.p.Reverse || (ses.p.Bidirectional && i >= ses.p.Parallel)
}

// streamID is iperf_add_stream's numbering: 1, then 3, 4, 5…
func streamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}

func (ses *session) startStreams() {
	if len(ses.streams) > 0 && ses.streams[0].tcp != nil {
		ses.congestion = congestionOf(ses.streams[0].tcp)
	}
	for _, st := range ses.streams {
		st.start = ses.start
		if st.tcp != nil {
			if smp, err := tcpinfo.NewSampler(st.tcp, ses.start, sampleInterval); err == nil {
				st.sampler = smp
			}
		}
		st.done = make(chan struct{})
		go st.run()
	}
	ses.countDone = make(chan struct{})
	go ses.count()
}

// sampleInterval is the period of the TCP_INFO samples and the receive
// counts of a test's record.
const sampleInterval = 50 * time.Millisecond

// count records each receiving stream's bytes every sampleInterval.
func (ses *session) count() {
	defer close(ses.countDone)
	tick(ses.stop, func(now time.Time) {
		ts := now.Sub(ses.start).Seconds()
		for _, st := range ses.streams {
			if !st.sender && len(st.counts) < maxCounts {
				st.counts = append(st.counts, model.ByteCount{TS: ts, Bytes: st.bytes.Load()})
			}
		}
	})
}

// tick calls f every sampleInterval until stop closes: the receive
// counts of the server's and the client's streams alike.
func tick(stop <-chan struct{}, f func(now time.Time)) {
	t := time.NewTicker(sampleInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			f(now)
		}
	}
}

// maxCounts bounds a stream's receive series (an hour at 50 ms).
const maxCounts = 72000

// endOmit starts the measured part of the test: what came before is
// omitted from the results, as iperf_reset_stats does.
func (ses *session) endOmit() {
	now := time.Now()
	for _, st := range ses.streams {
		st.omit(now)
	}
}

// endStreams stops every stream and waits for them.
func (ses *session) endStreams() {
	ses.ended = true
	ses.stopped.Do(func() { close(ses.stop) })
	if ses.countDone != nil {
		<-ses.countDone
	}
	end := time.Now()
	ses.test.End = end
	for _, st := range ses.streams {
		st.finish(end)
	}
	for _, st := range ses.streams {
		ses.test.Flows = append(ses.test.Flows, st.report())
		if st.udp != nil && !st.sender {
			ses.test.UDP = append(ses.test.UDP, st.result())
		}
	}
}

func (ses *session) closeStreams() {
	ses.mu.Lock()
	defer ses.mu.Unlock()
	for _, st := range ses.streams {
		st.close()
	}
}

// addBytes counts n more bytes of the test and stops the streams at the
// server's byte limit.
func (ses *session) addBytes(n int) {
	if t := ses.total.Add(int64(n)); ses.srv.opts.MaxBytes > 0 && t >= ses.srv.opts.MaxBytes {
		ses.limit.CompareAndSwap(nil, protocol.LimitBytes)
		ses.stopped.Do(func() { close(ses.stop) })
	}
}

// results are the server's side of the exchange (send_results).
func (ses *session) results() Results {
	r := Results{SenderHasRetransmits: -1}
	if ses.p.Reverse || ses.p.Bidirectional {
		r.SenderHasRetransmits = 0
		if !ses.p.UDP {
			r.SenderHasRetransmits = 1
		}
	}
	r.CPUUtilTotal, r.CPUUtilUser, r.CPUUtilSystem = ses.cpuUtil()
	for _, st := range ses.streams {
		r.Streams = append(r.Streams, st.result())
	}
	r.CongestionUsed = ses.congestion
	if ses.p.ServerOutput {
		r.ServerOutputText = ses.text()
	}
	return r
}

// text is the server's output for --get-server-output, in iperf3 -s's
// layout (its summary lines; sonde keeps the per-second detail in its
// record instead).
func (ses *session) text() string {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	fmt.Fprintf(w, "-----------------------------------------------------------\n")
	fmt.Fprintf(w, "Server listening on %s (sonde)\n", ses.ctrl.LocalAddr())
	fmt.Fprintf(w, "-----------------------------------------------------------\n")
	fmt.Fprintf(w, "Accepted connection from %s\n", ses.ctrl.RemoteAddr())
	for _, st := range ses.streams {
		l, r := st.addrs()
		fmt.Fprintf(w, "[%3d] local %s connected to %s\n", st.id, l, r)
	}
	fmt.Fprintf(w, "- - - - - - - - - - - - - - - - - - - - - - - - -\n")
	fmt.Fprintf(w, "[ ID] Interval           Transfer     Bitrate\n")
	for _, st := range ses.streams {
		res := st.result()
		secs := res.EndTime - res.StartTime
		role := "receiver"
		if st.sender {
			role = "sender"
		}
		rate := 0.0
		if secs > 0 {
			rate = res.Bytes * 8 / secs
		}
		fmt.Fprintf(w, "[%3d] %6.2f-%-6.2f sec  %s  %s  %s\n", st.id, 0.0, secs, bytesText(int64(res.Bytes)), rateText(rate), role)
	}
	w.Flush()
	return b.String()
}

func bytesText(n int64) string {
	switch v := float64(n); {
	case v >= 1<<30:
		return fmt.Sprintf("%6.2f GBytes", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%6.2f MBytes", v/(1<<20))
	default:
		return fmt.Sprintf("%6.2f KBytes", v/(1<<10))
	}
}

func rateText(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%6.2f Gbits/sec", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%6.2f Mbits/sec", bps/1e6)
	default:
		return fmt.Sprintf("%6.2f Kbits/sec", bps/1e3)
	}
}

func hostOf(a net.Addr) string {
	if ua, ok := a.(*net.TCPAddr); ok {
		return ua.IP.String()
	}
	h, _, _ := net.SplitHostPort(a.String())
	return h
}

// cpuUtil is the process's CPU use during the test in percent of one
// core (total, user, system), as iperf3 reports its own; the process is
// the whole of sonde serve, every test it runs included.
func (ses *session) cpuUtil() (total, user, sys float64) {
	u, s := cpuTimes()
	wall := ses.test.End.Sub(ses.start)
	if wall <= 0 {
		return 0, 0, 0
	}
	user = 100 * float64(u-ses.cpuUser) / float64(wall)
	sys = 100 * float64(s-ses.cpuSys) / float64(wall)
	return user + sys, user, sys
}

// Describe is one line of what a test asked for and what the server's
// UDP receivers counted, for its record's notes.
func Describe(t *Test) string {
	p := t.Params
	proto, dir := "TCP", "client to server"
	if p.UDP {
		proto = "UDP"
	}
	switch {
	case p.Reverse:
		dir = "server to client (-R)"
	case p.Bidirectional:
		dir = "both ways (--bidir)"
	}
	s := fmt.Sprintf("iperf3 %s test, %s, %d stream(s), %d s (omit %d s), block %d bytes", proto, dir, p.Parallel, p.Time, p.Omit, p.Len)
	if p.Num > 0 {
		s += fmt.Sprintf(", %d bytes", p.Num)
	}
	if p.Bandwidth > 0 {
		s += fmt.Sprintf(", %.0f bit/s per stream", p.Bandwidth)
	}
	for _, u := range t.UDP {
		s += fmt.Sprintf("; stream %d received %.0f datagrams, %.0f lost, jitter %.3f ms", u.ID, u.Packets-u.OmittedPackets, u.Errors-u.OmittedErrors, u.Jitter*1000)
	}
	return s
}
