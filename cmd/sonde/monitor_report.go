package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/query"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// maxReportRange is the longest range a report covers.
const maxReportRange = time.Duration(query.MaxRangeNs)

// newMonitorReportCmd is `sonde monitor report`; the integrator registers
// it under `sonde monitor`.
func newMonitorReportCmd() *cobra.Command {
	var (
		sr                  storeRange
		thresholds, profile string
		up, down            string
		out                 report.Outputs
	)
	cmd := &cobra.Command{
		Use:   "report [--store URL] [--name MONITOR] [--since 24h | --from TIME --to TIME]",
		Short: "Report a monitor's latency reliability over a time range",
		Long: `Read a monitor's samples from its store for a time range and print seed
001's tables per stream: probes sent, lost and late, RTT (and one-way
delay) statistics, R(L) for each latency requirement with its 95 %
interval, the worst sliding windows (1 min, 10 min, 1 h), R(L) per load
state, requirement profile verdicts, a table per day, and the events
(outages, baseline steps, loaded episodes with grade, inferred buffer and
queue class; restarts). Where retention has removed the raw samples the
report reads per-minute rollups and says so (docs/monitor.md, "Reports").

--since takes a duration with units up to days (7d, 36h, 90m); --from and
--to take RFC 3339 times (2026-05-16T00:00:00Z) or dates (2026-05-16,
midnight UTC); --to defaults to now. A range is at most 10 years.
--threshold lists the requirements L (e.g. 30ms,100ms,200ms,1.2s);
--profiles reads requirement profiles from a JSON file (default: seed
001's smart-grid table).
Loaded episodes get an inferred buffer (B = C × added delay), BDP and
oversizing from the link capacity the daemon recorded while it ran
(configured with --up-link-rate/--down-link-rate or learnt from
--interface); --up-link-rate and --down-link-rate here override it over
the whole range (e.g. --up-link-rate 700k).`,
		Example: `  sonde monitor report --store /var/lib/sonde/monitor.db --since 24h
  sonde monitor report --store m.db --from 2026-05-16 --to 2026-05-17 --threshold 30ms,100ms,200ms,500ms,1.2s,1.6s
  sonde monitor report --store m.db --since 7d --html week.html --json week.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loc, fromT, toT, err := sr.resolve(time.Now())
			if err != nil {
				return err
			}
			req := query.Request{Name: sr.name, FromNs: fromT.UnixNano(), ToNs: toT.UnixNano()}
			if err := (query.Settings{Thresholds: thresholds, ProfilesFile: profile, Up: up, Down: down}).Apply(&req); err != nil {
				return usageErr(err)
			}
			if err := usageErr(out.Check()); err != nil {
				return err
			}
			if err := checkMonitorHTML(out.HTML); err != nil {
				return err
			}
			var rep *model.MonitorReport
			err = sr.read(cmd.Context(), loc, "the report", func(ctx context.Context, st store.Store) (err error) {
				rep, err = query.Run(ctx, st, req)
				if errors.Is(err, query.ErrNoData) {
					// The reason reads better without the sentinel's words.
					return errors.New(strings.TrimSuffix(err.Error(), ": "+query.ErrNoData.Error()))
				}
				return err
			})
			if err != nil {
				return err
			}
			return out.Write(cmd.OutOrStdout(), cmd.ErrOrStderr(), report.Forms{JSON: rep,
				HTML:   func(w io.Writer) error { return writeMonitorHTML(w, rep) },
				CSV:    func(w io.Writer) error { return report.WriteMonitorCSV(w, rep) },
				Series: func(w io.Writer) error { return report.WriteMonitorSeriesCSV(w, rep) },
				Text:   func(w io.Writer) error { return report.WriteMonitorText(w, rep) }})
		},
	}
	f := cmd.Flags()
	sr.register(cmd, "report", "24h")
	f.StringVar(&thresholds, "threshold", "", "latency requirements L of R(L), a comma-separated `LIST` of durations (default 50ms,100ms,200ms,500ms,1s,5s)")
	f.StringVar(&profile, "profiles", "", "requirement profiles from a JSON `FILE` (default: seed 001's smart-grid table; the file monitor run --profiles takes)")
	deprecatedAlias(f, "profile", "profiles")
	f.StringVar(&up, "up-link-rate", "", "uplink capacity `RATE` in bit/s for the inferred buffers, e.g. 700k (default: what the monitor recorded)")
	f.StringVar(&down, "down-link-rate", "", "downlink capacity `RATE` in bit/s for the inferred buffers, e.g. 8M (default: what the monitor recorded)")
	deprecatedAlias(f, "up", "up-link-rate")
	deprecatedAlias(f, "down", "down-link-rate")
	f.StringVar(&out.Series, "csv-series", "", "write the delay and loss time series as CSV to `FILE`, - for stdout")
	registerOutputs(cmd, &out, "the report (schema sonde.monitor/v1)", false)
	f.StringVar(&out.CSV, "csv", "", "write R(L) per stream and threshold as CSV to `FILE`, - for stdout (no text summary then)")
	return cmd
}

// reportRate reads an optional capacity flag (query.ParseCapacity): a
// usage error.
func reportRate(flag, s string) (float64, error) {
	v, err := query.ParseCapacity(flag, s)
	return v, usageErr(err)
}

// reportRange resolves --since, --from and --to against now into a range
// of at most maxReportRange with from < to (units.Range: the one time-range
// grammar); --since is a day without --since or --from. Every error is a
// usage error.
func reportRange(since, from, to string, now time.Time) (time.Time, time.Time, error) {
	start, end, err := units.Range{Since: since, From: from, To: to}.Resolve(now, units.Day, maxReportRange)
	if err != nil {
		return start, end, usageErr(err)
	}
	return start, end, nil
}
