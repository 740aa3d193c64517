package store

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestParseMigrations: statements end at a line ending in ";" or at
// StatementEnd; Down sections and comments are left out; malformed files
// are one error each.
func TestParseMigrations(t *testing.T) {
	ms, err := parseMigrations(fstest.MapFS{
		"00002_b.sql": {Data: []byte("-- +goose Up\nCREATE TABLE b (x INT);\n-- +goose StatementBegin\nCREATE FUNCTION f() AS $$ a; b; $$;\n-- +goose StatementEnd\n-- +goose Down\nDROP TABLE b;\n")},
		"00001_a.sql": {Data: []byte("-- a comment\n-- +goose Up\n-- why\nCREATE TABLE a (\n  x INT\n);\nINSERT INTO a VALUES (1);\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].version != 1 || ms[1].version != 2 {
		t.Fatalf("%+v", ms)
	}
	if len(ms[0].stmts) != 2 || !strings.Contains(ms[0].stmts[0], "x INT") || strings.Contains(ms[0].stmts[0], "why") {
		t.Errorf("file 1: %q", ms[0].stmts)
	}
	if len(ms[1].stmts) != 2 || !strings.Contains(ms[1].stmts[1], "a; b;") || strings.Contains(strings.Join(ms[1].stmts, ""), "DROP") {
		t.Errorf("file 2: %q", ms[1].stmts)
	}
	for name, body := range map[string]string{
		"00001_x.sql": "-- +goose Up\nCREATE TABLE x (y INT)\n",              // no ";"
		"00002_x.sql": "-- +goose Up\n-- +goose StatementBegin\nSELECT 1;\n", // no StatementEnd
		"00003_x.sql": "-- +goose Up\n-- +goose NO TRANSACTION\nSELECT 1;\n", // not supported
		"x.sql":       "-- +goose Up\nSELECT 1;\n",                           // no version
	} {
		if _, err := parseMigrations(fstest.MapFS{name: {Data: []byte(body)}}); err == nil {
			t.Errorf("%s %q: no error", name, body)
		}
	}
	// The real files parse for both engines.
	for _, b := range []Backend{SQLite, Postgres} {
		fsys, err := migrations(b)
		if err != nil {
			t.Fatal(err)
		}
		if ms, err := parseMigrations(fsys); err != nil || ms[len(ms)-1].version != SchemaVersion() {
			t.Errorf("%s: %v", b, err)
		}
	}
}

// TestExpandedFS: the expanded migrations are an fs.FS by the standard
// library's own checks.
func TestExpandedFS(t *testing.T) {
	for _, b := range []Backend{SQLite, Postgres} {
		fsys, err := migrations(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := fstest.TestFS(fsys, "00001_initial.sql"); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
}
