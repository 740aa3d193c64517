package udptest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
)

// ProbeOptions configure probes that run beside a TCP load phase.
type ProbeOptions struct {
	Token    string
	Insecure bool
	Software string
	// TestSession is the running sonde test session's ID: the probes then
	// need no admission of their own and end with the test.
	TestSession string
	// Interval (default 20 ms), PacketBytes (default 52: base packet and
	// CoS TLV), DSCP/ECN of the probes.
	Interval    time.Duration
	PacketBytes int
	DSCP, ECN   int
	// Timeout is the loss timeout (default 3 s); MaxDuration bounds how
	// long the probes may run before Stop (default 120 s).
	Timeout     time.Duration
	MaxDuration time.Duration
	// Name labels the flow in the result (default "probes").
	Name string
}

// Probes are STAMP probes running in the background.
type Probes struct {
	stop context.CancelFunc
	done chan struct{}
	flow model.UDPFlow
	err  error
}

// StartProbes opens a reflector session on server (host[:port] or
// http(s)://host[:port]) and starts probing at once. The session is open
// when it returns, so errors such as a missing reflector surface here; ctx
// bounds the whole life of the probes. Call Stop to end them and get the
// result: RTT, and one-way delay, jitter and loss per direction, so a
// caller can attribute delay under load to the direction that is loaded.
func StartProbes(ctx context.Context, server string, o ProbeOptions) (*Probes, error) {
	if o.Interval == 0 {
		o.Interval = 20 * time.Millisecond
	}
	if o.PacketBytes == 0 {
		o.PacketBytes = stamp.BaseLen + stamp.TLVHeaderLen + stamp.CoSLen
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxDuration == 0 {
		o.MaxDuration = 120 * time.Second
	}
	if o.Name == "" {
		o.Name = "probes"
	}
	count := int(o.MaxDuration / o.Interval)
	cfg := stamp.SenderConfig{Conn: &stamp.Conn{}, Clock: &stamp.Clock{}, Interval: o.Interval, Count: max(count, 1),
		PacketBytes: o.PacketBytes, DSCP: o.DSCP, ECN: o.ECN, Timeout: o.Timeout}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	ctl, err := newControl(server, o.Token, o.Software, o.Insecure)
	if err != nil {
		return nil, err
	}
	rep, err := ctl.open(ctx, stamp.SessionRequest{
		Client: o.Software, TestSession: o.TestSession, DurationS: o.MaxDuration.Seconds(),
		IntervalUs: float64(o.Interval) / 1e3, PacketBytes: o.PacketBytes, DSCP: o.DSCP, ECN: o.ECN,
	})
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	// Beside a test the session ends with it; probes past the grant would
	// count as loss.
	g := granted(rep, o.MaxDuration, o.Timeout)
	if g <= 0 {
		_, _ = ctl.close(context.WithoutCancel(ctx), rep.ID)
		return nil, fmt.Errorf("probes: the server grants %.1f s, too short for a %v loss timeout", rep.ExpiresS, o.Timeout)
	}
	count = max(1, min(count, int(g/o.Interval)))
	sendCtx, stop := context.WithCancel(ctx)
	p := &Probes{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		flow := model.UDPFlow{Name: o.Name, DSCP: o.DSCP, ECN: o.ECN}
		p.flow, _, _, p.err = measure(ctx, ctl, rep, ctl.reflectorAddr(rep.Port), senderOpts{
			count: count, interval: o.Interval, bytes: o.PacketBytes, dscp: o.DSCP, ecn: o.ECN,
			timeout: o.Timeout, stopSending: sendCtx,
		}, flow)
		// Stopping is the normal end, not an error.
		if errors.Is(p.err, context.Canceled) && ctx.Err() == nil {
			p.err = nil
		}
	}()
	return p, nil
}

// Stop ends the probes, waits for the replies in flight (at most the loss
// timeout), closes the session and returns the result. It may be called
// more than once.
func (p *Probes) Stop() (model.UDPFlow, error) {
	p.stop()
	<-p.done
	return p.flow, p.err
}
