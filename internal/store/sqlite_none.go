//go:build monitoronly

package store

// The monitor-only build (tag monitoronly, `make monitor-release`) links
// no SQLite: its store is a journal (journal.go), which ships to a fleet
// store. SQLite was 3.96 MB of the executable's code and 2.7 MB of the
// daemon's resident memory (docs/monitor.md, "Memory").

// sqliteDriver: none in this build; ParseURL refuses SQLite locations.
const sqliteDriver = ""

// HaveSQLite: this build opens no SQLite store.
const HaveSQLite = false
