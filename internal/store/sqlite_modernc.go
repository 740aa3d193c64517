//go:build !(mips || mipsle || mips64 || mips64le) && !sqlite_ncruces && !monitoronly

package store

import _ "modernc.org/sqlite" // registers the "sqlite" driver

// sqliteDriver is the SQLite driver of this build: modernc.org/sqlite
// (SQLite translated from C to Go), the default, smaller and faster than
// the other one (sqlite_ncruces.go). It has no port to mips.
const sqliteDriver = "sqlite"

// HaveSQLite: this build opens SQLite stores (sqlite_none.go: not the
// monitor-only build).
const HaveSQLite = true
