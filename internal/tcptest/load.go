package tcptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// Intervals of the load phase's side activities.
const (
	countEvery   = 50 * time.Millisecond  // receiver byte counts
	selfEvery    = 100 * time.Millisecond // probes on the loaded streams
	foreignEvery = 250 * time.Millisecond // probes on new connections
	progressTick = 250 * time.Millisecond
)

// flowSpec says how to open one load stream.
type flowSpec struct {
	tag  string
	mark int    // DSCP, -1 for none
	port int    // 0: the server's main port
	dir  string // the stream's direction; "": the phase's
}

// phaseBidir names the bidirectional phase: download and upload streams
// at once. It is a phase, not a stream kind: each of its streams is a
// download or an upload stream, admitted as any other.
const phaseBidir = "bidir"

// phaseDirs are the stream directions a phase runs.
func phaseDirs(phase string) []string {
	if phase == phaseBidir {
		return []string{protocol.KindDownload, protocol.KindUpload}
	}
	return []string{phase}
}

// loadFlow is one running load stream seen from the client.
type loadFlow struct {
	spec  flowSpec
	dir   string
	conn  *stream.BufferedConn
	start time.Time
	end   time.Time

	rcv     *stream.Receiver // download: data and probe replies
	snd     *stream.Sender   // upload: data
	sampler *tcpinfo.Sampler // upload: this side is the sender
	series  []model.TCPSample

	mu       sync.Mutex
	counts   []model.ByteCount // download: receiver counts
	pending  map[uint64]time.Time
	selfRTT  []float64 // ms
	err      error
	finished chan struct{}
}

// bytes returns the payload count this side sees: received (download) or
// sent (upload; the server's receive count replaces it in the report).
func (f *loadFlow) bytes() int64 {
	if f.rcv != nil {
		return f.rcv.Bytes()
	}
	return f.snd.Sent()
}

func (f *loadFlow) onReply(typ byte, b []byte, at time.Time) {
	if typ != protocol.FrameProbeReply {
		return
	}
	r := protocol.DecodeProbeReply(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	if sent, ok := f.pending[r.Seq]; ok {
		delete(f.pending, r.Seq)
		// The full time: a request on a loaded connection waits behind the
		// data queued before it, which is what responsiveness measures.
		f.selfRTT = append(f.selfRTT, ms(at.Sub(sent)))
	}
}

// selfProbe sends one probe on the loaded stream.
func (f *loadFlow) selfProbe(seq uint64, t0 time.Time) error {
	now := time.Now()
	f.mu.Lock()
	f.pending[seq] = now
	f.mu.Unlock()
	b := protocol.AppendProbe(nil, protocol.Probe{Seq: seq, SentNs: now.Sub(t0).Nanoseconds()})
	if f.snd != nil {
		f.snd.Queue(b)
		return nil
	}
	// Download: the client's sending direction is idle, write at once.
	_, err := f.conn.Write(b)
	return err
}

// phaseResult is what one load phase collected on the client side.
type phaseResult struct {
	dir       string
	start     time.Time
	end       time.Time
	flows     []*loadFlow
	foreign   []foreignProbe
	foreignKO int
	auto      bool
	// unopened counts the streams asked for but refused because the
	// streams already open had spent the test's byte limit.
	unopened int
}

// Progress is a live reading for the display.
type Progress struct {
	Phase    string
	Elapsed  time.Duration
	Duration time.Duration
	RateBps  float64
	RTTMs    float64
	Streams  int
}

// only is the part of a phase's record that moved data in one direction
// (for the bidirectional phase, whose streams go both ways).
func (pr *phaseResult) only(dir string) *phaseResult {
	c := *pr
	c.dir, c.flows = dir, nil
	for _, f := range pr.flows {
		if f.dir == dir {
			c.flows = append(c.flows, f)
		}
	}
	return &c
}

// loadPhase runs one phase of load (a direction, or phaseBidir: both at
// once) with the given initial flows, adding flows per direction as
// --streams auto decides, while probing latency.
func (t *tester) loadPhase(ctx context.Context, dir string, specs []flowSpec, auto bool) (*phaseResult, error) {
	pr := &phaseResult{dir: dir, auto: auto}
	phaseCtx, cancel := context.WithTimeout(ctx, t.cfg.Duration)
	defer cancel()
	pr.start = time.Now()

	var wg sync.WaitGroup
	var mu sync.Mutex // guards pr.flows
	open := func(spec flowSpec) error {
		fdir := spec.dir
		if fdir == "" {
			fdir = dir
		}
		f, err := t.openFlow(phaseCtx, fdir, spec)
		if err != nil {
			return err
		}
		mu.Lock()
		pr.flows = append(pr.flows, f)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.runFlow(phaseCtx, f)
		}()
		return nil
	}
	flows := func() []*loadFlow {
		mu.Lock()
		defer mu.Unlock()
		return append([]*loadFlow(nil), pr.flows...)
	}
	for _, s := range specs {
		if err := open(s); err != nil {
			if len(pr.flows) > 0 && t.budgetSpent(err) {
				// The streams already open spent the test's byte budget
				// before this one was asked for: the phase is theirs, and
				// limitCut says it was cut short.
				pr.unopened = len(specs) - len(pr.flows)
				break
			}
			cancel()
			wg.Wait()
			pr.end = time.Now()
			// What the streams already opened moved is kept.
			t.recordCounts(pr.flows, pr.end)
			return pr, err
		}
	}

	var side sync.WaitGroup
	side.Add(3)
	go func() {
		defer side.Done()
		if t.probe != nil {
			_ = t.probe.run(phaseCtx, t.cfg.ProbeInterval, 0)
		}
	}()
	go func() {
		defer side.Done()
		if !t.cfg.NoForeign {
			pr.foreign, pr.foreignKO = runForeign(phaseCtx, t.ep, foreignEvery, t.cfg.DSCP)
		}
	}()
	go func() {
		defer side.Done()
		t.sideLoop(phaseCtx, pr, flows)
	}()

	var autoErr error
	if auto {
		dirs := phaseDirs(dir)
		errs := make([]error, len(dirs))
		var grow sync.WaitGroup
		for i, d := range dirs {
			grow.Add(1)
			go func() {
				defer grow.Done()
				of := func() []*loadFlow { return flowsOf(flows(), d) }
				errs[i] = t.autoStreams(phaseCtx, d, of, t.maxStreams()/len(dirs), func() error {
					return open(flowSpec{tag: streamTag(dir, d, len(of())), mark: t.cfg.DSCP, dir: d})
				})
			}()
		}
		grow.Wait()
		autoErr = errors.Join(errs...)
	}
	<-phaseCtx.Done()
	wg.Wait()
	side.Wait()
	pr.end = time.Now()
	var errs []error
	if autoErr != nil {
		errs = append(errs, autoErr)
	}
	for _, f := range pr.flows {
		if f.err != nil {
			errs = append(errs, fmt.Errorf("%s stream %s: %w", dir, f.spec.tag, f.err))
		}
	}
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("%s phase interrupted after %.1f s; results so far are kept",
			dir, pr.end.Sub(pr.start).Seconds()))
	}
	return pr, errors.Join(errs...)
}

// flowsOf are the flows of fs that move data in direction dir.
func flowsOf(fs []*loadFlow, dir string) []*loadFlow {
	var out []*loadFlow
	for _, f := range fs {
		if f.dir == dir {
			out = append(out, f)
		}
	}
	return out
}

// streamTag names a phase's i-th stream of direction dir: "download-0",
// or in the bidirectional phase "bidir-download-0", so the server's
// report tells the phases' streams apart.
func streamTag(phase, dir string, i int) string {
	if phase == phaseBidir {
		return fmt.Sprintf("%s-%s-%d", phaseBidir, dir, i)
	}
	return fmt.Sprintf("%s-%d", dir, i)
}

// openFlow dials and upgrades one load stream.
func (t *tester) openFlow(ctx context.Context, dir string, spec flowSpec) (*loadFlow, error) {
	conn, err := t.ep.openStream(ctx, t.session.ID, dir, spec)
	if err != nil {
		return nil, err
	}
	f := &loadFlow{spec: spec, dir: dir, conn: conn, start: time.Now(),
		pending: map[uint64]time.Time{}, finished: make(chan struct{})}
	if dir == protocol.KindDownload {
		f.rcv = stream.NewReceiver(conn)
		f.rcv.OnControl = f.onReply
		f.counts = []model.ByteCount{{TS: t.since(f.start)}}
	} else {
		f.snd = stream.NewSender(conn, t.payload)
		s, err := tcpinfo.NewSampler(conn.Conn, t.t0, t.tcpinfoInterval)
		if err != nil {
			conn.Close()
			return nil, err
		}
		f.sampler = s
	}
	return f, nil
}

// runFlow moves data until ctx ends, then closes the stream.
func (t *tester) runFlow(ctx context.Context, f *loadFlow) {
	defer close(f.finished)
	if f.rcv != nil {
		// Reads of up to 1 MiB on a fast path: the receiver's CPU per
		// GB on loopback falls by about a tenth from 256 KiB reads
		// (bench/tcp.sh's download rows).
		f.rcv.MaxBuf = 1 << 20
		err := f.rcv.Run(ctx, 256<<10)
		f.end = time.Now()
		f.conn.Close()
		if err != nil && !stream.PeerClosed(err) {
			f.err = err
		}
		return
	}
	// Upload: replies to self-probes come back on the idle direction.
	rcv := stream.NewReceiver(f.conn)
	rcv.OnControl = f.onReply
	rdone := make(chan error, 1)
	go func() { rdone <- rcv.Run(context.Background(), 4096) }()
	err := f.snd.Run(ctx)
	f.end = time.Now()
	f.series, _ = f.sampler.Stop()
	// Half-close so the server reads every byte and then EOF, instead of a
	// reset that could discard data still in its receive queue.
	if tc, ok := tcpConn(f.conn.Conn); ok {
		_ = tc.CloseWrite()
	}
	select {
	case <-rdone:
	case <-time.After(2 * time.Second):
	}
	f.conn.Close()
	if err != nil && !stream.PeerClosed(err) {
		f.err = err
	}
}

func tcpConn(c net.Conn) (*net.TCPConn, bool) {
	tc, ok := c.(*net.TCPConn)
	return tc, ok
}

// sideLoop records byte counts, sends self-probes and reports progress.
func (t *tester) sideLoop(ctx context.Context, pr *phaseResult, flows func() []*loadFlow) {
	count := time.NewTicker(countEvery)
	self := time.NewTicker(selfEvery)
	prog := time.NewTicker(progressTick)
	defer count.Stop()
	defer self.Stop()
	defer prog.Stop()
	var seq uint64
	var lastBytes int64
	lastAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			t.recordCounts(flows(), time.Now())
			return
		case now := <-count.C:
			t.recordCounts(flows(), now)
		case <-self.C:
			fs := flows()
			if len(fs) > 0 {
				seq++
				_ = fs[int(seq)%len(fs)].selfProbe(seq, t.t0)
			}
		case now := <-prog.C:
			if t.cfg.Progress == nil {
				continue
			}
			var total int64
			fs := flows()
			for _, f := range fs {
				total += f.bytes()
			}
			rate := float64(total-lastBytes) * 8 / now.Sub(lastAt).Seconds()
			lastBytes, lastAt = total, now
			p := Progress{Phase: pr.dir, Elapsed: now.Sub(pr.start), Duration: t.cfg.Duration, RateBps: rate, Streams: len(fs)}
			if t.probe != nil {
				if s := t.probe.latest(); s != nil {
					p.RTTMs = s.RTTMs
				}
			}
			t.cfg.Progress(p)
		}
	}
}

func (t *tester) recordCounts(fs []*loadFlow, now time.Time) {
	ts := t.since(now)
	for _, f := range fs {
		if f.rcv == nil {
			continue
		}
		f.mu.Lock()
		f.counts = append(f.counts, model.ByteCount{TS: ts, Bytes: f.rcv.Bytes()})
		f.mu.Unlock()
	}
}
