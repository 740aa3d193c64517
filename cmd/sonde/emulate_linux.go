//go:build linux && !monitoronly

package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/emulator/forward"
	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/report"
)

// emulateFlags are the options of `sonde emulate`.
type emulateFlags struct {
	nsA, nsB       string
	devA, devB     string
	addrA, addrB   string
	mtu            int
	link, up, down string
	at, upAt       []string
	downAt         []string
	seed           uint64
	truth, pcap    string
	icmpFrom       string
	stats          time.Duration
	duration       time.Duration
	spin           time.Duration
	realTime       bool
	cpuIdle        bool
}

func newEmulateCmd() *cobra.Command {
	var f emulateFlags
	cmd := &cobra.Command{
		Use:   "emulate --ns-a NS --ns-b NS [--link SPEC] [--up SPEC] [--down SPEC]",
		Short: "Emulate a link (rate, delay, jitter, loss, queue, AQM, MTU) between two network namespaces",
		Long: `sonde emulate creates one TUN device in each of two existing network
namespaces, addresses them, and forwards packets between them through a
userspace link model: no kernel qdisc (netem, fq_codel…) is needed.

A link specification is a list of settings, for both directions (--link)
or one (--up is A→B, --down is B→A, applied after --link):

  rate=100M           serialisation rate in bit/s: 100M, 100Mbit/s, 1.5G, 544k (off or 0: none)
  delay=10ms          one-way propagation delay
  jitter=2ms dist=normal|uniform|pareto [reorder]
  loss=1%  ge=P/R/LOSSBAD/LOSSGOOD  ber=1e-6  dup=0.1%
  limit=1000p | limit=37500B | limit=300kbit     queue limit
  qdisc=droptail|codel|pie|fq_codel [ecn] [target=5ms interval=100ms]
  mtu=1400            larger packets are dropped; DF ones get ICMP "fragmentation needed"
  duplex=half [hold=5ms|drain] [turnaround=1ms]   both directions share one medium (set on both)

Parameters can change over time: --at 50s:rate=20Mbit --at 100s:rate=100Mbit
(both directions; --up-at and --down-at for one).

Example:
  ip netns add sondeA; ip netns add sondeB
  sonde emulate --ns-a sondeA --ns-b sondeB --link "rate=20Mbit delay=10ms" --truth-out t.gt
  ip netns exec sondeA ping 198.18.1.2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEmulate(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nsA, "ns-a", "", "network namespace of end A (client side) (required)")
	fl.StringVar(&f.nsB, "ns-b", "", "network namespace of end B (server side) (required)")
	fl.StringVar(&f.devA, "dev-a", "", "TUN device name in A (default: unique sonde name)")
	fl.StringVar(&f.devB, "dev-b", "", "TUN device name in B (default: unique sonde name)")
	fl.StringVar(&f.addrA, "addr-a", "198.18.1.1/24", "address of end A (from 198.18.0.0/15)")
	fl.StringVar(&f.addrB, "addr-b", "198.18.1.2/24", "address of end B")
	fl.IntVar(&f.mtu, "dev-mtu", 1500, "MTU of the TUN devices (the link's own mtu= may be smaller)")
	fl.StringVar(&f.link, "link", "", "link specification for both directions")
	fl.StringVar(&f.up, "up", "", "specification for A→B, applied after --link")
	fl.StringVar(&f.down, "down", "", "specification for B→A, applied after --link")
	fl.StringArrayVar(&f.at, "at", nil, "schedule step TIME:SPEC for both directions (repeatable)")
	fl.StringArrayVar(&f.upAt, "up-at", nil, "schedule step for A→B (repeatable)")
	fl.StringArrayVar(&f.downAt, "down-at", nil, "schedule step for B→A (repeatable)")
	fl.Uint64Var(&f.seed, "seed", 0, "random seed (0: random; printed)")
	fl.StringVar(&f.truth, "truth-out", "", "write per-packet ground truth to `FILE` (sonde analyze --truth reads it)")
	fl.StringVar(&f.truth, "truth", "", "")
	_ = fl.MarkDeprecated("truth", "use --truth-out FILE (--truth reads a ground truth, in sonde analyze)")
	fl.StringVar(&f.pcap, "pcap", "", "write a pcapng capture of both ends to this file")
	fl.StringVar(&f.icmpFrom, "icmp-from", "198.18.1.254", "source address of ICMP errors (fragmentation needed)")
	fl.DurationVar(&f.stats, "stats", 0, "print live counters at this interval (0: only at the end)")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (0: until interrupted)")
	fl.DurationVar(&f.spin, "spin", forward.DefaultSpin, "busy-wait before each deadline (0: none)")
	fl.BoolVar(&f.realTime, "realtime", false, "run the forwarding threads under SCHED_FIFO (experimental)")
	fl.BoolVar(&f.cpuIdle, "cpu-idle", false, "let idle CPUs halt (by default they poll while emulating: a halted CPU wakes tens of µs late for a packet)")
	return cmd
}

func runEmulate(ctx context.Context, out io.Writer, f emulateFlags) error {
	e, err := lab.EmulationSettings{Emulation: lab.Emulation{NSA: f.nsA, NSB: f.nsB, DevA: f.devA, DevB: f.devB, MTU: f.mtu,
		Seed: f.seed, TruthPath: f.truth, PcapPath: f.pcap, Stats: f.stats, Duration: f.duration, Spin: f.spin,
		RealTime: f.realTime, AllowCPUIdle: f.cpuIdle}, AddrA: f.addrA, AddrB: f.addrB, ICMPFrom: f.icmpFrom,
		Link: f.link, Up: f.up, Down: f.down, At: f.at, UpAt: f.upAt, DownAt: f.downAt}.Check()
	if err != nil {
		return usageErr(err)
	}
	if err := errors.Join(checkOutput("--truth-out", f.truth), checkOutput("--pcap", f.pcap)); err != nil {
		return err
	}
	return lab.Emulate(ctx, out, e, func(u, d forward.Stats) {
		_ = report.WriteEmulatorStats(out, []report.EmulatorDirection{emuDir("up", u), emuDir("down", d)})
	})
}

// emuDir is a forwarder direction's counters for report.WriteEmulatorStats.
func emuDir(name string, s forward.Stats) report.EmulatorDirection {
	return report.EmulatorDirection{Name: name, Counters: s.Counters, WriteErrors: s.WriteErrors}
}
