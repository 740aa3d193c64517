package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
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
		{"store", "migrate", "--store", "x.db", "--deadline", "0s"}, {"serve", "--store", "ftp://x"}, {"serve", "--store", "a.db", "--db", "b.db"}} {
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

// TestStoreMonitor: add prints a token once, a second add is refused,
// list shows the monitor, revoke marks it; bad names and labels are
// usage errors of one line.
func TestStoreMonitor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet.db")
	out, errs, code := run(t, "store", "monitor", "add", "home-1", "--store", path, "--label", "isp=example", "--label", "access=fttp")
	if code != 0 || !strings.HasPrefix(out, "sonde_") || strings.Count(out, "\n") != 1 || !strings.Contains(errs, "shown only now") {
		t.Fatalf("add: exit %d, out %q, err %q", code, out, errs)
	}
	if _, errs, code := run(t, "store", "monitor", "add", "home-1", "--store", path); code != exitFailure || !strings.Contains(errs, "already enrolled") {
		t.Errorf("second add: exit %d, %q", code, errs)
	}
	if out, _, code := run(t, "store", "monitor", "revoke", "home-1", "--store", path); code != 0 || !strings.Contains(out, "revoked") {
		t.Errorf("revoke: exit %d, %q", code, out)
	}
	out, _, code = run(t, "store", "monitor", "list", "--store", path)
	if code != 0 || !strings.Contains(out, "home-1") || !strings.Contains(out, "access=fttp,isp=example") {
		t.Errorf("list: exit %d, %q", code, out)
	}
	if !regexp.MustCompile(`home-1\s+yes\s+yes\s+yes`).MatchString(out) {
		t.Errorf("list: want enrolled, token and revoked: %q", out)
	}
	if _, errs, code := run(t, "store", "monitor", "revoke", "nobody", "--store", path); code != exitFailure || strings.Count(errs, "\n") > 1 {
		t.Errorf("revoke unknown: exit %d, %q", code, errs)
	}
	for _, args := range [][]string{{"store", "monitor", "add", "x", "--store", path, "--label", "novalue"},
		{"store", "monitor", "add", "x"}, {"store", "monitor", "list", "--store", "ftp://x"},
		{"monitor", "run", "--target", "stamp://198.18.0.1", "--ship-raw"},
		{"monitor", "run", "--target", "stamp://198.18.0.1", "--store", path, "--ship", path},
		{"monitor", "run", "--target", "stamp://198.18.0.1", "--ship", "mysql://x/y"}} {
		if _, errs, code := run(t, args...); code != exitUsage || strings.Count(errs, "\n") > 1 {
			t.Errorf("%v: exit %d, %q; want a usage error, one line", args, code, errs)
		}
	}
}
