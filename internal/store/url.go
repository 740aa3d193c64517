package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/sonde-project/sonde/internal/units"
)

// Backend names a database engine behind the store.
type Backend string

const (
	SQLite   Backend = "sqlite"
	Postgres Backend = "postgres"
)

// Memory is the SQLite location that lives in memory only, as long as the
// store is open.
const Memory = ":memory:"

// maxURLLen bounds a store URL: it comes from a flag or a config file.
const maxURLLen = 4096

// Location is a parsed store URL.
type Location struct {
	Backend Backend
	// Path is the SQLite file (or Memory) or the journal's directory;
	// DSN the PostgreSQL URL.
	Path string
	DSN  string
	// Journal is a journal's byte budgets, from its URL's parameters
	// (zero: the defaults).
	Journal JournalLimits
}

// String is the location for messages, without a password.
func (l Location) String() string {
	switch l.Backend {
	case SQLite:
		return l.Path
	case Journal:
		prefix := "journal:"
		if strings.HasPrefix(l.Path, "//") {
			prefix = "journal://" // which ParseURL strips
		}
		return prefix + l.Path + l.Journal.query()
	}
	u, err := url.Parse(l.DSN)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// ParseURL parses a store URL: a PostgreSQL URL (postgres:// or
// postgresql://), a SQLite file as "sqlite:PATH" or a bare path,
// Memory, or a journal directory as "journal:DIR" (journal.go). It checks the form only; Open checks that the place exists.
func ParseURL(s string) (Location, error) {
	switch {
	case s == "":
		return Location{}, errors.New("store: empty store URL")
	case len(s) > maxURLLen:
		return Location{}, fmt.Errorf("store: store URL of %d bytes, the limit is %d", len(s), maxURLLen)
	case strings.ContainsRune(s, 0):
		return Location{}, errors.New("store: store URL contains a NUL byte")
	}
	scheme, rest, hasScheme := strings.Cut(s, ":")
	if hasScheme && (strings.HasPrefix(rest, "//") || strings.EqualFold(scheme, "sqlite") || strings.EqualFold(scheme, "journal")) {
		switch strings.ToLower(scheme) {
		case "postgres", "postgresql":
			if err := checkPostgresURL(s); err != nil {
				return Location{}, fmt.Errorf("store: bad PostgreSQL URL: %s", oneLine(err))
			}
			return Location{Backend: Postgres, DSN: s}, nil
		case "sqlite":
			return sqliteLocation(strings.TrimPrefix(rest, "//"))
		case "journal":
			return journalLocation(strings.TrimPrefix(rest, "//"))
		default:
			return Location{}, fmt.Errorf("store: unknown store URL scheme %q (want postgres://, sqlite:PATH, journal:DIR or a file path)", scheme)
		}
	}
	return sqliteLocation(s)
}

// journalLocation parses "DIR" or "DIR?raw=SIZE&long=SIZE": the
// directory and the byte budgets of its two sets (units.ParseBytes sizes;
// a budget is checked against its range when the journal opens).
func journalLocation(s string) (Location, error) {
	dir, query, _ := strings.Cut(s, "?")
	if dir == "" {
		return Location{}, errors.New("store: empty journal directory")
	}
	loc := Location{Backend: Journal, Path: dir}
	if query == "" {
		return loc, nil
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return Location{}, fmt.Errorf("store: journal parameters %q: %s", query, oneLine(err))
	}
	for key, vs := range vals {
		var to *int64
		switch key {
		case "raw":
			to = &loc.Journal.RawBytes
		case "long":
			to = &loc.Journal.LongBytes
		default:
			return Location{}, fmt.Errorf("store: unknown journal parameter %q (want raw=SIZE, long=SIZE)", key)
		}
		if len(vs) != 1 {
			return Location{}, fmt.Errorf("store: journal parameter %q given %d times", key, len(vs))
		}
		n, err := units.ParseBytes(vs[0])
		if err != nil {
			return Location{}, fmt.Errorf("store: journal parameter %s: %s", key, oneLine(err))
		}
		if err := checkJournalBudget(n); err != nil {
			return Location{}, err
		}
		*to = n
	}
	return loc, nil
}

func sqliteLocation(path string) (Location, error) {
	switch {
	case !HaveSQLite:
		return Location{}, fmt.Errorf("store: %q is a SQLite store, and this sonde (the monitor build) has no SQLite: give journal:DIR, or use the full sonde", path)
	case path == "":
		return Location{}, errors.New("store: empty SQLite path")
	case path == Memory:
	case strings.ContainsAny(path, "?#"):
		// The driver takes the path inside a file: URI, where these end it.
		return Location{}, fmt.Errorf("store: SQLite path %q: '?' and '#' are not allowed", path)
	}
	return Location{Backend: SQLite, Path: path}, nil
}

// oneLine keeps the first line of an error's text.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// ParseFlag is ParseURL for a setting the user gave (flag names it, e.g.
// "--store"), whose name leads the error in place of the package's.
func ParseFlag(flag, s string) (Location, error) {
	loc, err := ParseURL(s)
	if err != nil {
		return loc, fmt.Errorf("%s: %s", flag, strings.TrimPrefix(err.Error(), "store: "))
	}
	return loc, nil
}
