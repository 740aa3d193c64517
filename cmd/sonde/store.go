package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/monitor"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/store"
)

func newStoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Manage a sonde store (SQLite file or PostgreSQL database)",
		Long: `Manage the store where sonde keeps past results and monitor samples
(docs/store.md): a SQLite file (the default of serve and monitor) or a
PostgreSQL database shared by several servers and monitors.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newStoreMigrateCmd(), newStoreMonitorCmd())
	return cmd
}

// storeFlags are the flags every `store monitor` command takes.
type storeFlags struct {
	url     string
	timeout time.Duration
}

func (sf *storeFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&sf.url, "store", "", "`URL` of the fleet store: postgres://… (or a SQLite path)")
	f.DurationVar(&sf.timeout, "deadline", time.Minute, "longest wait for the database")
	deprecatedAlias(f, "timeout", "deadline")
}

// open checks the flags (usage errors), then opens and migrates the store
// and runs fn within the deadline (store.Within).
func (sf *storeFlags) open(ctx context.Context, fn func(context.Context, store.Store) error) error {
	if sf.url == "" {
		return usagef("--store: give the fleet store's URL (postgres://…)")
	}
	loc, err := parseStore(sf.url)
	if err != nil {
		return err
	}
	if err := checkDuration("--deadline", sf.timeout, time.Second, time.Hour); err != nil {
		return err
	}
	return store.Within(ctx, loc, false, sf.timeout, "the command", fn)
}

// parseStore reads a --store URL: a usage error.
func parseStore(url string) (store.Location, error) {
	loc, err := store.ParseFlag("--store", url)
	return loc, usageErr(err)
}

// monitorName checks a NAME argument (usage error) by the store's rule.
func monitorName(name string) error {
	if err := store.CheckMonitorName(name); err != nil {
		return usagef("NAME: %s", strings.TrimPrefix(err.Error(), store.ErrBadInput.Error()+": "))
	}
	return nil
}

func newStoreMonitorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "monitor",
		Short: "Enroll, revoke and list the monitors that ship to a fleet store",
		Long: `Manage the monitors of a fleet store (docs/fleet.md, "Shipping"): a
monitor ships its rows (sonde monitor run --ship URL) only once enrolled
here, with the token add prints, and not after it is revoked.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newStoreMonitorAddCmd(), newStoreMonitorRevokeCmd(), newStoreMonitorListCmd())
	return cmd
}

func newStoreMonitorAddCmd() *cobra.Command {
	var (
		sf      storeFlags
		labels  []string
		noToken bool
		replace bool
	)
	cmd := &cobra.Command{
		Use:   "add NAME --store URL [--label key=value]…",
		Short: "Enroll a monitor and print its token (once)",
		Long: `Enroll a monitor under NAME with its labels (ISP, access type, region …,
which fleet reports group by) and print its token: the store keeps only
the token's hash, so this is the only time it is shown. The monitor runs
with --ship URL --ship-token TOKEN; the first instance that ships under
NAME is bound to it and another one is refused. --replace enrolls a known
NAME again: a new token, not revoked, bound to no instance (the monitor
moved to a new machine).`,
		Example: `  sonde store monitor add home-042 --store postgres://sonde@db/fleet --label isp=example --label access=fttp`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := monitorName(args[0]); err != nil {
				return err
			}
			l, err := store.ParseLabels(labels)
			if err != nil {
				return usagef("--label: %s", err)
			}
			return sf.open(cmd.Context(), func(ctx context.Context, st store.Store) error {
				token, err := st.AddMonitor(ctx, store.Identity{Name: args[0], Labels: l}, noToken, replace)
				if err != nil {
					return err
				}
				if noToken {
					fmt.Fprintf(cmd.OutOrStdout(), "monitor %s enrolled without a token\n", args[0])
					return nil
				}
				fmt.Fprintln(cmd.OutOrStdout(), token)
				fmt.Fprintf(cmd.ErrOrStderr(), "monitor %s enrolled: its token is above, shown only now (run it with --ship-token)\n", args[0])
				return nil
			})
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&labels, "label", nil, "a `key=value` label of the monitor (repeat)")
	f.BoolVar(&noToken, "no-token", false, "enroll without a token (the name and instance binding alone identify it)")
	f.BoolVar(&replace, "replace", false, "enroll a known NAME again: new token, not revoked, no instance bound")
	return cmd
}

func newStoreMonitorRevokeCmd() *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "revoke NAME --store URL",
		Short: "Refuse a monitor's shipments from now on",
		Long: `Revoke a monitor: the store refuses its shipments (the monitor logs one
line, keeps its rows and tries again later). Its rows already stored stay.
add --replace enrolls the name again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := monitorName(args[0]); err != nil {
				return err
			}
			return sf.open(cmd.Context(), func(ctx context.Context, st store.Store) error {
				if err := st.RevokeMonitor(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "monitor %s revoked\n", args[0])
				return nil
			})
		},
	}
	sf.register(cmd)
	return cmd
}

func newStoreMonitorListCmd() *cobra.Command {
	var (
		sf      storeFlags
		jsonOut string
	)
	cmd := &cobra.Command{
		Use:   "list --store URL",
		Short: "List the store's monitors: labels, token, revoked, bound instance",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput("--json", jsonOut); err != nil {
				return err
			}
			return sf.open(cmd.Context(), func(ctx context.Context, st store.Store) error {
				ms, err := st.FleetMonitors(ctx)
				if err != nil {
					return err
				}
				if jsonOut != "" {
					return report.WriteOutput("--json", jsonOut, cmd.OutOrStdout(), func(w io.Writer) error { return report.WriteJSON(w, ms) })
				}
				return report.WriteFleetMonitors(cmd.OutOrStdout(), ms)
			})
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&jsonOut, "json", "", "write the list as JSON to `FILE`, - for stdout (no table then)")
	return cmd
}

func newStoreMigrateCmd() *cobra.Command {
	var (
		url     string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "migrate --store URL",
		Short: "Create or upgrade a store's schema to this sonde's version",
		Long: `Create or upgrade a store's schema to the newest version this sonde
knows, and print the version. serve applies the same migrations when it
opens a store; this command does it ahead of time, e.g. once for a
PostgreSQL database before many servers and monitors start against it.
A database from a newer sonde is refused and left as it is.

URL: a SQLite path (its directory must exist), sqlite:PATH, or a
postgres:// (postgresql://) URL.`,
		Example: `  sonde store migrate --store /var/lib/sonde/results.db
  sonde store migrate --store 'postgres://sonde@db.example/sonde?sslmode=require'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				return usagef("--store: give the store's URL (a SQLite path or postgres://…)")
			}
			loc, err := parseStore(url)
			if err != nil {
				return err
			}
			if timeout <= 0 {
				return usagef("--deadline: want a positive duration, got %s", timeout)
			}
			v, err := store.MigrateWithin(cmd.Context(), loc, url, timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: schema version %d\n", loc, v)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "store", "", "`URL` of the store: a SQLite path, sqlite:PATH or postgres://…")
	f.DurationVar(&timeout, "deadline", time.Minute, "longest wait for the database (connect and migrate)")
	deprecatedAlias(f, "timeout", "deadline")
	return cmd
}

// storeRange is what a command reading a monitor's history takes: the
// store, the monitor, a time range and how long reading may take.
// `monitor report` and `monitor alerts replay` share it so their flags
// read and behave alike.
type storeRange struct {
	url, name, since, from, to string
	defSince                   string // --since when neither --since nor --from is given
	timeout                    time.Duration
}

// register adds the flags; verb says what the command does with the range
// ("report", "replay").
func (r *storeRange) register(cmd *cobra.Command, verb, defSince string) {
	f := cmd.Flags()
	f.StringVar(&r.url, "store", "", "`URL` of the monitor's store: a SQLite path, sqlite:PATH, journal:DIR or postgres://… (default: where monitor run writes, /var/lib/sonde/monitor.db as root, else ./sonde-monitor.db; the monitor build: journal:/var/lib/sonde/journal, else journal:sonde-monitor.journal)")
	f.StringVar(&r.name, "name", "", "the `MONITOR` (default: the store's only monitor)")
	r.registerRange(cmd, verb, defSince)
}

// registerRange adds the range's flags and --deadline (fleet report has
// its own --store and no --name).
func (r *storeRange) registerRange(cmd *cobra.Command, verb, defSince string) {
	r.defSince = defSince
	f := cmd.Flags()
	f.StringVar(&r.since, "since", "", verb+" the last `DURATION` up to now (e.g. 24h, 7d; default "+defSince+" without --from)")
	f.StringVar(&r.from, "from", "", "start of the range: RFC 3339 `TIME` or a date (UTC midnight)")
	f.StringVar(&r.to, "to", "", "end of the range: RFC 3339 `TIME` or a date (default now)")
	f.DurationVar(&r.timeout, "deadline", 10*time.Minute, "longest the "+verb+" may take (reading the store included)")
	deprecatedAlias(f, "timeout", "deadline")
}

// resolve checks the flags (usage errors) and returns the store's
// location and the range [from, to).
func (r *storeRange) resolve(now time.Time) (store.Location, time.Time, time.Time, error) {
	url := r.url
	if url == "" {
		url = monitor.DefaultStore() // where `monitor run` writes by default
	}
	loc, err := parseStore(url)
	if err != nil {
		return loc, time.Time{}, time.Time{}, err
	}
	since := r.since
	if since == "" && r.from == "" {
		since = r.defSince
	}
	from, to, err := reportRange(since, r.from, r.to, now)
	if err != nil {
		return loc, from, to, err
	}
	return loc, from, to, checkDuration("--deadline", r.timeout, time.Second, time.Hour)
}

// read opens the existing store at loc and runs fn within the timeout
// (store.Within); what names the work in the timeout's message ("the
// report").
func (r *storeRange) read(ctx context.Context, loc store.Location, what string, fn func(context.Context, store.Store) error) error {
	return store.Within(ctx, loc, true, r.timeout, what, fn)
}
