package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
