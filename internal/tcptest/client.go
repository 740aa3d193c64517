// Package tcptest runs `sonde test` against a sonde server: baseline RTT,
// download and upload load phases with latency under load and RPM, and QoS
// classes, then joins its own measurements with the server's (protocol
// Report) into a model.Result. Whatever was measured before an error is kept
// in the result.
package tcptest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// Config is one test run's settings. Zero values take the documented
// defaults.
type Config struct {
	Server   string // host[:port] or http(s)://host[:port]
	Token    string
	Insecure bool // accept any TLS certificate
	// Duration of each load phase (default 10 s).
	Duration time.Duration
	// Streams is the number of load streams per direction; 0 means auto.
	Streams int
	// MaxStreams bounds auto (default 16).
	MaxStreams int
	// DSCP marks every client socket and asks the server to mark its own;
	// -1 for none.
	DSCP    int
	Classes []model.Class
	// LossBased runs the load streams under a loss-based congestion
	// control (cubic, else reno) at both ends instead of the hosts'
	// default, so a drop-tail bottleneck's buffer fills as the
	// responsiveness draft's working conditions have it
	// (httpload.LossBased).
	LossBased bool
	// LinkRateBps enables TTR (RFC 6349), 0 if unknown; UpLinkRateBps is
	// the upload's when it differs (asymmetric lines), 0 for the same.
	// WireOverhead is the per-frame L2 overhead in bytes (default 38,
	// Ethernet; -1 for none, as on the lab's IP-level links).
	LinkRateBps   float64
	UpLinkRateBps float64
	WireOverhead  int
	// Truth, if set, is the configured path (lab), stored in the result.
	Truth *model.GroundTruth
	// ProbeInterval of the latency probes (default 20 ms; at most 50 ms).
	ProbeInterval time.Duration
	// BaselineSamples on the idle path (default 30, at least 20).
	BaselineSamples int
	// Download and Upload select the one-way phases, run one after the
	// other; Bidir the bidirectional phase (both at once), run after them.
	// Download and upload when none is set.
	Download, Upload, Bidir bool
	// NoForeign disables the RPM probes on new connections.
	NoForeign bool
	// NoUDP disables the STAMP probes that split delay by direction.
	NoUDP    bool
	Software string
	// Progress, if set, receives live readings during load phases.
	Progress func(Progress)
	// Embedded is recorded in the result when the server was started
	// in-process.
	Embedded bool
}

// Validate reports invalid settings in one line.
func (c *Config) Validate() error {
	switch {
	case c.Duration < 0:
		return fmt.Errorf("--duration must be positive, got %v", c.Duration)
	case c.Duration > 0 && c.Duration < time.Second:
		return fmt.Errorf("--duration must be at least 1s, got %v", c.Duration)
	case c.Streams < 0:
		return fmt.Errorf("--streams must be a positive count or auto, got %d", c.Streams)
	case c.Streams > 128:
		return fmt.Errorf("--streams at most 128, got %d", c.Streams)
	case c.DSCP < -1 || c.DSCP > 63:
		return fmt.Errorf("--dscp must be 0-63, got %d", c.DSCP)
	case c.LinkRateBps < 0 || c.UpLinkRateBps < 0:
		return fmt.Errorf("--link-rate must be positive, got %v", c.LinkRateBps)
	case c.ProbeInterval < 0 || c.ProbeInterval > 50*time.Millisecond:
		return fmt.Errorf("--probe-interval must be in (0, 50ms], got %v", c.ProbeInterval)
	case c.BaselineSamples != 0 && c.BaselineSamples < 20:
		return fmt.Errorf("--baseline-samples must be at least 20, got %d", c.BaselineSamples)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = 16
	}
	if c.WireOverhead == 0 {
		c.WireOverhead = 38
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 20 * time.Millisecond
	}
	if c.BaselineSamples == 0 {
		c.BaselineSamples = 30
	}
	if !c.Download && !c.Upload && !c.Bidir {
		c.Download, c.Upload = true, true
	}
	if c.Software == "" {
		c.Software = "sonde"
	}
}

// tcpinfoInterval is the TCP_INFO sampling interval on both ends: fine
// enough to see slow start end within a few RTTs on most paths, coarse
// enough to keep a 16-stream result to a few MB.
const tcpinfoInterval = 20 * time.Millisecond

// withProbeRTT returns a copy of the ground truth with the true RTT of a
// probe: the probe (IPv4 20 B + TCP with timestamps 32 B + frame) up and
// its reply down, each serialised once at the bottleneck rate.
func withProbeRTT(t *model.GroundTruth) *model.GroundTruth {
	if t == nil {
		return nil
	}
	c := *t
	const headers = 20 + 32
	up := float64(headers+protocol.HeaderLen+protocol.ProbeLen) * 8
	down := float64(headers+protocol.HeaderLen+protocol.ProbeReplyLen) * 8
	if c.UpRateBps > 0 && c.DownRateBps > 0 {
		c.ProbeRTTMs = c.BaseRTTMs + 1000*(up/c.UpRateBps+down/c.DownRateBps)
	}
	return &c
}

// linkRate is the configured bottleneck rate of a direction, 0 if unknown.
func (c *Config) linkRate(dir string) float64 {
	if dir == protocol.KindUpload && c.UpLinkRateBps > 0 {
		return c.UpLinkRateBps
	}
	return c.LinkRateBps
}

// tester is the state of one run.
type tester struct {
	cfg     Config
	ep      *endpoint
	session protocol.SessionReply
	payload stream.Payload
	t0      time.Time
	// serverShift converts server session times to client test times.
	serverShift     float64
	tcpinfoInterval time.Duration
	probe           *prober
	baselineMs      float64
}

func (t *tester) since(at time.Time) float64 { return at.Sub(t.t0).Seconds() }

// Run performs a test. It returns the result even on error, holding
// everything measured before the failure; err says what failed.
func Run(ctx context.Context, cfg Config) (*model.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	base, err := protocol.ParseServer(cfg.Server)
	if err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if base.Scheme == "https" {
		tlsCfg = &tls.Config{ServerName: base.Hostname(), InsecureSkipVerify: cfg.Insecure, NextProtos: []string{"http/1.1"}}
	}
	api, err := apiclient.New(cfg.Server, cfg.Token, cfg.Software, tlsCfg)
	if err != nil {
		return nil, err
	}
	defer api.Close()
	t := &tester{cfg: cfg, ep: &endpoint{api: api, base: base, tls: tlsCfg, software: cfg.Software, lossBased: cfg.LossBased}}

	res := &model.Result{Schema: model.SchemaVersion, Start: time.Now().UTC(), Config: t.resultConfig(),
		Client: localEndpoint(cfg.Software), Truth: withProbeRTT(cfg.Truth)}
	err = t.run(ctx, res)
	res.End = time.Now().UTC()
	if err != nil {
		res.Errors = append(res.Errors, err.Error())
	}
	assemble.Finish(res)
	return res, err
}

func (t *tester) resultConfig() model.TestConfig {
	streams := "auto"
	if t.cfg.Streams > 0 {
		streams = fmt.Sprint(t.cfg.Streams)
	}
	return model.TestConfig{
		Server: t.cfg.Server, Embedded: t.cfg.Embedded, TLS: false, Streams: streams,
		DurationS: t.cfg.Duration.Seconds(), LinkRateBps: t.cfg.LinkRateBps, DSCP: max(t.cfg.DSCP, 0),
		Classes: t.cfg.Classes, ProbeMs: ms(t.cfg.ProbeInterval),
	}
}

func (t *tester) run(ctx context.Context, res *model.Result) error {
	res.Config.TLS = t.ep.tls != nil
	payload, err := stream.NewPayload()
	if err != nil {
		return err
	}
	t.payload = payload
	if err := t.open(ctx); err != nil {
		return err
	}
	res.ID = t.session.ID
	res.Server = model.Endpoint{Address: t.ep.base.Host, Software: t.session.Server}
	defer t.close()

	probeConn, err := t.ep.openStream(ctx, t.session.ID, protocol.KindProbe, flowSpec{tag: "probe", mark: t.cfg.DSCP})
	if err != nil {
		return err
	}
	t.probe = newProber(probeConn, t.t0)
	defer t.probe.close()

	if err := t.baseline(ctx, res); err != nil {
		return err
	}
	var errs []error
	for _, dir := range t.directions() {
		if err := t.direction(ctx, res, dir); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	if t.cfg.Bidir && ctx.Err() == nil {
		if err := t.bidir(ctx, res); err != nil {
			errs = append(errs, err)
		}
	}
	if len(t.cfg.Classes) > 0 && ctx.Err() == nil {
		if err := t.classes(ctx, res); err != nil {
			errs = append(errs, err)
		}
	}
	t.probe.close()
	t.finishBaseline(ctx, res)
	return errors.Join(errs...)
}

func (t *tester) directions() []string {
	var d []string
	if t.cfg.Download {
		d = append(d, protocol.KindDownload)
	}
	if t.cfg.Upload {
		d = append(d, protocol.KindUpload)
	}
	return d
}

// open creates the session and checks that the server allows the test.
func (t *tester) open(ctx context.Context) error {
	phases := len(t.directions())
	if t.cfg.Bidir {
		phases++
	}
	need := t.cfg.Duration*time.Duration(phases) + 10*time.Second
	if len(t.cfg.Classes) > 0 {
		need += 2 * t.cfg.Duration
	}
	t.t0 = time.Now()
	t.tcpinfoInterval = tcpinfoInterval
	req := protocol.SessionRequest{Client: t.cfg.Software, DurationS: t.cfg.Duration.Seconds(),
		TCPInfoIntervalMs: ms(tcpinfoInterval)}
	if err := t.ep.api.Call(ctx, http.MethodPost, protocol.PathSessions, req, &t.session); err != nil {
		return err
	}
	// The server's session clock started about half a round trip after ours.
	t.serverShift = time.Since(t.t0).Seconds() / 2
	if t.session.ID == "" {
		return fmt.Errorf("%s is not a sonde server (no session ID in its reply)", t.ep.base.Host)
	}
	if max := time.Duration(t.session.MaxDurationS * float64(time.Second)); max < need {
		return fmt.Errorf("server allows tests of at most %v; this one needs about %v (lower --duration)", max, need.Round(time.Second))
	}
	return t.checkClassPorts()
}

// checkClassPorts refuses, before any load, classes on ports the server
// does not serve.
func (t *tester) checkClassPorts() error {
	main := t.ep.base.Port()
	for _, c := range t.cfg.Classes {
		if c.Port == 0 || fmt.Sprint(c.Port) == main || slices.Contains(t.session.ExtraPorts, c.Port) {
			continue
		}
		return fmt.Errorf("class %s: the server does not serve port %d (its extra ports: %v; see sonde serve --extra-addr)",
			c.Name, c.Port, t.session.ExtraPorts)
	}
	return nil
}

// close ends the session on the server; best effort.
func (t *tester) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = t.ep.api.Call(ctx, http.MethodDelete, protocol.PathSessions+"/"+t.session.ID, nil, nil)
}

// report fetches the server's measurements of the session's flows; all
// also waits for the probe stream's record (after it was closed).
func (t *tester) report(ctx context.Context, all bool) (protocol.Report, error) {
	var rep protocol.Report
	path := protocol.PathSessions + "/" + t.session.ID + "/report"
	if all {
		path += "?wait=all"
	}
	err := t.ep.api.Call(ctx, http.MethodGet, path, nil, &rep)
	if err != nil {
		return rep, fmt.Errorf("fetch server report: %w", err)
	}
	for i := range rep.Flows {
		f := &rep.Flows[i]
		f.StartS += t.serverShift
		f.EndS += t.serverShift
		for j := range f.Counts {
			f.Counts[j].TS += t.serverShift
		}
		for j := range f.TCPInfo {
			f.TCPInfo[j].TS += t.serverShift
		}
	}
	return rep, nil
}

// live fetches the server's current view of the session's flows.
func (t *tester) live(ctx context.Context) (protocol.Live, error) {
	var l protocol.Live
	err := t.ep.api.Call(ctx, http.MethodGet, protocol.PathSessions+"/"+t.session.ID+"/live", nil, &l)
	return l, err
}

func localEndpoint(software string) model.Endpoint {
	h, _ := os.Hostname()
	return model.Endpoint{Software: software, Hostname: h, Kernel: tcpinfo.KernelRelease()}
}

// localAddr returns the client's address of a connection, for the result.
func localAddr(c net.Conn) string {
	if c == nil {
		return ""
	}
	return c.LocalAddr().String()
}

// SetDirection selects the load phases by --direction's name: sequential
// (download, then upload), download, upload, bidir (both at once) or all
// (download, upload, then bidir). "both" is sequential's deprecated name
// (it read as "at once" to some): deprecated tells.
func (c *Config) SetDirection(name string) (deprecated bool, err error) {
	c.Download, c.Upload, c.Bidir = false, false, false
	switch name {
	case "both", "sequential":
		c.Download, c.Upload = true, true
	case "download":
		c.Download = true
	case "upload":
		c.Upload = true
	case "bidir":
		c.Bidir = true
	case "all":
		c.Download, c.Upload, c.Bidir = true, true, true
	default:
		return false, fmt.Errorf("--direction: want sequential, download, upload, bidir or all, got %q", name)
	}
	return name == "both", nil
}
