package tcptest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// prober sends echo probes on the dedicated probe connection and collects
// the round trips. One prober lives for the whole test; each phase reads the
// samples of its own time span.
type prober struct {
	conn *stream.BufferedConn
	t0   time.Time // the test's time zero

	mu      sync.Mutex
	seq     uint64
	pending map[uint64]time.Time
	samples []model.RTTSample
	done    chan struct{}
	err     error
}

func newProber(conn *stream.BufferedConn, t0 time.Time) *prober {
	p := &prober{conn: conn, t0: t0, pending: map[uint64]time.Time{}, done: make(chan struct{})}
	go p.read()
	return p
}

// read collects replies until the connection closes.
func (p *prober) read() {
	defer close(p.done)
	rcv := stream.NewReceiver(p.conn)
	rcv.OnControl = func(typ byte, b []byte, at time.Time) {
		if typ != protocol.FrameProbeReply {
			return
		}
		r := protocol.DecodeProbeReply(b)
		p.mu.Lock()
		defer p.mu.Unlock()
		sent, ok := p.pending[r.Seq]
		if !ok {
			return
		}
		delete(p.pending, r.Seq)
		server := time.Duration(r.SendNs - r.RecvNs)
		rtt := at.Sub(sent) - server
		p.samples = append(p.samples, model.RTTSample{
			TS: sent.Sub(p.t0).Seconds(), RTTMs: ms(rtt), ServerMs: ms(server),
		})
	}
	p.err = rcv.Run(context.Background(), 4096)
}

// close ends the probe stream and waits for its reader.
func (p *prober) close() {
	p.conn.Close()
	<-p.done
}

// send writes one probe.
func (p *prober) send() error {
	p.mu.Lock()
	p.seq++
	seq := p.seq
	now := time.Now()
	p.pending[seq] = now
	p.mu.Unlock()
	b := protocol.AppendProbe(nil, protocol.Probe{Seq: seq, SentNs: now.Sub(p.t0).Nanoseconds()})
	if _, err := p.conn.Write(b); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	return nil
}

// run sends probes every interval on absolute deadlines (so the schedule does
// not drift with processing time) until ctx ends or count probes were sent
// (count 0: no limit).
func (p *prober) run(ctx context.Context, interval time.Duration, count int) error {
	next := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for i := 0; count == 0 || i < count; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-p.done:
			return fmt.Errorf("probe connection closed: %v", p.err)
		case <-t.C:
		}
		if err := p.send(); err != nil {
			return err
		}
		next = next.Add(interval)
		t.Reset(time.Until(next))
	}
	return nil
}

// between returns the samples sent in [from, to) seconds and the number of
// probes sent in that span that got no answer within wait.
func (p *prober) between(from, to float64, wait time.Duration) (samples []model.RTTSample, lost int) {
	deadline := time.Now().Add(wait)
	for {
		p.mu.Lock()
		outstanding := 0
		for _, sent := range p.pending {
			if ts := sent.Sub(p.t0).Seconds(); ts >= from && ts < to {
				outstanding++
			}
		}
		if outstanding == 0 || time.Now().After(deadline) {
			for _, s := range p.samples {
				if s.TS >= from && s.TS < to {
					samples = append(samples, s)
				}
			}
			p.mu.Unlock()
			return samples, outstanding
		}
		p.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// latest returns the newest sample, or nil.
func (p *prober) latest() *model.RTTSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.samples) == 0 {
		return nil
	}
	s := p.samples[len(p.samples)-1]
	return &s
}

// tcpinfo reads the client side TCP_INFO of the probe connection.
func (p *prober) tcpinfo() (model.TCPSample, error) {
	return tcpinfo.Get(p.conn.Conn, time.Since(p.t0).Seconds())
}

// foreignProbe is one responsiveness probe on a new connection (metrics.md
// §5): TCP handshake, TLS handshake (https only) and an HTTP request.
type foreignProbe struct {
	tcp, tls, http time.Duration
}

// runForeign opens a new connection every interval until ctx ends and times
// its handshakes and one HTTP request.
func runForeign(ctx context.Context, e *endpoint, interval time.Duration, mark int) ([]foreignProbe, int) {
	var (
		out    []foreignProbe
		failed int
	)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out, failed
		case <-t.C:
		}
		fp, err := e.foreign(ctx, mark)
		if err != nil {
			if ctx.Err() == nil {
				failed++
			}
			continue
		}
		out = append(out, fp)
	}
}

func (e *endpoint) foreign(ctx context.Context, mark int) (foreignProbe, error) {
	var fp foreignProbe
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := e.dialTCP(ctx, 0, mark)
	if err != nil {
		return fp, err
	}
	defer c.Close()
	fp.tcp = time.Since(start)
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	var rw net.Conn = c
	if e.tls != nil {
		start = time.Now()
		tc := tls.Client(c, e.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fp, err
		}
		fp.tls = time.Since(start)
		rw = tc
	}
	start = time.Now()
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nConnection: close\r\n\r\n",
		protocol.PathPing, e.base.Host, e.software)
	if _, err := io.WriteString(rw, req); err != nil {
		return fp, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(rw), nil)
	if err != nil {
		return fp, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fp, fmt.Errorf("ping: %s", resp.Status)
	}
	fp.http = time.Since(start)
	return fp, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
