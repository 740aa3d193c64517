package stamp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/pace"
)

// SenderConfig configures an isochronous Session-Sender.
type SenderConfig struct {
	// Conn is a socket connected to the reflector (Dial).
	Conn  *Conn
	Clock *Clock
	SSID  uint16
	// Interval between probes (≥ 100 µs) and the number of probes; the run
	// also ends when ctx ends.
	Interval time.Duration
	Count    int
	// PacketBytes is the UDP payload of each probe (BaseLen, or with the CoS
	// TLV at least BaseLen + 8; padding fills larger sizes).
	PacketBytes int
	DSCP, ECN   int
	// NoCoS leaves out the CoS TLV (for reflectors that reject TLVs).
	NoCoS bool
	// Timeout is how long a probe may take before it counts as lost; the
	// run listens that long after the last probe (or until every reply is
	// in).
	Timeout time.Duration
	// SpinWindow is how long before a deadline the sender stops sleeping
	// and spins (default DefaultSpinWindow): even a precise sleep wakes
	// late, by up to ~150 µs when an idle CPU has to leave a deep idle
	// state (virtual machines, power saving).
	SpinWindow time.Duration
	// NoReplyAbort ends the run early when no reply at all came within this
	// time from the start (default Timeout + 2 s; negative: never).
	NoReplyAbort time.Duration
}

// DefaultSpinWindow is the sender's default SpinWindow. It covers the
// wake-up latency of an idle CPU and costs 200 µs of spinning per probe:
// 1 % of a core at 50 probes/s; from 5,000 probes/s on the sender spins
// all the time.
const DefaultSpinWindow = 200 * time.Microsecond

// SendRecord is one probe as sent. Times are Clock ns.
type SendRecord struct {
	Deadline int64
	T1       int64
	Err      bool
}

// ReplyRecord is the first reply to one probe. T2 and T3 are the
// reflector's clock; T4 the sender's.
type ReplyRecord struct {
	Got        bool
	T2, T3, T4 int64
	KernelTS   bool
	ReflSeq    uint32
	CoS        CoS
	HasCoS     bool
	// TOS and TTL as received by the sender (−1: unknown); SenderTTL the
	// TTL the reflector saw.
	TOS, TTL  int
	SenderTTL uint8
	Dups      int
}

// Arrival is one reply in arrival order.
type Arrival struct {
	SenderSeq, ReflSeq uint32
	T4                 int64
}

// Run is everything a sender recorded. Sends and Replies are indexed by
// sequence number and hold Sent entries.
type Run struct {
	Start    time.Time // wall clock, for labels
	StartNs  int64     // Clock ns of the first deadline
	Sent     int
	Sends    []SendRecord
	Replies  []ReplyRecord
	Arrivals []Arrival
	// Formats counts the replies read in each reflector format (indexed by
	// ReplyFormat): which one the reflector speaks.
	Formats [numFormats]int
	// Unparsed tallies the datagrams from the reflector that were not a
	// reflection of a probe, by size and reason.
	Unparsed Unparsed
	// Foreign counts reflections of a probe that carried another
	// session's SSID; ReadErrors failed reads; Refused ICMP
	// port-unreachable reports.
	Foreign, ReadErrors, Refused int
	// SenderCPU is the CPU time the sending thread used over SendTime,
	// the time from the first deadline to the end of sending.
	SenderCPU, SendTime time.Duration
	// ClockSteps counts wall-clock steps seen during the run.
	ClockSteps int
	KernelTS   bool
	// Err is why the run ended early, if it did.
	Err error
}

// ErrNoReply means the reflector never answered.
var ErrNoReply = errors.New("no reply from the reflector")

// Validate checks a configuration.
func (c *SenderConfig) Validate() error {
	minLen := BaseLen
	if !c.NoCoS {
		minLen += TLVHeaderLen + CoSLen
	}
	switch {
	case c.Conn == nil || c.Clock == nil:
		return errors.New("stamp: sender needs a connection and a clock")
	case c.Interval < 100*time.Microsecond:
		return fmt.Errorf("interval %v below the 100µs minimum", c.Interval)
	case c.Count < 1:
		return fmt.Errorf("probe count %d: want at least 1", c.Count)
	case c.PacketBytes != minLen && (c.PacketBytes < minLen+TLVHeaderLen || c.PacketBytes > MaxPacketLen):
		return fmt.Errorf("packet size %d: want %d or %d-%d bytes", c.PacketBytes, minLen, minLen+TLVHeaderLen, MaxPacketLen)
	case c.DSCP < 0 || c.DSCP > 63 || c.ECN < 0 || c.ECN > 3:
		return fmt.Errorf("DSCP %d / ECN %d out of range (0-63 / 0-3)", c.DSCP, c.ECN)
	case c.Timeout <= 0:
		return fmt.Errorf("loss timeout must be positive, got %v", c.Timeout)
	}
	return nil
}

// template builds the probe bytes; Send patches seq and timestamp.
func (c *SenderConfig) template() ([]byte, error) {
	p := SenderPacket{SSID: c.SSID, Error: LocalErrorEstimate()}
	if !c.NoCoS {
		p.TLVs = []TLV{CoS{DSCP1: uint8(c.DSCP)}.TLV(FlagU)}
	}
	return p.AppendTo(nil, c.PacketBytes)
}

// RunSender sends cfg.Count probes on absolute deadlines (start + i ×
// interval on the monotonic clock, so lateness never accumulates) and
// records every reply, until the count is reached or ctx ends, then waits
// for the stragglers. The returned Run holds whatever was measured even
// when the run failed (Run.Err).
func RunSender(ctx context.Context, cfg SenderConfig) (*Run, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SpinWindow == 0 {
		cfg.SpinWindow = DefaultSpinWindow
	}
	if cfg.NoReplyAbort == 0 {
		cfg.NoReplyAbort = cfg.Timeout + 2*time.Second
	}
	pkt, err := cfg.template()
	if err != nil {
		return nil, err
	}
	cfg.Conn.SetBuffers(4 << 20)
	run := &Run{
		Sends: make([]SendRecord, cfg.Count), Replies: make([]ReplyRecord, cfg.Count),
		KernelTS: cfg.Conn.KernelTimestamps,
	}
	var (
		received atomic.Int64
		sent     atomic.Int64
		unparsed atomic.Int64
		wg       sync.WaitGroup
		refused  atomic.Int64
	)
	// sentTS holds each probe's timestamp as sent, so that the receiver
	// takes only reflections of probes sent as replies; stored before the
	// probe leaves, read as its reply comes in.
	sentTS := make([]atomic.Uint64, cfg.Count)
	_ = cfg.Conn.SetReadDeadline(time.Time{})
	probe := slices.Clone(pkt) // the receiver's copy: the sender patches pkt
	wg.Add(1)
	go func() {
		defer wg.Done()
		receive(cfg, run, probe, sentTS, &received, &unparsed, &refused)
	}()

	tos := cfg.DSCP<<2 | cfg.ECN
	start := time.Now().Add(2 * time.Millisecond) // let the receiver start
	run.Start = start
	run.StartNs = cfg.Clock.At(start)
	unpin := pace.PinThread()
	cpu0 := threadCPU()
	noReply := start.Add(cfg.NoReplyAbort)
	aborted := false
	for i := 0; i < cfg.Count; i++ {
		deadline := start.Add(time.Duration(i) * cfg.Interval)
		if err := pace.WaitUntil(ctx, cfg.Clock, deadline, cfg.SpinWindow); err != nil {
			break
		}
		if cfg.NoReplyAbort > 0 && received.Load() == 0 && time.Now().After(noReply) {
			aborted = true
			break
		}
		now := time.Now()
		t1 := cfg.Clock.At(now)
		ts := TimestampFromNs(t1)
		binary.BigEndian.PutUint32(pkt[0:], uint32(i))
		binary.BigEndian.PutUint64(pkt[4:], uint64(ts))
		sentTS[i].Store(uint64(ts))
		err := cfg.Conn.WriteTo(pkt, cfg.Conn.RemoteAddr(), tos)
		run.Sends[i] = SendRecord{Deadline: cfg.Clock.At(deadline), T1: t1, Err: err != nil}
		sent.Store(int64(i + 1))
	}
	run.SenderCPU = threadCPU() - cpu0
	run.SendTime = time.Since(start)
	unpin()
	run.Sent = int(sent.Load())
	// Wait for the last replies: until all are in, the timeout passes, or
	// (after a no-reply abort) at once.
	if !aborted {
		end := time.Now().Add(cfg.Timeout)
		for time.Now().Before(end) && received.Load() < int64(run.Sent) {
			time.Sleep(min(5*time.Millisecond, time.Until(end)))
		}
	}
	_ = cfg.Conn.SetReadDeadline(time.Now())
	wg.Wait()
	run.Refused = int(refused.Load())
	if aborted || run.Sent > 0 && received.Load() == 0 {
		run.Err = noReplyError(cfg, run.Refused > 0, &run.Unparsed)
	}
	return run, nil
}

// ErrUnparsedReplies means the reflector answered, but with datagrams
// that are not a reflection of the probes in any format sonde reads.
var ErrUnparsedReplies = errors.New("no reply from the reflector could be read")

func noReplyError(cfg SenderConfig, refused bool, unparsed *Unparsed) error {
	if n := unparsed.Total(); n > 0 {
		return fmt.Errorf("%w: the reflector at %s answered with %d datagrams, none a STAMP (RFC 8762) or TWAMP-Light (RFC 5357) reflection of a probe: %s", ErrUnparsedReplies, cfg.Conn.RemoteAddr(), n, unparsed)
	}
	if refused {
		return fmt.Errorf("%w at %s: the port is closed (ICMP port unreachable); is the server running with its UDP reflector?", ErrNoReply, cfg.Conn.RemoteAddr())
	}
	return fmt.Errorf("%w at %s within %v: the reflector is not running, the session expired, or UDP is blocked on the path", ErrNoReply, cfg.Conn.RemoteAddr(), cfg.NoReplyAbort)
}

// receive records replies until the read deadline is set to the past.
// probe is the probe template (its SSID and TLVs tell the reply formats
// apart); sentTS the timestamps of the probes sent.
func receive(cfg SenderConfig, run *Run, probe []byte, sentTS []atomic.Uint64, received, unparsed, refused *atomic.Int64) {
	buf := make([]byte, MaxReplyLen+1) // one more: a longer datagram shows as too long
	oob := make([]byte, OOBLen())
	var steps StepDetector
	for {
		n, info, err := cfg.Conn.Read(buf, oob)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				refused.Add(1)
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, net.ErrClosed) {
				run.ClockSteps = steps.Steps
				return
			}
			run.ReadErrors++
			continue
		}
		steps.Check(info.At)
		t4 := cfg.Clock.At(info.At)
		kernel := false
		if info.KernelNs != 0 {
			if k, ok := cfg.Clock.FromKernel(info.KernelNs, info.At); ok {
				t4, kernel = k, true
			}
		}
		p, format, perr := ParseReply(buf[:n], probe)
		if perr != nil && !errors.Is(perr, ErrMalformTLV) {
			run.Unparsed.Add(n, perr.Error())
			unparsed.Add(1)
			continue
		}
		// Only a reflection of a probe sent is a reply: it echoes the
		// probe's sequence number and the timestamp it carried.
		if int(p.SenderSeq) >= len(sentTS) || sentTS[p.SenderSeq].Load() != uint64(p.SenderTimestamp) || p.SenderTimestamp == 0 {
			run.Unparsed.Add(n, reasonNotEcho)
			unparsed.Add(1)
			continue
		}
		if format != FormatTWAMPLight && p.SSID != cfg.SSID {
			run.Foreign++
			continue
		}
		run.Formats[format]++
		run.Arrivals = append(run.Arrivals, Arrival{SenderSeq: p.SenderSeq, ReflSeq: p.Seq, T4: t4})
		r := &run.Replies[p.SenderSeq]
		if r.Got {
			r.Dups++
			continue
		}
		*r = ReplyRecord{
			Got: true, T2: p.Receive.Ns(), T3: p.Timestamp.Ns(), T4: t4, KernelTS: kernel,
			ReflSeq: p.Seq, TOS: info.TOS, TTL: info.TTL, SenderTTL: p.SenderTTL,
		}
		r.CoS, r.HasCoS = FindCoS(p.TLVs)
		received.Add(1)
	}
}
