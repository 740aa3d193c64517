package rtcquality

import (
	"sync/atomic"

	"github.com/pion/logging"
)

// stackDrops counts the datagrams one peer connection's pion stack threw
// away after the kernel had delivered them. pion keeps two bounded 1 MB
// queues between the UDP socket and SCTP, neither one configurable nor
// counted in its stats: the ICE agent's (a datagram dropped there never
// reaches the candidate pair's packetsReceived, so it reads as a datagram
// lost on the path) and the DTLS endpoint's behind it (after the count: it
// reads as a lost message). pion only logs those drops, so the peer's
// logger counts them: without the count the server would pass its own
// drops off as path loss.
type stackDrops struct {
	ice atomic.Int64 // before the pair's count
	mux atomic.Int64 // after it
}

// The messages pion v4 logs for the two drops (ice/v4 candidate_base.go
// with transport/v4 packetio.ErrFull; webrtc/v4 internal/mux/mux.go).
const (
	iceDropFormat = "Failed to write packet: %s"
	iceDropErr    = "packetio.Buffer is full, discarding write"
	muxDropFormat = "mux: endpoint buffer is full, dropping packet"
)

// total returns both counts.
func (d *stackDrops) total() (ice, mux int) { return int(d.ice.Load()), int(d.mux.Load()) }

// NewLogger makes stackDrops a logging.LoggerFactory: every scope's logger
// discards its messages, except that the two drops are counted.
func (d *stackDrops) NewLogger(scope string) logging.LeveledLogger {
	return dropLogger{d: d, scope: scope}
}

type dropLogger struct {
	d     *stackDrops
	scope string
}

func (l dropLogger) Infof(format string, _ ...any) {
	if l.scope == "mux" && format == muxDropFormat {
		l.d.mux.Add(1)
	}
}

func (l dropLogger) Warnf(format string, args ...any) {
	if l.scope == "ice" && format == iceDropFormat && len(args) == 1 {
		// Only a dropped datagram takes this path: a delivered one costs
		// nothing here.
		if e, ok := args[0].(error); ok && e.Error() == iceDropErr {
			l.d.ice.Add(1)
		}
	}
}

func (dropLogger) Trace(string)          {}
func (dropLogger) Tracef(string, ...any) {}
func (dropLogger) Debug(string)          {}
func (dropLogger) Debugf(string, ...any) {}
func (dropLogger) Info(string)           {}
func (dropLogger) Warn(string)           {}
func (dropLogger) Error(string)          {}
func (dropLogger) Errorf(string, ...any) {}
