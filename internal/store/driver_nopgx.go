//go:build monitoronly

package store

// havePostgres: the monitor-only build has no PostgreSQL driver
// (driver_pgx.go).
const havePostgres = false
