package main

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/monitor"
	"github.com/sonde-project/sonde/internal/report"
)

func newMonitorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "monitor",
		Short: "Long-term monitoring of a path: latency reliability R(L) against requirements",
		Long: `sonde monitor probes one or more targets continuously (STAMP to a sonde
server or any RFC 8762 reflector, optionally ICMP and TCP connect), labels
each probe with the access link's load state, and keeps every probe,
per-minute rollups and events (outages, baseline steps, loaded episodes)
in a store (docs/monitor.md).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newMonitorRunCmd(), newMonitorStatusCmd(), newMonitorReportCmd(), newMonitorAlertsCmd())
	return cmd
}

func newMonitorRunCmd() *cobra.Command {
	var (
		cfg      monitor.Config
		cfgFile  string
		timeout  time.Duration
		interval time.Duration
		keepRaw  string
		keepRoll string
		labels   []string
		memLimit string
		pprofAt  string
	)
	cmd := &cobra.Command{
		Use:   "run --target SERVER [--target …]",
		Short: "Run the monitoring daemon",
		Long: `Run the monitoring daemon until SIGINT or SIGTERM. Each target is a sonde
server (host:port or URL: probed through its monitor sessions) or
stamp://host[:port] (any RFC 8762 / TWAMP-Light reflector); --icmp and
--tcp PORT add probe kinds to the same hosts, --dscp one stream per class.
An unreachable target is not an error: probing goes on and records the
loss. A bad setting exits 2 before anything is written; a failure at
start (the store unreachable or of a newer schema, a sonde server that
cannot be reached) exits 1. The store defaults to /var/lib/sonde/monitor.db as root, else
./sonde-monitor.db; in the monitor build (no SQLite) to the journal
journal:/var/lib/sonde/journal as root, else journal:sonde-monitor.journal;
a journal's byte budgets are its URL's parameters, journal:DIR?raw=16MiB&long=32MiB
(the defaults: raw probes and counters, long-lived rollups and events).
--config FILE takes the same settings as JSON
(contrib/monitor.sample.json); flags override it.`,
		Example: `  sonde monitor run --target sonde.example.net:8080 --interface eth0 --up-link-rate 20M --down-link-rate 100M
  sonde monitor run --target stamp://192.0.2.1 --target stamp://198.51.100.7:862 --icmp --dscp ef,be
  sonde monitor run --config /etc/sonde/monitor.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			// A renamed flag's old spelling (deprecatedAlias) sets the
			// same value: given either way, it overrides the file.
			oldName := map[string]string{"up-link-rate": "up", "down-link-rate": "down"}
			changed := func(name string) bool { return f.Changed(name) || oldName[name] != "" && f.Changed(oldName[name]) }
			plan, err := monitor.Flags{Config: cfg, File: cfgFile, Timeout: timeout, ProbeInterval: interval,
				KeepRaw: keepRaw, KeepRollup: keepRoll, Labels: labels, Given: changed}.Plan(cmd.ErrOrStderr())
			if err != nil {
				return usageErr(err)
			}
			lim, err := monitor.ParseMemoryLimit(memLimit)
			if err != nil {
				return usageErr(err)
			}
			if pprofAt != "" && !havePprof {
				return usagef("--debug-pprof: the monitor-only build has no profiler: profile with the full sonde")
			}
			if pprofAt != "" {
				if _, _, err := net.SplitHostPort(pprofAt); err != nil {
					return usagef("--debug-pprof %q: want host:port", pprofAt)
				}
			}
			return runMonitor(cmd.Context(), cmd.ErrOrStderr(), plan, runtimeOpts{memLimit: lim, pprof: pprofAt})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfgFile, "config", "", "read the settings from a JSON `FILE` (flags override it)")
	f.StringArrayVar(&cfg.Targets, "target", nil, "a sonde server (host:port or URL) or stamp://host[:port] reflector to probe (repeat, up to 8)")
	f.DurationVar(&interval, "probe-interval", 100*time.Millisecond, "time between a stream's probes, 10ms to 1s (100 to 1 probes/s)")
	f.Float64Var(&cfg.Rate, "rate", 0, "probes per second per stream")
	_ = f.MarkDeprecated("rate", "use --probe-interval instead (an interval: --rate 10 is --probe-interval 100ms; --rate is a bit rate in sonde mbm)")
	f.DurationVar(&timeout, "timeout", 2*time.Second, "a probe unanswered after this is lost (a later reply is kept as late)")
	f.BoolVar(&cfg.ICMP, "icmp", false, "also probe each target's host with ICMP echo (needs CAP_NET_RAW or ping_group_range)")
	f.IntVar(&cfg.TCPPort, "tcp", 0, "also probe each target's host with TCP connects to `PORT`")
	f.StringSliceVar(&cfg.DSCP, "dscp", nil, "DSCP classes probed side by side, e.g. ef,be (default be)")
	f.StringVar(&cfg.Interface, "interface", "", "access interface `IF` whose counters label each probe's load state")
	f.StringVar(&cfg.Counters, "counters", "", "or the access link's counters on another box (`SPEC`): snmp://[COMMUNITY@]HOST[:PORT]/IFACE "+
		"(v2c; IFACE an ifName, ifDescr or ifIndex), snmp://USER@HOST/IFACE?version=3&auth=SHA&auth-pass=P&priv=AES&priv-pass=Q, "+
		"or node-exporter://HOST[:9100][/metrics]?device=IFACE; options interval= (between reads, 1s; 100ms-10s), timeout= (per read), "+
		"side=wan|lan (lan: the interface's transmit counter is the downlink). Secrets belong in the --config file")
	f.StringVar(&cfg.Up, "up-link-rate", "", "uplink capacity `RATE` of --interface or --counters in bit/s, e.g. 20M (default: learnt)")
	f.StringVar(&cfg.Down, "down-link-rate", "", "downlink capacity `RATE` of --interface or --counters in bit/s, e.g. 100M (default: learnt)")
	deprecatedAlias(f, "up", "up-link-rate")
	deprecatedAlias(f, "down", "down-link-rate")
	f.StringVar(&cfg.Store, "store", "", "`URL` of the store: a SQLite path, journal:DIR or postgres://… (default /var/lib/sonde/monitor.db as root, else ./sonde-monitor.db; the monitor build: journal:/var/lib/sonde/journal, else journal:sonde-monitor.journal)")
	f.StringVar(&keepRaw, "keep-raw", "30d", "keep raw probes and counters this long (forever: never delete)")
	f.StringVar(&keepRoll, "keep-rollups", "5y", "keep per-minute rollups this long (events are kept forever)")
	f.StringVar(&cfg.Listen, "listen", monitor.DefaultListen, "`ADDR` of /metrics, /status and /healthz (off: none)")
	f.StringVar(&cfg.Name, "name", "", "the monitor's name in the store (default the host name)")
	f.StringArrayVar(&labels, "label", nil, "a `key=value` label of the monitor (repeat), e.g. isp=example")
	f.StringVar(&cfg.Profiles, "profiles", "", "requirement profile `FILE` (JSON; default the smart-grid table)")
	f.StringVar(&cfg.Token, "token", "", "bearer token for private sonde servers")
	f.StringVar(&cfg.Ship, "ship", "", "also ship rollups, events and restarts to the fleet store at `URL` (postgres://…; docs/fleet.md)")
	f.StringVar(&cfg.ShipToken, "ship-token", "", "the monitor's `TOKEN` in the fleet store (sonde store monitor add prints it)")
	f.BoolVar(&cfg.ShipRaw, "ship-raw", false, "with --ship, also ship raw probe samples and interface counters")
	f.StringVar(&memLimit, "memory-limit", "48MiB", "soft limit `SIZE` of the Go runtime's memory (debug.SetMemoryLimit), a backstop: the GC works harder near it (off: none; GOMEMLIMIT in the environment wins)")
	f.StringVar(&pprofAt, "debug-pprof", "", "serve net/http/pprof on `ADDR` (host:port) for profiling; off by default, never expose it")
	return cmd
}

// runMonitor runs the daemon (monitor.Run) until ctx ends.
func runMonitor(ctx context.Context, logw io.Writer, plan *monitor.Plan, ro runtimeOpts) error {
	stop, err := ro.apply(logw)
	if err != nil {
		return err
	}
	defer stop()
	err = monitor.Run(ctx, plan, logw, version)
	if ce := (*monitor.ConfigError)(nil); errors.As(err, &ce) {
		return usageErr(err)
	}
	return err
}

func newMonitorStatusCmd() *cobra.Command {
	var (
		listen string
		out    report.Outputs
	)
	cmd := &cobra.Command{
		Use:   "status [--listen ADDR]",
		Short: "Print a running monitor's status (its /status endpoint)",
		Long: `Print the status of the monitor daemon serving at --listen: each stream's
counters, last RTT and loss over the last minute, the load state, the
store's health and the last events. Exit status 1 when it does not answer.`,
		Example: `  sonde monitor status
  sonde monitor status --listen 127.0.0.1:9851 --json -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput("--json", out.JSON); err != nil {
				return err
			}
			return monitorStatus(cmd.Context(), cmd.OutOrStdout(), listen, out.JSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", monitor.DefaultListen, "`ADDR` the daemon serves on")
	f.StringVar(&out.JSON, "json", "", "write the status as JSON to `FILE`, - for stdout (no text then)")
	return cmd
}

func monitorStatus(ctx context.Context, stdout io.Writer, listen, jsonOut string) error {
	body, st, err := monitor.FetchStatus(ctx, listen)
	if ce := (*monitor.ConfigError)(nil); errors.As(err, &ce) {
		return usageErr(err)
	}
	if err != nil {
		return err
	}
	if jsonOut != "" {
		return report.WriteOutput("--json", jsonOut, stdout, func(w io.Writer) error { _, err := w.Write(body); return err })
	}
	return report.WriteMonitorStatus(stdout, st)
}
