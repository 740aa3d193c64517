//go:build !monitoronly

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/fleet"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/web"
)

// newFleetCmd is `sonde fleet`: reports over a store many monitors share.
func newFleetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Reports over a store shared by many monitors",
		Long: `Commands over a store many monitors write to (PostgreSQL, or SQLite for a
few): the fleet report, and the job that keeps its hourly aggregate
(docs/fleet.md).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newFleetReportCmd(), newFleetAggregateCmd(), newFleetServeCmd())
	return cmd
}

func newFleetReportCmd() *cobra.Command {
	var (
		sr       storeRange
		labels   []string
		profile  string
		upMin    int
		upShare  float64
		out      report.Outputs
		storeURL string
	)
	cmd := &cobra.Command{
		Use:   "report --store URL [--since 7d | --from TIME --to TIME] [--label KEY=VALUE]…",
		Short: "Report every monitor of a shared store against requirement profiles",
		Long: `Read the monitors of a shared store over a range and print, per monitor and
per label group, R(L) against each requirement profile with its verdict
(PASS, FAIL, INSUFFICIENT: the 95 % interval decides), the worst aligned
hour, the outages the monitors stored and the bufferbloat grades of their
loaded episodes. Outages that many monitors saw at once (--upstream-min
monitors, or --upstream-share of a label group) are grouped as one
upstream event, and each monitor's outages are told apart: its line's or
upstream's.

--label KEY=VALUE chooses monitors (repeat it: different keys must all
match, one key given twice matches either value). --since takes a duration
up to days (7d, 36h); --from and --to RFC 3339 times or dates; --to
defaults to now. --profiles reads requirement profiles from a JSON file
(default: seed 001's smart-grid table). The report reads the store's
hourly aggregate where ` + "`sonde fleet aggregate`" + ` has merged it and minute
rollups elsewhere, so it is exact either way, only faster with it.`,
		Example: `  sonde fleet report --store postgres://sonde@db/fleet --since 7d
  sonde fleet report --store postgres://sonde@db/fleet --since 30d --label isp=acme --html acme.html
  sonde fleet report --store fleet.db --from 2026-05-01 --to 2026-06-01 --json may.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := requiredFleetStore(storeURL); err != nil {
				return err
			}
			sr.url = storeURL
			loc, fromT, toT, err := sr.resolve(time.Now())
			if err != nil {
				return err
			}
			req, err := fleet.Settings{Labels: labels, ProfilesFile: profile, UpstreamMin: upMin, UpstreamShare: upShare,
				MinGiven: cmd.Flags().Changed("upstream-min"), ShareGiven: cmd.Flags().Changed("upstream-share")}.Request(fromT.UnixNano(), toT.UnixNano())
			if err != nil {
				return usageErr(err)
			}
			if err := usageErr(out.Check()); err != nil {
				return err
			}
			var rep *model.FleetReport
			err = sr.read(cmd.Context(), loc, "the report", func(ctx context.Context, st store.Store) (err error) {
				rep, err = fleet.Report(ctx, st, req)
				return err
			})
			if err != nil {
				return err
			}
			return writeFleetReport(cmd.OutOrStdout(), cmd.ErrOrStderr(), &out, rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&storeURL, "store", "", "`URL` of the fleet's store: postgres://… or a SQLite path (required)")
	sr.registerRange(cmd, "report", "7d")
	f.StringArrayVar(&labels, "label", nil, "only monitors with label `KEY=VALUE` (repeatable; at most 32)")
	f.StringVar(&profile, "profiles", "", "requirement profiles from a JSON `FILE` (default: seed 001's smart-grid table; the file monitor run --profiles takes)")
	deprecatedAlias(f, "profile", "profiles")
	f.IntVar(&upMin, "upstream-min", fleet.DefaultUpstreamMin, "an outage `N` monitors see at once is one upstream event (2 to 100000)")
	f.Float64Var(&upShare, "upstream-share", fleet.DefaultUpstreamShare, "…or one a `FRACTION` of a label group's monitors (of two or more) see at once, (0, 1]")
	registerOutputs(cmd, &out, "the report (schema sonde.fleet/v1)", false)
	f.StringVar(&out.CSV, "csv", "", "write one row per monitor and profile as CSV to `FILE`, - for stdout (no text summary then)")
	return cmd
}

// writeFleetReport writes every output asked for; the text summary goes
// where outputs say, and to stderr if a file output failed.
func writeFleetReport(stdout, stderr io.Writer, out *report.Outputs, rep *model.FleetReport) error {
	f := report.FormsOf(rep)
	f.CSV = func(w io.Writer) error { return report.WriteFleetCSV(w, rep) }
	return out.Write(stdout, stderr, f)
}

func newFleetAggregateCmd() *cobra.Command {
	var (
		storeURL string
		maxHours int
		timeout  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "aggregate --store URL",
		Short: "Merge changed hours of minute rollups into the fleet's hourly aggregate",
		Long: `Merge every stream-hour whose minute rollups changed since it was last merged
into the store's hourly aggregate, which fleet report reads instead of 60
minute rollups (docs/fleet.md). Run it from a timer (e.g. every 10
minutes); a run merges what is marked and stops. Without it reports stay
exact, only slower.`,
		Example: `  sonde fleet aggregate --store postgres://sonde@db/fleet`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loc, err := requiredFleetStore(storeURL)
			if err != nil {
				return err
			}
			if maxHours < 0 || maxHours > 100_000_000 {
				return usagef("--max-hours %d: want 0 (all) to 100000000", maxHours)
			}
			if err := checkDuration("--deadline", timeout, time.Second, 24*time.Hour); err != nil {
				return err
			}
			start := time.Now()
			n, err := fleet.AggregateWithin(cmd.Context(), loc, maxHours, timeout)
			fmt.Fprintf(cmd.OutOrStdout(), "merged %d stream-hours in %s\n", n, time.Since(start).Round(time.Millisecond))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&storeURL, "store", "", "`URL` of the fleet's store: postgres://… or a SQLite path (required)")
	f.IntVar(&maxHours, "max-hours", 0, "merge at most `N` stream-hours (0: all that are marked)")
	f.DurationVar(&timeout, "deadline", time.Hour, "longest the run may take")
	deprecatedAlias(f, "timeout", "deadline")
	return cmd
}

func newFleetServeCmd() *cobra.Command {
	var storeURL, listen string
	cmd := &cobra.Command{
		Use:   "serve --store URL [--listen ADDR]",
		Short: "Serve the fleet view: monitors, verdicts and upstream events in a browser",
		Long: `Serve the fleet view of a shared store on --listen: a page listing the
monitors with their verdict per requirement profile and whether their
outages were their line's or upstream's, and the upstream events, for the
last 24 h, 7 d or 30 d and a label filter (the report of fleet report, as
JSON at /fleet.json?since=7d&label=isp%3Dacme). One report runs at a
time, at most 2 minutes; there is no login: listen on loopback or behind
a proxy that authenticates (docs/fleet.md, "Fleet view").`,
		Example: `  sonde fleet serve --store postgres://sonde@db/fleet --listen 127.0.0.1:9102`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loc, err := requiredFleetStore(storeURL)
			if err != nil {
				return err
			}
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return usagef("--listen %q: want HOST:PORT (e.g. 127.0.0.1:9102)", listen)
			}
			return fleet.ServeStore(cmd.Context(), loc, listen, cmd.ErrOrStderr(), web.Assets())
		},
	}
	f := cmd.Flags()
	f.StringVar(&storeURL, "store", "", "`URL` of the fleet's store: postgres://… or a SQLite path (required)")
	f.StringVar(&listen, "listen", "127.0.0.1:9102", "`ADDR` to serve the fleet view on")
	return cmd
}

// requiredFleetStore reads the fleet commands' --store, which they require.
func requiredFleetStore(url string) (store.Location, error) {
	if url == "" {
		return store.Location{}, usagef("--store: give the fleet's store (postgres://… or a SQLite path)")
	}
	return parseStore(url)
}
