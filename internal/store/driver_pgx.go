//go:build !monitoronly

package store

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// havePostgres: this build opens PostgreSQL stores. The monitor-only build
// (tag monitoronly, `make monitor-release`) leaves the driver out to fit
// small boxes; its monitors keep a SQLite store and ship to a fleet store.
const havePostgres = true

// checkPostgresURL checks a postgres:// URL as pgx will read it.
func checkPostgresURL(s string) error {
	_, err := pgconn.ParseConfig(s)
	return err
}

// noPartition tells PostgreSQL's "no partition of relation … found for
// row" (SQLSTATE 23514, which a CHECK violation shares: the text tells).
func noPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514" && strings.Contains(pe.Message, "no partition")
}
