//go:build monitoronly

package store

import "net/url"

// havePostgres: the monitor-only build has no PostgreSQL driver
// (driver_pgx.go), nor pgx's connection code (0.79 MB of the arm64 executable).
const havePostgres = false

// checkPostgresURL checks only that s is a URL: Open refuses PostgreSQL in
// this build with its own line.
func checkPostgresURL(s string) error {
	_, err := url.Parse(s)
	return err
}

// noPartition: no PostgreSQL, no partitions.
func noPartition(error) bool { return false }
