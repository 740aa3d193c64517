//go:build (mips || mipsle || mips64 || mips64le || sqlite_ncruces) && !monitoronly

package store

import _ "github.com/ncruces/go-sqlite3/driver" // registers the "sqlite3" driver

// sqliteDriver is the SQLite driver of this build:
// github.com/ncruces/go-sqlite3 (SQLite compiled to WebAssembly and
// translated to Go by wasm2go), which builds wherever Go does, MIPS routers
// (GOMIPS=softfloat) among them, where modernc.org/sqlite has no port. The
// tag sqlite_ncruces selects it elsewhere, so that the store's tests run
// on both drivers (`go test -tags sqlite_ncruces ./internal/store/`). It
// reads the same DSN (sqliteDSN) and runs the same migrations.
const sqliteDriver = "sqlite3"

// HaveSQLite: this build opens SQLite stores.
const HaveSQLite = true
