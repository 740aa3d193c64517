package udptest

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/stamp"
)

// rawRecord is one probe of the --raw output (JSON lines, docs/udp.md).
// Times are ns on each end's clock; delays in ms; absent fields mean the
// reply never came.
type rawRecord struct {
	Flow       string   `json:"flow"`
	Seq        int      `json:"seq"`
	DeadlineNs int64    `json:"deadline_ns"`
	T1         int64    `json:"t1_ns"`
	T2         *int64   `json:"t2_ns,omitempty"`
	T3         *int64   `json:"t3_ns,omitempty"`
	T4         *int64   `json:"t4_ns,omitempty"`
	ReflSeq    *uint32  `json:"reflector_seq,omitempty"`
	RTTMs      *float64 `json:"rtt_ms,omitempty"`
	ForwardMs  *float64 `json:"forward_owd_ms,omitempty"`
	BackwardMs *float64 `json:"backward_owd_ms,omitempty"`
	KernelTS   bool     `json:"kernel_ts,omitempty"`
	TOS        *int     `json:"tos,omitempty"`
	ReflTOS    *int     `json:"reflector_tos,omitempty"`
	TTL        *int     `json:"ttl,omitempty"`
	Dups       int      `json:"dups,omitempty"`
	SendError  bool     `json:"send_error,omitempty"`
}

// writeRaw writes one JSON line per probe sent.
func writeRaw(w io.Writer, flow string, run *stamp.Run, off offsetModel) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range run.Sent {
		s, r := run.Sends[i], run.Replies[i]
		rec := rawRecord{Flow: flow, Seq: i, DeadlineNs: s.Deadline, T1: s.T1, SendError: s.Err}
		if r.Got {
			t2, t3, t4, refl := r.T2, r.T3, r.T4, r.ReflSeq
			rec.T2, rec.T3, rec.T4, rec.ReflSeq = &t2, &t3, &t4, &refl
			p := metrics.Probe{T1: float64(s.T1) / 1e9, T2: float64(t2) / 1e9, T3: float64(t3) / 1e9, T4: float64(t4) / 1e9}
			rtt, fwd, back := p.RTT()*1e3, off.Forward(p)*1e3, off.Backward(p)*1e3
			rec.RTTMs, rec.ForwardMs, rec.BackwardMs = &rtt, &fwd, &back
			rec.KernelTS, rec.Dups = r.KernelTS, r.Dups
			if r.TOS >= 0 {
				tos := r.TOS
				rec.TOS = &tos
			}
			if r.TTL >= 0 {
				ttl := r.TTL
				rec.TTL = &ttl
			}
			if r.HasCoS {
				rt := int(r.CoS.DSCP2)<<2 | int(r.CoS.ECN)
				rec.ReflTOS = &rt
			}
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	return bw.Flush()
}
