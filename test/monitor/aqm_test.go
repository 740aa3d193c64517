//go:build linux

package monitor

import (
	"fmt"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
)

// TestMonitorAQM runs the adsl scenario's upload phase with an AQM on the
// uplink (profiles adsl-codel and adsl-fqcodel: the same line, another
// queue discipline) and checks the loaded episode's queue class: CoDel is
// an AQM, FQ-CoDel a flow queue. The two labs run side by side: each
// carries 0.7 Mbit/s, which costs the host little.
func TestMonitorAQM(t *testing.T) {
	needLab(t)
	for _, c := range []struct {
		profile string
		qdisc   emulator.Qdisc
		class   string
	}{
		{"adsl-codel", emulator.CoDel, "aqm"},
		{"adsl-fqcodel", emulator.FQCoDel, "fq"},
	} {
		t.Run(c.profile, func(t *testing.T) {
			t.Parallel()
			p, err := lab.Resolve(c.profile)
			if err != nil {
				t.Fatal(err)
			}
			if g := p.GroundTruth(); g.UpQdisc != string(c.qdisc) {
				t.Fatalf("profile %s: uplink qdisc %q, want %q", c.profile, g.UpQdisc, c.qdisc)
			}
			r := startRig(t, p)
			sleepUntil(r.started.Add(8 * time.Second))
			upFrom, upTo := r.load(14*time.Second, false)
			sleepUntil(upTo.Add(drain))
			r.stop()
			rep := r.report(r.started.Add(3*time.Second), time.Now())
			tb := &table{t: t}
			ep, ok := episode(rep.Events, model.LoadUp)
			if !ok {
				tb.check("upload episode", "none", "one", "present", false)
			} else {
				tb.check("uplink queue class", queueClass(ep), r.truth.UpQdisc, c.class, queueClass(ep) == c.class)
				tb.check("added p95 delay", fmt.Sprintf("%.1f ms", ep.Detail["added_p95_ms"]), "-", "-", true)
			}
			up := r.report(upFrom.Add(settle), upTo)
			tb.check("upload median RTT", nsMs(up.Stats[0].RTT.P50Ns), "-", "-", true)
			tb.log(fmt.Sprintf("monitor across lab %s: upload phase", p.Name))
		})
	}
}
