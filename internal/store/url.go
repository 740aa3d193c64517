package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
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
}

// String is the location for messages, without a password.
func (l Location) String() string {
	switch l.Backend {
	case SQLite:
		return l.Path
	case Journal:
		return "journal:" + l.Path
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
			dir := strings.TrimPrefix(rest, "//")
			if dir == "" {
				return Location{}, errors.New("store: empty journal directory")
			}
			return Location{Backend: Journal, Path: dir}, nil
		default:
			return Location{}, fmt.Errorf("store: unknown store URL scheme %q (want postgres://, sqlite:PATH, journal:DIR or a file path)", scheme)
		}
	}
	return sqliteLocation(s)
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
