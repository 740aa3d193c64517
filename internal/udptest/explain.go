package udptest

import (
	"fmt"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
)

// explainLoss names the causes of loss that sonde can see, so that a flow
// which lost probes, or heard nothing, says why instead of showing
// silence: probes the reflector dropped by its policy (its rate limit, or
// after the session expired: counted as forward loss, since they never
// reached the reflector's books), replies it failed to send, and datagrams
// this host's kernel dropped during the run (drops: the delta of
// /proc/net/snmp's UDP counters, host-wide, nil where unknown).
func explainLoss(flow *model.UDPFlow, rep *stamp.SessionReport, drops *udpDrops) {
	if rep != nil {
		if rep.RateLimited > 0 {
			flow.Errors = append(flow.Errors, fmt.Sprintf(
				"the reflector's rate limit for this session dropped %d probes (counted as forward loss): the probes arrived in a burst, e.g. after the sender or the network stalled", rep.RateLimited))
		}
		if rep.Late > 0 {
			flow.Errors = append(flow.Errors, fmt.Sprintf(
				"%d probes reached the reflector after its session expired and were not reflected (counted as forward loss)", rep.Late))
		}
		if rep.SendErrors > 0 {
			flow.Errors = append(flow.Errors, fmt.Sprintf(
				"the reflector failed to send %d replies (counted as backward loss)", rep.SendErrors))
		}
	}
	lost := flow.Sent - flow.Replies
	if drops != nil && lost > 0 && (drops.rcvbuf > 0 || drops.sndbuf > 0) {
		flow.Errors = append(flow.Errors, fmt.Sprintf(
			"this host's kernel dropped %d UDP datagrams for full receive buffers and %d for full send buffers during the run (/proc/net/snmp, all sockets of the host): some of the %d lost probes may be among them",
			drops.rcvbuf, drops.sndbuf, lost))
	}
}

// udpDrops counts datagrams the kernel dropped for full socket buffers.
type udpDrops struct{ rcvbuf, sndbuf int64 }

// since is the drops from before to d; nil if either is unknown.
func (d *udpDrops) since(before *udpDrops) *udpDrops {
	if d == nil || before == nil {
		return nil
	}
	return &udpDrops{rcvbuf: d.rcvbuf - before.rcvbuf, sndbuf: d.sndbuf - before.sndbuf}
}
