package udptest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
)

// Profile defaults.
const (
	// VoiceInterval and VoiceBytes model a G.711 call: 20 ms frames of
	// 160 bytes plus a 12-byte RTP header.
	VoiceInterval = 20 * time.Millisecond
	VoiceBytes    = 172
	VoiceDSCP     = 46 // EF
	// DefaultTimeout is the loss timeout (metrics.md §4).
	DefaultTimeout = 3 * time.Second
)

// Options configure `sonde udp`.
type Options struct {
	// Server is the sonde server: host[:port] or http(s)://host[:port].
	Server string
	// Reflector, instead of Server, is the UDP address (host:port) of a
	// standalone STAMP reflector (RFC 8762, any implementation) or
	// TWAMP-Light reflector (RFC 5357): no control channel, so no
	// per-direction loss split and no shared clock.
	Reflector string
	Token     string
	Insecure  bool
	Software  string
	Embedded  bool

	Interval    time.Duration
	Duration    time.Duration
	PacketBytes int
	DSCP, ECN   int
	Timeout     time.Duration
	// Voice adds the E-model estimate (the voice profile also sets the
	// interval, size and DSCP; see VoiceProfile).
	Voice bool
	// Classes runs one flow per class at the same time: its DSCP and, if
	// Port is set, its local UDP source port.
	Classes []model.Class
	// NoCoS leaves out the Class of Service TLV (strict RFC 8762 peers).
	NoCoS bool
	// Raw, if set, receives one JSON line per probe.
	Raw io.Writer
}

// VoiceProfile sets the voice profile's interval, size and DSCP on o
// (fields the user set explicitly should be applied after).
func (o *Options) VoiceProfile() {
	o.Voice = true
	o.Interval, o.PacketBytes, o.DSCP = VoiceInterval, VoiceBytes, VoiceDSCP
}

// Validate checks the options.
func (o *Options) Validate() error {
	switch {
	case o.Interval < 100*time.Microsecond:
		return fmt.Errorf("interval %v: the minimum is 100µs", o.Interval)
	case o.Duration <= 0:
		return fmt.Errorf("duration must be positive, got %v", o.Duration)
	case o.Duration/o.Interval > 2_000_000:
		return fmt.Errorf("%v at %v is %d probes: at most 2,000,000 per run", o.Duration, o.Interval, o.Duration/o.Interval)
	case o.DSCP < 0 || o.DSCP > 63:
		return fmt.Errorf("DSCP %d out of range 0-63", o.DSCP)
	case o.ECN < 0 || o.ECN > 3:
		return fmt.Errorf("ECN %d out of range 0-3", o.ECN)
	case o.Timeout <= 0:
		return fmt.Errorf("loss timeout must be positive, got %v", o.Timeout)
	case o.Reflector != "" && o.Server != "":
		return errors.New("give a sonde server or a STAMP reflector address, not both")
	}
	if o.Reflector != "" {
		if _, _, err := net.SplitHostPort(o.Reflector); err != nil {
			return fmt.Errorf("reflector address %q: want host:port (STAMP's port is 862)", o.Reflector)
		}
	}
	cfg := stamp.SenderConfig{Conn: &stamp.Conn{}, Clock: &stamp.Clock{}, Interval: o.Interval, Count: 1,
		PacketBytes: o.PacketBytes, DSCP: o.DSCP, ECN: o.ECN, NoCoS: o.NoCoS, Timeout: o.Timeout}
	return cfg.Validate()
}

// flowSpec is one flow of a run.
type flowSpec struct {
	name      string
	dscp, ecn int
	localPort int
}

func (o *Options) flows() []flowSpec {
	if len(o.Classes) == 0 {
		name := "probe"
		if o.Voice {
			name = "voice"
		}
		return []flowSpec{{name: name, dscp: o.DSCP, ecn: o.ECN}}
	}
	var out []flowSpec
	for _, c := range o.Classes {
		out = append(out, flowSpec{name: c.Name, dscp: c.DSCP, ecn: o.ECN, localPort: c.Port})
	}
	return out
}

// Run runs the UDP quality test. The result holds whatever was measured
// even when err is not nil (then also recorded in result.Errors).
func Run(ctx context.Context, o Options) (*model.UDPResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var ctl *control
	server := o.Reflector
	if o.Reflector == "" {
		c, err := newControl(o.Server, o.Token, o.Software, o.Insecure)
		if err != nil {
			return nil, err
		}
		ctl, server = c, c.api.Base.Host
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	host, _ := os.Hostname()
	res := &model.UDPResult{
		Schema: model.UDPSchemaVersion, ID: hex.EncodeToString(idb[:]), Start: time.Now().UTC(),
		Client: model.Endpoint{Software: o.Software, Hostname: host},
		Server: model.Endpoint{Address: server},
		Config: model.UDPConfig{
			Server: cmp.Or(o.Server, o.Reflector), Embedded: o.Embedded, IntervalUs: float64(o.Interval) / 1e3,
			PacketBytes: o.PacketBytes, DurationS: o.Duration.Seconds(), TimeoutS: o.Timeout.Seconds(),
			DSCP: o.DSCP, ECN: o.ECN, Classes: o.Classes,
		},
	}
	if o.Voice {
		res.Config.Profile = "voice"
	}
	specs := o.flows()
	count := int(math.Ceil(float64(o.Duration) / float64(o.Interval)))
	res.Flows = make([]model.UDPFlow, len(specs))
	errs := make([]error, len(specs))
	granted := make([]time.Duration, len(specs))
	var rawMu sync.Mutex
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			flow, run, off, grant, err := runFlow(ctx, ctl, o, spec, count)
			res.Flows[i], granted[i] = flow, grant
			errs[i] = err
			if o.Raw != nil && run != nil {
				rawMu.Lock()
				if werr := writeRaw(o.Raw, spec.name, run, off); werr != nil {
					errs[i] = errors.Join(errs[i], fmt.Errorf("write raw records: %w", werr))
				}
				rawMu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.End = time.Now().UTC()
	if g := slices.Min(granted); g < o.Duration {
		// Not loss: the server's limit ended sending early, by agreement.
		res.Config.DurationS = g.Seconds()
		res.Notes = append(res.Notes, fmt.Sprintf("the server limits UDP sessions: probes were sent for %v, not the %v asked (--duration)",
			g.Round(time.Millisecond), o.Duration))
	}
	for i, err := range errs {
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", specs[i].name, err))
		}
	}
	for _, f := range res.Flows {
		if f.Clock.Steps > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: the wall clock stepped %d times during the run; sonde's timestamps do not step, but kernel timestamps taken at a step were replaced by user-space ones", f.Name, f.Clock.Steps))
		}
		if !f.KernelTimestamps && f.Sent > 0 {
			res.Notes = append(res.Notes, f.Name+": no kernel receive timestamps (SO_TIMESTAMPNS); user-space times add scheduling delay")
		}
	}
	return res, errors.Join(errs...)
}

// runFlow opens a session, runs one sender for as long as the server grants
// (at most count probes), and analyses it. grant is the sending time.
func runFlow(ctx context.Context, ctl *control, o Options, spec flowSpec, count int) (_ model.UDPFlow, _ *stamp.Run, _ offsetModel, grant time.Duration, _ error) {
	flow := model.UDPFlow{Name: spec.name, DSCP: spec.dscp, ECN: spec.ecn}
	so := senderOpts{
		count: count, interval: o.Interval, bytes: o.PacketBytes, dscp: spec.dscp, ecn: spec.ecn,
		timeout: o.Timeout, noCoS: o.NoCoS, localPort: spec.localPort, voice: o.Voice,
	}
	if ctl == nil {
		f, run, off, err := measure(ctx, nil, stamp.SessionReply{}, o.Reflector, so, flow)
		return f, run, off, o.Duration, err
	}
	rep, err := ctl.open(ctx, stamp.SessionRequest{
		Client: o.Software, DurationS: o.Duration.Seconds() + o.Timeout.Seconds(),
		IntervalUs: float64(o.Interval) / 1e3, PacketBytes: o.PacketBytes, DSCP: spec.dscp, ECN: spec.ecn,
	})
	if err != nil {
		return flow, nil, offsetModel{}, 0, err
	}
	grant = granted(rep, o.Duration, o.Timeout)
	if grant <= 0 {
		_, _ = ctl.close(context.WithoutCancel(ctx), rep.ID)
		return flow, nil, offsetModel{}, 0, fmt.Errorf("the server grants this session %.1f s, too short for a %v loss timeout", rep.ExpiresS, o.Timeout)
	}
	so.count = min(count, int(math.Ceil(float64(grant)/float64(o.Interval))))
	f, run, off, err := measure(ctx, ctl, rep, ctl.reflectorAddr(rep.Port), so, flow)
	return f, run, off, grant, err
}

// granted is how long probes may be sent in a session, at most want: the
// server's grant (duration_s), and no later than the loss timeout before
// the session expires, so that the last replies still come back. Probes
// past it would go unreflected and count as loss.
func granted(rep stamp.SessionReply, want, timeout time.Duration) time.Duration {
	d := want
	// Only values below want are converted: a server's number is not
	// trusted to fit a time.Duration.
	if s := rep.DurationS; s > 0 && s < d.Seconds() {
		d = time.Duration(s * float64(time.Second))
	}
	if s := rep.ExpiresS - timeout.Seconds(); s < d.Seconds() {
		d = time.Duration(max(s, 0) * float64(time.Second))
	}
	return d
}

type senderOpts struct {
	count       int
	interval    time.Duration
	bytes       int
	dscp, ecn   int
	timeout     time.Duration
	noCoS       bool
	localPort   int
	voice       bool
	stopSending context.Context // ends sending early (probes); nil: ctx
}

// measure runs the sender of an opened session (ctl nil: a standalone
// reflector at addr, no session), closes the session and analyses the run.
func measure(ctx context.Context, ctl *control, rep stamp.SessionReply, addr string, so senderOpts, flow model.UDPFlow) (model.UDPFlow, *stamp.Run, offsetModel, error) {
	flow.ReflectorAddr = addr
	var errs []error
	closeSession := func(ctx context.Context) (*stamp.SessionReport, error) {
		if ctl == nil {
			return nil, nil
		}
		return ctl.close(ctx, rep.ID)
	}
	conn, err := stamp.DialFrom("udp", so.localPort, addr)
	if err != nil {
		_, _ = closeSession(context.WithoutCancel(ctx))
		return flow, nil, offsetModel{}, err
	}
	defer conn.Close()
	clock := stamp.NewClock()
	sendCtx := ctx
	if so.stopSending != nil {
		sendCtx = so.stopSending
	}
	dropsBefore := readUDPDrops()
	run, err := stamp.RunSender(sendCtx, stamp.SenderConfig{
		Conn: conn, Clock: clock, SSID: rep.SSID, Interval: so.interval, Count: so.count,
		PacketBytes: so.bytes, DSCP: so.dscp, ECN: so.ecn, NoCoS: so.noCoS, Timeout: so.timeout,
	})
	if err != nil {
		_, _ = closeSession(context.WithoutCancel(ctx))
		return flow, nil, offsetModel{}, err
	}
	if run.Err != nil {
		errs = append(errs, run.Err)
	} else if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("interrupted after %d probes: %w", run.Sent, ctx.Err()))
	}
	// Close even when ctx ended: the session report is part of the result.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	report, cerr := closeSession(cctx)
	cancel()
	if cerr != nil {
		errs = append(errs, fmt.Errorf("reflector report unavailable (%v): forward and backward loss are not split", cerr))
	}
	in := Input{
		Run: run, Report: report, Timeout: so.timeout.Seconds(), DSCP: so.dscp, ECN: so.ecn, Voice: so.voice,
		Shared:   rep.Clock.BootID != "" && rep.Clock.BootID == stamp.BootID(),
		SharedNs: rep.Clock.EpochNs - clock.Epoch(),
	}
	name, dscp, ecn := flow.Name, flow.DSCP, flow.ECN
	flow, off := analyze(in)
	flow.Name, flow.DSCP, flow.ECN, flow.ReflectorAddr = name, dscp, ecn, addr
	for _, e := range errs {
		flow.Errors = append(flow.Errors, e.Error())
	}
	explainLoss(&flow, report, readUDPDrops().since(dropsBefore))
	if ctl == nil && run.Sent > 0 && flow.Replies == 0 && run.Err == nil {
		errs = append(errs, fmt.Errorf("no reply from the STAMP reflector at %s to %d probes in time: is it running and reachable? (a sonde server's reflector answers only sessions opened through the server: use sonde udp SERVER)", addr, run.Sent))
	}
	if n := run.Unparsed.Total(); n > 0 && run.Err == nil {
		// Replies were read too: say what else came, but not as an error.
		flow.Errors = append(flow.Errors, fmt.Sprintf("%d datagrams from the reflector were not replies to the probes: %s", n, &run.Unparsed))
	}
	if run.Sent > 0 && flow.Replies > 0 && report == nil && !in.Shared {
		flow.Errors = append(flow.Errors, "without the reflector's report, per-direction loss counts the round trip")
	}
	return flow, run, off, errors.Join(errs...)
}
