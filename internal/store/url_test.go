package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in      string
		backend Backend
		path    string
		bad     string // part of the error, when bad
	}{
		{in: "results.db", backend: SQLite, path: "results.db"},
		{in: "/var/lib/sonde/monitor.db", backend: SQLite, path: "/var/lib/sonde/monitor.db"},
		{in: "sqlite:/var/lib/sonde/m.db", backend: SQLite, path: "/var/lib/sonde/m.db"},
		{in: "sqlite:///var/lib/sonde/m.db", backend: SQLite, path: "/var/lib/sonde/m.db"},
		{in: "SQLite:rel.db", backend: SQLite, path: "rel.db"},
		{in: ":memory:", backend: SQLite, path: Memory},
		{in: "./a:b.db", backend: SQLite, path: "./a:b.db"},
		{in: "postgres://sonde:secret@db.example:5432/sonde?sslmode=disable", backend: Postgres},
		{in: "postgresql:///sonde?host=/run/postgresql", backend: Postgres},
		{in: "", bad: "empty"},
		{in: "sqlite:", bad: "empty SQLite path"},
		{in: "mysql://x/y", bad: `unknown store URL scheme "mysql"`},
		{in: "m.db?mode=ro", bad: "not allowed"},
		{in: "postgres://h:notaport/db", bad: "bad PostgreSQL URL"},
		{in: "a\x00b", bad: "NUL"},
		{in: strings.Repeat("a", maxURLLen+1), bad: "the limit is"},
	} {
		loc, err := ParseURL(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseURL(%.40q): %v, want one line with %q", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || loc.Backend != c.backend || (c.backend == SQLite && loc.Path != c.path) || (c.backend == Postgres && loc.DSN != c.in) {
			t.Errorf("ParseURL(%q) = %+v, %v; want %s %q", c.in, loc, err, c.backend, c.path)
		}
	}
	loc, _ := ParseURL("postgres://sonde:secret@db.example/sonde")
	if s := loc.String(); strings.Contains(s, "secret") {
		t.Errorf("Location.String() shows the password: %s", s)
	}
}

// FuzzParseURL: any string parses or fails with one line, never panics,
// and a parsed location is of a known backend and never shows a password.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"results.db", ":memory:", "sqlite:/x.db", "postgres://u:p@h:5432/d?sslmode=disable",
		"postgresql:///d?host=/tmp", "mysql://x", "", "m.db#x", "postgres://h:99999/d", "postgres://[::1]:5/d",
		"journal:/j", "journal:///j?raw=1MiB&long=2GB", "journal:////j", "journal:j?raw=1&raw=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := ParseURL(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseURL(%q): error of several lines: %q", s, err)
			}
			return
		}
		switch loc.Backend {
		case SQLite:
			if loc.Path == "" || strings.ContainsAny(loc.Path, "?#\x00") && loc.Path != Memory {
				t.Fatalf("ParseURL(%q): SQLite path %q", s, loc.Path)
			}
		case Postgres:
			if loc.DSN != s {
				t.Fatalf("ParseURL(%q): DSN %q", s, loc.DSN)
			}
			_ = loc.String()
		case Journal:
			// The directory ends at the parameters; the location's
			// URL parses back to it.
			if loc.Path == "" || strings.Contains(loc.Path, "?") {
				t.Fatalf("ParseURL(%q): journal directory %q", s, loc.Path)
			}
			if back, err := ParseURL(loc.String()); err != nil || back != loc {
				t.Fatalf("ParseURL(%q) = %+v; its String %q parses to %+v, %v", s, loc, loc.String(), back, err)
			}
		default:
			t.Fatalf("ParseURL(%q): backend %q", s, loc.Backend)
		}
	})
}

// TestOpenExisting: a reader does not create a missing SQLite store; an
// existing one opens. CheckMonitorName is the store's rule for names.
func TestOpenExisting(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	loc, err := ParseURL(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExisting(ctx, loc); err == nil || !strings.Contains(err.Error(), "m.db") {
		t.Fatalf("missing store: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("OpenExisting created the missing store")
	}
	st, err := OpenLocation(ctx, loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = OpenExisting(ctx, loc); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if CheckMonitorName("home") != nil || CheckMonitorName("") == nil || CheckMonitorName("a\x7fb") == nil {
		t.Error("CheckMonitorName")
	}
}

// TestParseFlag: a store URL the user gave fails with its flag's name in
// front, not the package's.
func TestParseFlag(t *testing.T) {
	if _, err := ParseFlag("--store", "mysql://db/x"); err == nil || !strings.HasPrefix(err.Error(), "--store: unknown store URL scheme \"mysql\"") {
		t.Errorf("mysql: %v", err)
	}
	if loc, err := ParseFlag("--store", "sqlite:x.db"); err != nil || loc.Backend != SQLite {
		t.Errorf("sqlite: %+v %v", loc, err)
	}
}
