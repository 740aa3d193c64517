package rpm

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stream"
)

// Defaults of the client's algorithm (draft-ietf-ippm-responsiveness-09
// §5.4): MAD intervals of the moving average, SDT its stability threshold.
const (
	DefaultInterval      = time.Second
	DefaultMaxDuration   = 20 * time.Second
	DefaultMaxFlows      = 16
	DefaultProbeInterval = 100 * time.Millisecond
	MAD                  = 4
	SDT                  = 0.05
	// maxConfigBytes bounds the configuration document read.
	maxConfigBytes = 64 << 10
)

// ClientOptions configures Run.
type ClientOptions struct {
	// URL is the configuration's URL, or a server's base URL (then
	// ConfigPath on it).
	URL      string
	Insecure bool
	// Interval is ID, MaxDuration bounds each direction, MaxFlows its load
	// connections; ProbeInterval is the time between probe pairs (the
	// draft allows up to 100 pairs a second).
	Interval, MaxDuration, ProbeInterval time.Duration
	MaxFlows                             int
	// Directions to run, in order: "download", "upload".
	Directions []string
	Software   string
	// Truth, if set, is the configured path (a lab's), kept in the result.
	Truth *model.GroundTruth
}

func (o *ClientOptions) defaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = DefaultMaxDuration
	}
	if o.MaxFlows <= 0 {
		o.MaxFlows = DefaultMaxFlows
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if len(o.Directions) == 0 {
		o.Directions = []string{"download", "upload"}
	}
}

// ConfigURL is the configuration URL for what a user typed: a URL with a
// path is taken as is, a bare host or base URL gets ConfigPath; no scheme
// means https.
func ConfigURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("rpm: URL %q: %w", s, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("rpm: URL %q: want http(s)://HOST[:PORT][/PATH]", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = ConfigPath
	}
	return u, nil
}

// ParseConfig reads a configuration document: version 1, and each URL
// under its https_ name or the draft's (https_ wins, as clients do).
func ParseConfig(b []byte) (small, large, upload string, err error) {
	var doc struct {
		Version json.RawMessage   `json:"version"`
		URLs    map[string]string `json:"urls"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", "", "", fmt.Errorf("rpm: config: %w", err)
	}
	if v := strings.Trim(string(doc.Version), `"`); v != "1" {
		return "", "", "", fmt.Errorf("rpm: config version %s, want 1", doc.Version)
	}
	pick := func(a, b string) string {
		if v := doc.URLs[a]; v != "" {
			return v
		}
		return doc.URLs[b]
	}
	small = pick("small_https_download_url", "small_download_url")
	large = pick("large_https_download_url", "large_download_url")
	upload = pick("https_upload_url", "upload_url")
	for _, u := range []string{small, large, upload} {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return "", "", "", fmt.Errorf("rpm: config URL %q is not an http(s) URL", u)
		}
	}
	return small, large, upload, nil
}

// client carries one run's endpoints and transports.
type client struct {
	opt                  ClientOptions
	small, large, upload string
	tlsCfg               *tls.Config
	payload              []byte
	// uploadCC is the congestion control the upload connections got
	// (httpload.LossBased; "" where none could be set).
	uploadCC atomic.Pointer[string]
}

func (c *client) transport() *http.Transport {
	return &http.Transport{TLSClientConfig: c.tlsCfg.Clone(), ForceAttemptHTTP2: true, DisableCompression: true,
		MaxIdleConnsPerHost: 1, ResponseHeaderTimeout: 10 * time.Second}
}

// Run runs the test and returns its result; the result is non-nil
// whenever the configuration was read, with what failed in Errors (and,
// when no direction was measured, the first of them as the error).
func Run(ctx context.Context, opt ClientOptions) (*model.RPMResult, error) {
	opt.defaults()
	cu, err := ConfigURL(opt.URL)
	if err != nil {
		return nil, err
	}
	c := &client{opt: opt, tlsCfg: &tls.Config{InsecureSkipVerify: opt.Insecure}, payload: make([]byte, 64<<10)}
	_, _ = rand.Read(c.payload)
	hc := &http.Client{Transport: c.transport(), Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("rpm: the server redirected") }}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cu.String(), nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rpm: config: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxConfigBytes))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("rpm: config: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rpm: config: %s", resp.Status)
	}
	if c.small, c.large, c.upload, err = ParseConfig(body); err != nil {
		return nil, err
	}
	res := &model.RPMResult{Schema: model.RPMSchemaVersion, Software: opt.Software, Start: time.Now(),
		ConfigURL: cu.String(), SmallURL: c.small, LargeURL: c.large, UploadURL: c.upload, Protocol: resp.Proto,
		IntervalS: opt.Interval.Seconds(), MAD: MAD, SDTPct: SDT * 100, TrimPct: metrics.RPMTrim * 100,
		MaxDurationS: opt.MaxDuration.Seconds(), GroundTruth: opt.Truth}
	if resp.ProtoMajor < 2 {
		res.Notes = append(res.Notes, "the server answered over "+resp.Proto+": self probes cannot share the load connections, so each load flow keeps a second connection for them")
	}
	var all probeSet
	for _, dir := range opt.Directions {
		d, window, err := c.direction(ctx, dir)
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
		if d != nil {
			res.Directions = append(res.Directions, *d)
			all.add(window)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if f := all.figure(); f != nil && len(res.Directions) > 1 {
		res.Overall = f
	}
	if cc := c.uploadCC.Load(); cc != nil {
		if *cc == "" {
			res.Notes = append(res.Notes, "upload load connections kept the host's congestion control (a loss-based one could not be set): a delay-based one such as BBR may not fill the bottleneck's buffer, and the upload RPM then reads higher than under working conditions")
		} else {
			res.Notes = append(res.Notes, "upload load connections: congestion control "+*cc+" (loss-based, so the bottleneck's buffer fills: the draft's working conditions); sonde serve sends downloads the same way")
		}
	}
	if len(res.Directions) == 0 && len(res.Errors) > 0 {
		return res, errors.New(res.Errors[0]) // nothing measured: the run failed
	}
	return res, nil
}

// probeSet holds probe times, ms.
type probeSet struct {
	tcp, tls, http, self []float64
}

func (p *probeSet) add(q probeSet) {
	p.tcp = append(p.tcp, q.tcp...)
	p.tls = append(p.tls, q.tls...)
	p.http = append(p.http, q.http...)
	p.self = append(p.self, q.self...)
}

// figure is the RPM of the set with its trimmed means; nil if too few.
func (p *probeSet) figure() *model.RPMFigure {
	rpm, err := metrics.RPM(p.tcp, p.tls, p.http, p.self)
	if err != nil {
		return nil
	}
	tm := func(xs []float64) float64 { return metrics.TrimmedMeanTop(xs, metrics.RPMTrim) }
	f := &model.RPMFigure{RPM: rpm, Band: metrics.RPMBand(rpm), AppleBand: metrics.RPMAppleBand(rpm),
		ForeignTCPMs: tm(p.tcp), ForeignHTTPMs: tm(p.http), SelfHTTPMs: tm(p.self),
		ForeignProbes: len(p.http), SelfProbes: len(p.self)}
	if len(p.tls) > 0 {
		f.ForeignTLSMs = tm(p.tls)
	}
	return f
}

// sample is one probe's times, stamped when it ended.
type sample struct {
	at                  time.Time
	foreign             bool
	tcp, tls, http, ttl float64
	hasTLS              bool
}

// flow is one load-generating connection.
type flow struct {
	tr     *http.Transport
	bytes  atomic.Int64
	cancel context.CancelFunc
	// conn is the flow's TCP connection once dialled; last the bytes at
	// the previous interval (the interval loop's own).
	conn atomic.Pointer[net.Conn]
	last int64
}

func (c *client) startFlow(ctx context.Context, dir string, errc chan<- error) *flow {
	fctx, cancel := context.WithCancel(ctx)
	f := &flow{tr: c.transport(), cancel: cancel}
	if dir == "upload" {
		var d net.Dialer
		f.tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err == nil {
				cc := httpload.LossBased(conn) // the draft's working conditions
				c.uploadCC.Store(&cc)
				// About 5 ms of the flow's rate unsent, as the server
				// keeps its own (draft §6.1): without it a self probe on
				// an upload connection waits behind the client's socket
				// buffer, which is not the path's queue.
				stream.LimitUnsent(conn, httpload.UnsentStart)
				f.conn.Store(&conn)
			}
			return conn, err
		}
	}
	go func() {
		var req *http.Request
		if dir == "download" {
			req, _ = http.NewRequestWithContext(fctx, http.MethodGet, c.large, nil)
		} else {
			req, _ = http.NewRequestWithContext(fctx, http.MethodPost, c.upload, &endless{ctx: fctx, payload: c.payload, n: &f.bytes})
			// The body can always start again: a server's graceful
			// GOAWAY that races the upload's first bytes (a server
			// closing a connection after its self probe's reply, or at
			// a request limit, as nginx does) is retried on a new
			// connection instead of failing the flow.
			req.GetBody = func() (io.ReadCloser, error) {
				return io.NopCloser(&endless{ctx: fctx, payload: c.payload, n: &f.bytes}), nil
			}
			req.Header.Set("Content-Type", "application/octet-stream")
		}
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := f.tr.RoundTrip(req)
		if err != nil {
			if fctx.Err() == nil {
				errc <- fmt.Errorf("%s flow: %w", dir, err)
			}
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errc <- fmt.Errorf("%s flow: %s (Retry-After %q)", dir, resp.Status, resp.Header.Get("Retry-After"))
			return
		}
		if dir == "download" {
			buf := make([]byte, 64<<10)
			for {
				n, err := resp.Body.Read(buf)
				f.bytes.Add(int64(n))
				if err != nil {
					return
				}
			}
		}
	}()
	return f
}

// endless is an upload body that never ends before its context.
type endless struct {
	ctx     context.Context
	payload []byte
	n       *atomic.Int64
}

func (e *endless) Read(p []byte) (int, error) {
	if err := e.ctx.Err(); err != nil {
		return 0, err
	}
	n := copy(p, e.payload)
	e.n.Add(int64(n))
	return n, nil
}

// probe runs one probe: foreign on a new connection (tr nil) or self on a
// load flow's transport.
func (c *client) probe(ctx context.Context, tr *http.Transport) (sample, error) {
	s := sample{foreign: tr == nil}
	if tr == nil {
		tr = c.transport()
		tr.DisableKeepAlives = true
		defer tr.CloseIdleConnections()
	}
	var connStart, connDone, tlsStart, tlsDone, wrote, first time.Time
	trace := &httptrace.ClientTrace{
		ConnectStart:         func(string, string) { connStart = time.Now() },
		ConnectDone:          func(string, string, error) { connDone = time.Now() },
		TLSHandshakeStart:    func() { tlsStart = time.Now() },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { tlsDone = time.Now() },
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote = time.Now() },
		GotFirstResponseByte: func() { first = time.Now() },
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(pctx, trace), http.MethodGet, c.small, nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return s, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || first.IsZero() || wrote.IsZero() {
		return s, fmt.Errorf("probe: %s", resp.Status)
	}
	ms := func(a, b time.Time) float64 { return float64(b.Sub(a)) / 1e6 }
	s.http = ms(wrote, first)
	if s.foreign {
		if connStart.IsZero() || connDone.IsZero() {
			return s, errors.New("probe: no new connection")
		}
		s.tcp = ms(connStart, connDone)
		if !tlsStart.IsZero() && !tlsDone.IsZero() {
			s.tls, s.hasTLS = ms(tlsStart, tlsDone), true
		}
	}
	s.at = time.Now()
	return s, nil
}

// direction runs one direction to saturation and stable responsiveness
// (§5.4), returning it and the probes of its final window.
func (c *client) direction(ctx context.Context, dir string) (*model.RPMDirection, probeSet, error) {
	opt := c.opt
	dctx, cancel := context.WithTimeout(ctx, opt.MaxDuration)
	defer cancel()
	errc := make(chan error, opt.MaxFlows+1)
	var mu sync.Mutex
	var flows []*flow
	var samples []sample
	addFlow := func() {
		mu.Lock()
		defer mu.Unlock()
		flows = append(flows, c.startFlow(dctx, dir, errc))
	}
	addFlow()
	start := time.Now()
	// Probes: a foreign and a self probe every ProbeInterval.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(opt.ProbeInterval)
		defer tick.Stop()
		next := 0
		for {
			select {
			case <-dctx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			tr := flows[next%len(flows)].tr
			next++
			mu.Unlock()
			for _, t := range []*http.Transport{nil, tr} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if s, err := c.probe(dctx, t); err == nil {
						mu.Lock()
						samples = append(samples, s)
						mu.Unlock()
					}
				}()
			}
		}
	}()
	d := &model.RPMDirection{Direction: dir, Confidence: "Low"}
	var goodputs, movings, rpms []float64
	var last int64
	var firstErr error
	tick := time.NewTicker(opt.Interval)
	defer tick.Stop()
loop:
	for {
		select {
		case <-dctx.Done():
			break loop
		case err := <-errc:
			if firstErr == nil {
				firstErr = err
			}
			mu.Lock()
			n := len(flows)
			mu.Unlock()
			if n == 1 {
				break loop // the only flow failed: nothing to measure
			}
			continue
		case <-tick.C:
		}
		now := time.Now()
		mu.Lock()
		var total int64
		for _, f := range flows {
			total += f.bytes.Load()
		}
		nflows := len(flows)
		window := windowProbes(samples, now.Add(-time.Duration(MAD)*opt.Interval))
		mu.Unlock()
		if dir == "upload" {
			mu.Lock()
			for _, f := range flows {
				n := f.bytes.Load()
				if cp := f.conn.Load(); cp != nil {
					rate := float64(n-f.last) / opt.Interval.Seconds()
					stream.LimitUnsent(*cp, httpload.UnsentFor(rate))
				}
				f.last = n
			}
			mu.Unlock()
		}
		gp := float64(total-last) * 8 / opt.Interval.Seconds()
		last = total
		goodputs = append(goodputs, gp)
		ma := mean(goodputs[max(0, len(goodputs)-MAD):])
		movings = append(movings, ma)
		var rpm float64
		if f := window.figure(); f != nil {
			rpm = f.RPM
		}
		rpms = append(rpms, rpm)
		d.Intervals = append(d.Intervals, model.RPMInterval{EndS: now.Sub(start).Seconds(), Flows: nflows,
			GoodputBps: gp, MovingBps: ma, RPM: rpm})
		d.GoodputStable = d.GoodputStable || stable(movings)
		d.RPMStable = stable(rpms)
		if d.GoodputStable && d.RPMStable {
			break
		}
		if !d.GoodputStable && nflows < opt.MaxFlows {
			addFlow()
		}
	}
	cancel()
	wg.Wait()
	mu.Lock()
	for _, f := range flows {
		d.Bytes += f.bytes.Load()
		f.tr.CloseIdleConnections()
	}
	d.Flows = len(flows)
	end := time.Now()
	window := windowProbes(samples, end.Add(-time.Duration(MAD)*opt.Interval))
	mu.Unlock()
	d.DurationS = end.Sub(start).Seconds()
	if len(movings) > 0 {
		d.GoodputBps = movings[len(movings)-1]
	}
	switch {
	case len(d.Intervals) < MAD:
		d.Confidence = "Low"
	case d.GoodputStable && d.RPMStable:
		d.Confidence = "High"
	default:
		d.Confidence = "Medium"
	}
	d.RPM = window.figure()
	if d.Bytes == 0 && firstErr == nil {
		firstErr = fmt.Errorf("%s: no bytes moved", dir)
	}
	if firstErr != nil {
		firstErr = fmt.Errorf("rpm %s: %w", dir, firstErr)
	}
	return d, window, firstErr
}

// windowProbes collects the probes that ended after since.
func windowProbes(ss []sample, since time.Time) probeSet {
	var p probeSet
	for _, s := range ss {
		if s.at.Before(since) {
			continue
		}
		if s.foreign {
			p.tcp = append(p.tcp, s.tcp)
			if s.hasTLS {
				p.tls = append(p.tls, s.tls)
			}
			p.http = append(p.http, s.http)
		} else {
			p.self = append(p.self, s.http)
		}
	}
	return p
}

// stable tells whether the last MAD values of a series are within SDT:
// their standard deviation under SDT of the newest (§5.4).
func stable(xs []float64) bool {
	if len(xs) < MAD {
		return false
	}
	w := xs[len(xs)-MAD:]
	cur := w[len(w)-1]
	if !(cur > 0) {
		return false
	}
	m := mean(w)
	var ss float64
	for _, x := range w {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(w))) < SDT*cur
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
