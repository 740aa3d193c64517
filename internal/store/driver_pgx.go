//go:build !monitoronly

package store

import _ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

// havePostgres: this build opens PostgreSQL stores. The monitor-only build
// (tag monitoronly, `make monitor-release`) leaves the driver out to fit
// small boxes; its monitors keep a SQLite store and ship to a fleet store.
const havePostgres = true
