package iperf3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

// SuiteConfig is `sonde test iperf3://HOST[:PORT]`.
type SuiteConfig struct {
	Addr             string // host:port
	Duration         time.Duration
	Streams          int // per direction (default 4)
	Download, Upload bool
	Software         string
	// ProbeInterval spaces the TCP-connect and ICMP probes (default 100 ms).
	ProbeInterval time.Duration
	// NoICMP leaves out the ICMP echo probes (run by default where a ping
	// or raw socket is allowed).
	NoICMP bool
}

// DefaultPort is iperf3's port.
const DefaultPort = "5201"

// ParseURL reads iperf3://HOST[:PORT] into host:port.
func ParseURL(u string) (string, error) {
	rest, ok := strings.CutPrefix(u, "iperf3://")
	if !ok {
		return "", fmt.Errorf("iperf3: %q is not an iperf3:// URL", u)
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || strings.ContainsAny(rest, "/?#@") {
		return "", fmt.Errorf("iperf3: want iperf3://HOST[:PORT], got %q", u)
	}
	if _, _, err := net.SplitHostPort(rest); err != nil {
		rest = net.JoinHostPort(strings.Trim(rest, "[]"), DefaultPort)
	}
	return rest, nil
}

// Suite runs sonde's TCP suite against an iperf3 server: an idle baseline
// of TCP-connect RTTs to its port, then an iperf3 test per direction (-R
// for the download) with connect probes beside it for the latency under
// load; goodput per direction and stream from the client's receive
// counts (download) or its TCP's acknowledged bytes (upload), RFC 6349
// from the client's own TCP_INFO where it sends.
func Suite(ctx context.Context, cfg SuiteConfig) (*model.Result, error) {
	if cfg.Streams == 0 {
		cfg.Streams = 4
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = 100 * time.Millisecond
	}
	if !cfg.Download && !cfg.Upload {
		cfg.Download, cfg.Upload = true, true
	}
	host, _ := os.Hostname()
	ref := time.Now()
	res := &model.Result{Schema: model.SchemaVersion, ID: newResultID(), Start: ref.UTC(),
		Client: model.Endpoint{Software: cfg.Software, Hostname: host},
		Server: model.Endpoint{Address: cfg.Addr, Software: "iperf3"},
		Config: model.TestConfig{Server: "iperf3://" + cfg.Addr, Streams: fmt.Sprint(cfg.Streams),
			DurationS: cfg.Duration.Seconds(), ProbeMs: float64(cfg.ProbeInterval) / float64(time.Millisecond)}}
	res.Notes = append(res.Notes,
		"iperf3 server: no one-way delays (it has no STAMP reflector) and no server TCP_INFO; RTTs are TCP-connect times to its port, which include its accept",
		"upload goodput is the bytes the server's TCP acknowledged (the client's TCP_INFO), the iperf3 server's own count is in the notes")
	// ICMP echo runs beside the connect probes where this host allows it.
	var icmpRun *icmpProbes
	if !cfg.NoICMP {
		h, _, _ := net.SplitHostPort(cfg.Addr)
		var err error
		if icmpRun, err = startICMP(ctx, h, ref, cfg.ProbeInterval); err != nil {
			res.Notes = append(res.Notes, "ICMP echo not run: "+err.Error())
		} else {
			defer icmpRun.stop()
			res.Notes = append(res.Notes, "ICMP echo RTTs from a "+icmpRun.socket+" beside the TCP-connect ones (baseline_icmp, icmp_latency_under_load)")
		}
	}
	// The spans (seconds from ref) of the idle baseline and of each
	// phase's load, whose ICMP RTTs are summarised at the end.
	type span struct {
		from, to float64
		out      **model.RTTResult
	}
	var spans []span
	finish := func(err error) (*model.Result, error) {
		if icmpRun != nil {
			icmpRun.stop()
			for _, sp := range spans {
				s, lost := icmpRun.between(sp.from, sp.to)
				*sp.out = assemble.RTT(s, lost)
			}
		}
		res.End = time.Now().UTC()
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
		return res, err
	}

	type phase struct {
		dir     string
		reverse bool
		out     **model.DirectionResult
	}
	var phases []phase
	if cfg.Download {
		phases = append(phases, phase{protocol.KindDownload, true, &res.Download})
	}
	if cfg.Upload {
		phases = append(phases, phase{protocol.KindUpload, false, &res.Upload})
	}
	for _, ph := range phases {
		// The connect probes run only while the server is busy with this
		// test: the idle ones before its parameters, the loaded ones
		// while its data flows.
		var probes probeRun
		tc := TestConfig{Addr: cfg.Addr, Time: cfg.Duration, Streams: cfg.Streams, Reverse: ph.reverse, Ref: ref, RetryRefused: res.Baseline != nil,
			Loaded: func(stop <-chan struct{}) { probes = connectProbes(ctx, cfg.Addr, ref, cfg.ProbeInterval, 0, stop) }}
		if res.Baseline == nil {
			tc.Idle = func() {
				from := time.Since(ref).Seconds()
				base := connectProbes(ctx, cfg.Addr, ref, cfg.ProbeInterval, baselineProbes, nil)
				res.Baseline = assemble.RTT(base.samples, base.lost)
				spans = append(spans, span{from, time.Since(ref).Seconds(), &res.BaselineICMP})
			}
		}
		t, err := RunTest(ctx, tc)
		if t == nil || len(t.Streams) == 0 {
			var refused *apiclient.RefusedError
			if errors.As(err, &refused) && res.Download == nil && res.Upload == nil {
				return nil, err // nothing measured: a refusal
			}
			if err == nil {
				err = errors.New("iperf3: the test ended before its streams ran")
			}
			return finish(err)
		}
		p := assemble.Phase{Direction: ph.dir, StartS: t.StartS, EndS: t.EndS, Baseline: res.Baseline}
		var loaded []model.RTTSample
		for _, s := range probes.samples {
			if s.TS >= t.StartS && s.TS <= t.EndS {
				loaded = append(loaded, s)
			}
		}
		p.Latency = assemble.RTT(loaded, probes.lost)
		var server int64
		for _, s := range t.Server.Streams {
			server += int64(s.Bytes)
		}
		for _, s := range t.Streams {
			f := assemble.Flow{StartS: t.StartS, EndS: t.EndS}
			if s.Sender {
				f.Counts, f.TCPInfo = assemble.AckedCounts(s.TCPInfo), s.TCPInfo
			} else {
				f.Counts = s.Counts
			}
			p.Flows = append(p.Flows, f)
		}
		*ph.out = assemble.Direction(p)
		spans = append(spans, span{t.StartS, t.EndS, &(*ph.out).ICMPLatency})
		if icmpRun != nil {
			icmpRun.drain()
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s: the iperf3 server reported %d bytes %s over %d stream(s)",
			ph.dir, server, map[bool]string{true: "sent", false: "received"}[ph.reverse], len(t.Server.Streams)))
		if err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// probeRun is a series of TCP-connect RTTs.
type probeRun struct {
	samples []model.RTTSample
	lost    int
	err     error
}

// baselineProbes is the number of idle connect probes.
const baselineProbes = 20

// maxProbes bounds a probe series (an hour at 100 ms).
const maxProbes = 36000

// connectProbes times TCP connects to addr every interval: n of them, or
// until stop closes (n 0). Each connection is closed at once, before it
// sends anything: an iperf3 server reads it as a client that left.
func connectProbes(ctx context.Context, addr string, ref time.Time, interval time.Duration, n int, stop <-chan struct{}) probeRun {
	var r probeRun
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; (n == 0 || i < n) && i < maxProbes; i++ {
		sent := time.Now()
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			r.lost++
			r.err = err
		} else {
			rtt := time.Since(sent)
			c.Close()
			r.samples = append(r.samples, model.RTTSample{TS: sent.Sub(ref).Seconds(), RTTMs: float64(rtt) / float64(time.Millisecond)})
		}
		select {
		case <-ctx.Done():
			return r
		case <-stop:
			return r
		case <-t.C:
		}
	}
	return r
}

func newResultID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
