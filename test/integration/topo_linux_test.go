package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/netns"
)

// topo is two namespaces, a server and a client, joined by one veth pair
// on a /24 of 198.18.0.0/15.
type topo struct {
	srv, cli     *netns.NS
	srvIf, cliIf string
	srvIP, cliIP string
}

// newTopo builds a topology that t.Cleanup removes (the veth ends go with
// their namespaces). Processes started later in the test are cleaned up
// first, since cleanups run last-registered first.
func newTopo(t *testing.T) *topo {
	t.Helper()
	needRoot(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip from iproute2 (make test installs it via apt)")
	}
	net := rand.IntN(256)
	tp := &topo{
		srvIf: netns.UniqueName("s"), cliIf: netns.UniqueName("c"),
		srvIP: fmt.Sprintf("198.18.%d.1", net), cliIP: fmt.Sprintf("198.18.%d.2", net),
	}
	var err error
	if tp.srv, err = netns.Add(netns.UniqueName("its")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tp.srv.Delete(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if tp.cli, err = netns.Add(netns.UniqueName("itc")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tp.cli.Delete(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := netns.Veth(tp.srv, tp.srvIf, tp.srvIP+"/24", tp.cli, tp.cliIf, tp.cliIP+"/24"); err != nil {
		t.Fatal(err)
	}
	return tp
}

// setMTU sets the MTU of both veth ends.
func (tp *topo) setMTU(t *testing.T, mtu int) {
	t.Helper()
	for _, e := range []struct {
		ns  *netns.NS
		ifc string
	}{{tp.srv, tp.srvIf}, {tp.cli, tp.cliIf}} {
		if err := e.ns.IP("link", "set", "dev", e.ifc, "mtu", fmt.Sprint(mtu)); err != nil {
			t.Fatal(err)
		}
	}
}

// shape limits the egress of ifc in ns with a token bucket (tbf, which this
// kernel has; netem and fq it has not).
//
// The bucket holds 1 MB, about 9 ms at 900 Mbit/s. tbf refills it only when
// its watchdog timer fires, and tokens beyond the bucket are lost; with a
// 128 KB bucket (1.1 ms) every late wakeup on a busy 2-core machine cost
// rate, and a 2 s download through "900mbit" measured 780-845 Mbit/s (710
// once in CI) against the 860.8 the shaper allows. With 1 MB it measured
// 860.8 and 861.4, and the larger first burst adds at most 4 Mbit/s to a 2 s
// average.
func (tp *topo) shape(t *testing.T, ns *netns.NS, ifc, rate string) {
	t.Helper()
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("needs tc from iproute2 (make test installs it via apt)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := ns.Command(ctx, "tc", "qdisc", "add", "dev", ifc, "root", "tbf",
		"rate", rate, "burst", "1mb", "latency", "20ms").CombinedOutput()
	if err != nil {
		t.Fatalf("tc tbf on %s: %v: %s", ifc, err, out)
	}
}
