package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/alert"
	"github.com/sonde-project/sonde/internal/monitor"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/store"
)

// newMonitorAlertsCmd is `sonde monitor alerts`: for now its replay.
func newMonitorAlertsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alerts",
		Short: "Alert rules: replay them over a monitor's stored history",
		Long: `The daemon evaluates alert rules itself (the "alerts" section of its config
file: outage, reliability, baseline-step, bufferbloat) and delivers each
firing and resolution to its log and an Alertmanager-compatible webhook
(docs/monitor.md, "Alerts"). alerts replay tells what the rules would have
done over the history in a store.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newMonitorAlertsReplayCmd())
	return cmd
}

func newMonitorAlertsReplayCmd() *cobra.Command {
	var (
		sr               storeRange
		cfgFile, jsonOut string
	)
	cmd := &cobra.Command{
		Use:   "replay [--store URL] [--since 7d | --from TIME --to TIME] [--config FILE]",
		Short: "Evaluate alert rules over stored history and print what would have fired when",
		Long: `Read a monitor's probes and events from its store for a time range and
evaluate the alert rules as the daemon does (probes in send order, once a
second; stored baseline steps and loaded episodes at their end), then print
each firing and resolution with its time, and the alerts still firing at
the end. The rules come from the "alerts" section of --config FILE (the
daemon's config file; its "profiles" file names the requirement profiles
a rule may use), else the default rule (an outage of the link of at least
10 s). --since takes a duration up to days (default 7d); --from and --to
RFC 3339 times or dates; a range is at most 366 days.`,
		Example: `  sonde monitor alerts replay --store /var/lib/sonde/monitor.db --since 7d --config /etc/sonde/monitor.json
  sonde monitor alerts replay --store m.db --from 2026-05-16 --to 2026-05-17 --json -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loc, fromT, toT, err := sr.resolve(time.Now())
			if err != nil {
				return err
			}
			if toT.Sub(fromT) > time.Duration(alert.MaxReplayNs) {
				return usagef("a range of %s: at most 366 days", toT.Sub(fromT).Round(time.Hour))
			}
			ac, err := monitor.LoadAlertRules(cfgFile)
			if err != nil {
				return usageErr(err)
			}
			if err := checkOutput("--json", jsonOut); err != nil {
				return err
			}
			var res *alert.ReplayResult
			err = sr.read(cmd.Context(), loc, "the replay", func(ctx context.Context, st store.Store) (err error) {
				res, err = alert.Replay(ctx, st, alert.ReplayRequest{Name: sr.name, FromNs: fromT.UnixNano(), ToNs: toT.UnixNano(), Rules: ac.Rules})
				return err
			})
			if err != nil {
				return err
			}
			return writeReplay(cmd.OutOrStdout(), jsonOut, res)
		},
	}
	f := cmd.Flags()
	sr.register(cmd, "replay", "7d")
	f.StringVar(&cfgFile, "config", "", "the daemon's config `FILE`, whose \"alerts\" rules are replayed (default: an outage of the link ≥ 10 s)")
	f.StringVar(&jsonOut, "json", "", "write the firings and resolutions as JSON to `FILE`, - for stdout (no text then)")
	return cmd
}

// writeReplay prints the changes as text, or as JSON to a file or stdout
// (report.Outputs).
func writeReplay(stdout io.Writer, jsonOut string, res *alert.ReplayResult) error {
	return report.Outputs{JSON: jsonOut}.Write(stdout, os.Stderr, report.Forms{JSON: res,
		Text: func(w io.Writer) error { return report.WriteAlertsReplay(w, res) }})
}
