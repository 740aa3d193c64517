package httpload

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// A test's flows are its connections as the server's records describe
// them (protocol.FlowReport, the form internal/assemble joins for every
// kind of test): one per connection and direction, however many load
// requests ran on it (HTTP/1.1 keep-alive, HTTP/2 streams). A connection
// the test sends on has its TCP_INFO sampled from its first payload write
// until the test ends; one it receives on has its payload counted. A
// request's end by its client is not an error: RPM clients abort the
// large object by design.

// sampleInterval is the period of a flow's TCP_INFO samples and receive
// counts, as iperf3's server records use.
const sampleInterval = 50 * time.Millisecond

// maxCounts bounds one upload flow's receive counts; past it every other
// count is dropped and the interval doubles, as tcpinfo.Sampler does.
const maxCounts = tcpinfo.MaxSamples

type flowKey struct {
	conn net.Conn
	send bool
}

// flow is one connection's load in one direction.
type flow struct {
	id      int
	send    bool
	tcp     net.Conn // nil when the request's connection is unknown
	start   time.Time
	bytes   atomic.Int64
	sampler *tcpinfo.Sampler // send flows on TCP sockets

	mu       sync.Mutex
	last     time.Time // end of its latest payload read or write
	counts   []model.ByteCount
	every    time.Duration
	lastMark time.Time
}

// flows is a test's flows, keyed by connection and direction.
type flows struct {
	ref time.Time // the test's start: time zero of the flows' series
	mu  sync.Mutex
	m   map[flowKey]*flow
	all []*flow
	max int // bound on the flows kept (further connections are not recorded)
	// unrecorded are the connections past max.
	unrecorded map[flowKey]bool
}

// get is the flow of c in one direction, started on first use; nil past
// the bound.
func (fs *flows) get(c net.Conn, send bool) *flow {
	k := flowKey{c, send}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.m[k]; f != nil {
		return f
	}
	if len(fs.all) >= fs.max {
		if fs.unrecorded == nil {
			fs.unrecorded = map[flowKey]bool{}
		}
		if len(fs.unrecorded) < fs.max { // counted up to a bound too
			fs.unrecorded[k] = true
		}
		return nil
	}
	now := time.Now()
	f := &flow{id: len(fs.all), send: send, tcp: c, start: now, last: now, every: sampleInterval, lastMark: now}
	if send && c != nil {
		if s, err := tcpinfo.NewSampler(c, fs.ref, sampleInterval); err == nil {
			f.sampler = s
		}
	}
	if !send {
		f.counts = append(f.counts, model.ByteCount{TS: now.Sub(fs.ref).Seconds()})
	}
	if fs.m == nil {
		fs.m = map[flowKey]*flow{}
	}
	fs.m[k] = f
	fs.all = append(fs.all, f)
	return f
}

// moved records n payload bytes on f (nil: not recorded).
func (f *flow) moved(ref time.Time, n int) {
	if f == nil || n <= 0 {
		return
	}
	total := f.bytes.Add(int64(n))
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = now
	if f.send || now.Sub(f.lastMark) < f.every {
		return
	}
	f.lastMark = now
	f.counts = append(f.counts, model.ByteCount{TS: now.Sub(ref).Seconds(), Bytes: total})
	if len(f.counts) >= maxCounts {
		out := f.counts[:0]
		for i := 0; i < len(f.counts); i += 2 {
			out = append(out, f.counts[i])
		}
		f.counts, f.every = out, 2*f.every
	}
}

// reports stops the samplers and returns the flows as the server's
// records take them, and the number of connections not recorded; limit
// names the server limit that cut the test (protocol.LimitBytes,
// protocol.LimitDuration) or is empty.
func (fs *flows) reports(limit string) ([]protocol.FlowReport, int) {
	fs.mu.Lock()
	all := append([]*flow(nil), fs.all...)
	unrecorded := len(fs.unrecorded)
	fs.mu.Unlock()
	out := make([]protocol.FlowReport, 0, len(all))
	for _, f := range all {
		var series []model.TCPSample
		if f.sampler != nil {
			series, _ = f.sampler.Stop() // a closed connection ends its series early
		}
		f.mu.Lock()
		r := protocol.FlowReport{ID: f.id, Kind: protocol.KindUpload, Bytes: f.bytes.Load(), TCPInfo: series,
			StartS: f.start.Sub(fs.ref).Seconds(), EndS: f.last.Sub(fs.ref).Seconds(), Limit: limit}
		if f.send {
			r.Kind = protocol.KindDownload
		} else {
			r.Counts = append(f.counts, model.ByteCount{TS: r.EndS, Bytes: r.Bytes})
		}
		f.mu.Unlock()
		if f.tcp != nil {
			r.SndBufBytes, r.RcvBufBytes, _ = tcpinfo.Buffers(f.tcp)
		}
		out = append(out, r)
	}
	return out, unrecorded
}
