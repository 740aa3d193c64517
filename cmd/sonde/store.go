package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/monitor"
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
	cmd.AddCommand(newStoreMigrateCmd())
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
			loc, err := store.ParseURL(url)
			if err != nil {
				return usagef("--store: %s", strings.TrimPrefix(err.Error(), "store: "))
			}
			if timeout <= 0 {
				return usagef("--timeout: want a positive duration, got %s", timeout)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			v, err := store.Migrate(ctx, url)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("%s: no answer within --timeout %s", loc, timeout)
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: schema version %d\n", loc, v)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "store", "", "`URL` of the store: a SQLite path, sqlite:PATH or postgres://…")
	f.DurationVar(&timeout, "timeout", time.Minute, "longest wait for the database (connect and migrate)")
	return cmd
}

// openExistingStore opens a store that must already exist: opening a
// missing SQLite file would create and migrate an empty one, and a reader
// (a report, a replay) must find the store, not make one.
func openExistingStore(ctx context.Context, loc store.Location) (store.Store, error) {
	if loc.Backend == store.SQLite && loc.Path != store.Memory {
		if _, err := os.Stat(loc.Path); err != nil {
			return nil, fmt.Errorf("--store %s: %w", loc, errors.Unwrap(err))
		}
	}
	return store.OpenLocation(ctx, loc, store.Options{})
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
	r.defSince = defSince
	f := cmd.Flags()
	f.StringVar(&r.url, "store", "", "`URL` of the monitor's store: a SQLite path, sqlite:PATH or postgres://… (default: where monitor run writes, /var/lib/sonde/monitor.db as root, else ./sonde-monitor.db)")
	f.StringVar(&r.name, "name", "", "the `MONITOR` (default: the store's only monitor)")
	f.StringVar(&r.since, "since", "", verb+" the last `DURATION` up to now (e.g. 24h, 7d; default "+defSince+" without --from)")
	f.StringVar(&r.from, "from", "", "start of the range: RFC 3339 `TIME` or a date (UTC midnight)")
	f.StringVar(&r.to, "to", "", "end of the range: RFC 3339 `TIME` or a date (default now)")
	f.DurationVar(&r.timeout, "timeout", 10*time.Minute, "longest the "+verb+" may take (reading the store included)")
}

// resolve checks the flags (usage errors) and returns the store's
// location and the range [from, to).
func (r *storeRange) resolve(now time.Time) (store.Location, time.Time, time.Time, error) {
	url := r.url
	if url == "" {
		url = monitor.DefaultStore() // where `monitor run` writes by default
	}
	loc, err := store.ParseURL(url)
	if err != nil {
		return loc, time.Time{}, time.Time{}, usagef("--store: %s", strings.TrimPrefix(err.Error(), "store: "))
	}
	since := r.since
	if since == "" && r.from == "" {
		since = r.defSince
	}
	from, to, err := reportRange(since, r.from, r.to, now)
	if err != nil {
		return loc, from, to, err
	}
	return loc, from, to, checkDuration("--timeout", r.timeout, time.Second, time.Hour)
}

// read opens the existing store at loc and runs fn within the timeout;
// fn's errors are prefixed with the store's location, and what names the
// work in the timeout's message ("the report").
func (r *storeRange) read(ctx context.Context, loc store.Location, what string, fn func(context.Context, store.Store) error) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	st, err := openExistingStore(ctx, loc)
	if err != nil {
		return err
	}
	defer st.Close()
	switch err = fn(ctx, st); {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %s took longer than --timeout %s", loc, what, r.timeout)
	case err != nil:
		return fmt.Errorf("%s: %w", loc, err)
	}
	return nil
}
