// Package probe runs the continuous probers of `sonde monitor`: STAMP to a
// sonde server (through a long-lived monitor session it renews) or to any
// RFC 8762 / TWAMP-Light reflector, ICMP echo, and TCP connect, each
// stream isochronous on absolute deadlines. One scheduler goroutine sends
// every stream's probes from a timer heap; one reader per socket matches
// the replies to their send records by sequence number, session and echoed
// send timestamp. Samples go to a bounded Ring that the daemon drains
// (docs/monitor.md, "Probes").
package probe

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
)

// Limits and defaults.
const (
	DefaultRate    = 10.0
	MinRate        = 1.0
	MaxRate        = 100.0
	DefaultTimeout = 2 * time.Second
	MaxTimeout     = 60 * time.Second
	MaxStreams     = 32 // 8 targets × kinds × DSCP classes
	horizonFactor  = 4  // late replies are kept up to 4 × the timeout
	// spinWindow is how long before a deadline the scheduler's alarm
	// rings; it spins the rest. It covers the wake-up latency of an
	// exact timer (tens of µs on an idle machine) for ~0.5 % of a core
	// at 100 deadlines/s.
	spinWindow      = 50 * time.Microsecond
	defaultSTAMPLen = stamp.BaseLen
)

// StreamConfig describes one probe stream.
type StreamConfig struct {
	Kind model.ProbeKind
	// Target is host:port for STAMP (port 862 if omitted) and TCP, a host
	// for ICMP; with Sessions set it is not used (the opener knows the
	// server).
	Target string
	// Sessions, for STAMP to a sonde server, opens and renews the monitor
	// session (HTTPSessions); nil probes a plain reflector.
	Sessions SessionOpener
	DSCP     int           // 0-63, marks the probes
	Rate     float64       // probes/s, 1-100 (0: DefaultRate)
	Timeout  time.Duration // a probe unanswered after it is lost (0: DefaultTimeout)
	// PacketBytes is the STAMP probe size, 44-200 (0: 44).
	PacketBytes int
}

// Config configures a Prober.
type Config struct {
	Streams []StreamConfig
	Ring    *Ring // where samples go (nil: a new ring of DefaultRingSize)
}

// StreamStats counts what happened to one stream.
type StreamStats struct {
	Sent, Answered, Lost, Late uint64
	// Unmatched are datagrams that matched no send record (stray,
	// replayed, or from a reused ring slot); Duplicates second replies.
	Unmatched, Duplicates uint64
	// SendErrors counts probes whose send failed (they are lost);
	// Skipped deadlines missed by more than an interval (not sent, so the
	// stream does not burst after a stall).
	SendErrors, Skipped uint64
	// Renewals counts monitor sessions opened after the first;
	// RenewErrors failed attempts.
	Renewals, RenewErrors uint64
}

// Prober runs a set of streams until Close.
type Prober struct {
	clock   *stamp.Clock
	ring    *Ring
	streams []*stream
	tcp     *tcpPoller
	alarm   *alarm // the scheduler's wake-ups; closing it stops the scheduler
	wg      sync.WaitGroup
	once    sync.Once
}

// kind is one probe kind's socket side.
type kind interface {
	// send stamps and sends probe seq: it calls add (which records the
	// probe) after taking the send time and before the packet leaves, so
	// that a reply can never arrive before its record.
	send(s *stream, seq uint32, add func(r record)) error
	// expired is called for a probe that timed out (under s.mu).
	expired(r *record)
	close()
}

// stream is one configured stream's state. mu guards pend and stats; the
// scheduler and the stream's reader both take it, once per probe each.
type stream struct {
	idx      int32
	cfg      StreamConfig
	interval int64
	next     int64 // the next deadline, clock ns
	seq      uint32
	heapIdx  int
	k        kind
	p        *Prober

	mu    sync.Mutex
	pend  pending
	stats StreamStats
}

// New validates cfg and opens every stream's socket (and monitor session);
// probing starts with Start. Every configuration error is one line.
func New(ctx context.Context, cfg Config) (*Prober, error) {
	if len(cfg.Streams) == 0 {
		return nil, errors.New("probe: no streams configured")
	}
	if len(cfg.Streams) > MaxStreams {
		return nil, fmt.Errorf("probe: %d streams configured, at most %d", len(cfg.Streams), MaxStreams)
	}
	p := &Prober{clock: stamp.NewClock(), ring: cfg.Ring}
	if p.ring == nil {
		p.ring = NewRing(0)
	}
	var err error
	if p.alarm, err = newAlarm(p.clock); err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	for i, sc := range cfg.Streams {
		sc, err := normalise(sc)
		if err != nil {
			p.closeStreams()
			return nil, fmt.Errorf("probe: stream %d (%s): %w", i, strings.TrimSpace(string(sc.Kind)+" "+sc.Target), err)
		}
		s := &stream{idx: int32(i), cfg: sc, interval: int64(float64(time.Second) / sc.Rate), p: p}
		s.pend = newPending(sc.Rate, int64(sc.Timeout), horizonFactor*int64(sc.Timeout))
		switch sc.Kind {
		case model.ProbeSTAMP:
			s.k, err = newSTAMP(ctx, s)
		case model.ProbeICMP:
			s.k, err = newICMP(s)
		case model.ProbeTCP:
			if p.tcp == nil {
				p.tcp, err = newTCPPoller(p)
				if err != nil {
					break
				}
			}
			s.k, err = newTCP(s)
		}
		if err != nil {
			p.closeStreams()
			return nil, fmt.Errorf("probe: stream %d (%s): %w", i, strings.TrimSpace(string(sc.Kind)+" "+sc.Target), err)
		}
		p.streams = append(p.streams, s)
	}
	return p, nil
}

func normalise(sc StreamConfig) (StreamConfig, error) {
	if sc.Rate == 0 {
		sc.Rate = DefaultRate
	}
	if sc.Timeout == 0 {
		sc.Timeout = DefaultTimeout
	}
	if sc.PacketBytes == 0 {
		sc.PacketBytes = defaultSTAMPLen
	}
	switch {
	case sc.Kind != model.ProbeSTAMP && sc.Kind != model.ProbeICMP && sc.Kind != model.ProbeTCP:
		return sc, fmt.Errorf("unknown probe kind %q (want stamp, icmp or tcp)", sc.Kind)
	case math.IsNaN(sc.Rate) || sc.Rate < MinRate || sc.Rate > MaxRate:
		return sc, fmt.Errorf("rate %g probes/s out of range %g-%g", sc.Rate, MinRate, MaxRate)
	case sc.Timeout < time.Millisecond || sc.Timeout > MaxTimeout:
		return sc, fmt.Errorf("timeout %v out of range 1ms-%v", sc.Timeout, MaxTimeout)
	case sc.DSCP < 0 || sc.DSCP > 63:
		return sc, fmt.Errorf("DSCP %d out of range 0-63", sc.DSCP)
	case sc.PacketBytes < stamp.BaseLen || sc.PacketBytes > stamp.MonitorMaxPacketBytes:
		return sc, fmt.Errorf("packet size %d out of range %d-%d", sc.PacketBytes, stamp.BaseLen, stamp.MonitorMaxPacketBytes)
	case sc.PacketBytes > stamp.BaseLen && sc.PacketBytes < stamp.BaseLen+stamp.TLVHeaderLen:
		return sc, fmt.Errorf("packet size %d leaves too little room for a padding TLV (44 or ≥ 48)", sc.PacketBytes)
	case sc.Sessions == nil && sc.Target == "":
		return sc, errors.New("no target")
	}
	return sc, nil
}

// Ring returns where the samples go.
func (p *Prober) Ring() *Ring { return p.ring }

// Clock returns the clock of every timestamp (sent, received) the prober
// takes: Unix ns that never step with the wall clock.
func (p *Prober) Clock() *stamp.Clock { return p.clock }

// Start starts the scheduler. Every stream's first deadline is the same
// instant, and later ones are whole intervals after it, so streams of one
// rate send in one wake-up and their probes leave side by side.
func (p *Prober) Start() {
	start := p.clock.Now() + int64(10*time.Millisecond)
	h := make(deadlines, 0, len(p.streams))
	for _, s := range p.streams {
		s.next = start
		h = append(h, s)
	}
	heap.Init(&h)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.schedule(h)
	}()
}

// Close stops probing and closes every socket; samples already in the
// ring stay there.
func (p *Prober) Close() {
	p.once.Do(func() {
		p.alarm.close()
		p.wg.Wait()
		p.closeStreams()
	})
}

func (p *Prober) closeStreams() {
	p.alarm.close()
	for _, s := range p.streams {
		s.k.close()
	}
	if p.tcp != nil {
		p.tcp.closeAll()
	}
}

// Stats returns each stream's counters.
func (p *Prober) Stats() []StreamStats {
	out := make([]StreamStats, len(p.streams))
	for i, s := range p.streams {
		s.mu.Lock()
		out[i] = s.stats
		s.mu.Unlock()
	}
	return out
}

// schedule is the one goroutine that sends. Per wake-up it sends every
// probe due (all streams sharing a deadline go together) and expires the
// probes past their timeout; then its alarm wakes it spinWindow before
// the next deadline and it spins only that. One wake-up per deadline and
// no hand-off between goroutines or threads: a Go timer is a millisecond
// late at worst, so the spin it needed cost more CPU than the probes.
func (p *Prober) schedule(h deadlines) {
	for {
		now := p.clock.Now()
		for h[0].next <= now {
			s := h[0]
			p.sendOne(s)
			s.next += s.interval
			if now = p.clock.Now(); now-s.next > s.interval {
				// A stall (suspend, CPU starvation): skip the missed slots
				// rather than burst.
				missed := (now - s.next) / s.interval
				s.next += missed * s.interval
				s.mu.Lock()
				s.stats.Skipped += uint64(missed)
				s.mu.Unlock()
			}
			heap.Fix(&h, 0)
		}
		for _, s := range p.streams {
			s.expire(now)
		}
		next := h[0].next
		if err := p.alarm.sleepUntil(next - int64(spinWindow)); errors.Is(err, errAlarmClosed) {
			return
		} else if err != nil {
			// Not expected of a timerfd once made; Go's timer keeps the
			// streams going, less exactly.
			time.Sleep(time.Duration(next - int64(spinWindow) - p.clock.Now()))
		}
		for p.clock.Now() < next {
		}
	}
}

// sendOne sends stream s's next probe.
func (p *Prober) sendOne(s *stream) {
	seq := s.seq
	s.seq++
	deadline := s.next
	err := s.k.send(s, seq, func(r record) {
		r.seq = seq
		r.late = max(r.sentNs-deadline, 0)
		s.mu.Lock()
		s.pend.add(r)
		s.stats.Sent++
		s.mu.Unlock()
	})
	if err != nil {
		s.mu.Lock()
		s.stats.SendErrors++
		s.mu.Unlock()
	}
}

// expire emits lost samples for s's timed-out probes.
func (s *stream) expire(now int64) {
	s.mu.Lock()
	s.pend.expire(now, func(r *record) {
		s.stats.Lost++
		s.k.expired(r)
		s.p.ring.Push(model.ProbeSample{Stream: s.idx, Seq: r.seq, SentNs: r.sentNs, LatenessNs: r.late, RTTNs: -1, Lost: true})
	})
	s.mu.Unlock()
}

// deliver matches one reply and emits its sample; fwd and rev are the
// one-way delays (0 when the kind has none).
func (s *stream) deliver(seq uint32, session, wire uint64, from netip.AddrPort, recvNs, fwd, rev int64) {
	var smp model.ProbeSample
	s.mu.Lock()
	switch s.pend.match(seq, session, wire, from, recvNs, &smp) {
	case noMatch:
		s.stats.Unmatched++
	case duplicate:
		s.stats.Duplicates++
	case inTime:
		s.stats.Answered++
		smp.Stream, smp.FwdNs, smp.RevNs = s.idx, fwd, rev
		s.p.ring.Push(smp)
	case late:
		s.stats.Late++
		smp.Stream, smp.FwdNs, smp.RevNs = s.idx, fwd, rev
		s.p.ring.Push(smp)
	}
	s.mu.Unlock()
}

func (s *stream) unmatched() {
	s.mu.Lock()
	s.stats.Unmatched++
	s.mu.Unlock()
}

// deadlines is the scheduler's timer heap, earliest deadline first.
type deadlines []*stream

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].next < h[j].next }
func (h deadlines) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *deadlines) Push(x any) { *h = append(*h, x.(*stream)) }
func (h *deadlines) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
