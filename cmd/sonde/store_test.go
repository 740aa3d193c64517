package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/sonde-project/sonde/internal/store"
)

// TestStoreMigrate: migrate creates and reports the schema, again is a
// no-op, a bad URL is a usage error, and a database from a newer sonde is
// refused with one line and exit 1, left as it was.
func TestStoreMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	for range 2 {
		out, errs, code := run(t, "store", "migrate", "--store", path)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("schema version %d", store.SchemaVersion())) {
			t.Fatalf("migrate: exit %d, out %q, err %q", code, out, errs)
		}
	}
	for _, args := range [][]string{{"store", "migrate"}, {"store", "migrate", "--store", "mysql://h/d"},
		{"store", "migrate", "--store", "x.db", "--timeout", "0s"}, {"serve", "--store", "ftp://x"}, {"serve", "--store", "a.db", "--db", "b.db"}} {
		if _, errs, code := run(t, args...); code != exitUsage || strings.Count(errs, "\n") > 1 {
			t.Errorf("%v: exit %d, %q; want a usage error, one line", args, code, errs)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, errs, code := run(t, "store", "migrate", "--store", path)
	if code != exitFailure || !strings.Contains(errs, "schema version 9999") || strings.Contains(errs, "\n") {
		t.Errorf("newer schema: exit %d, %q", code, errs)
	}
}
