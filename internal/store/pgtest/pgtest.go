//go:build unix

package pgtest

import (
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Server is a running PostgreSQL.
type Server struct {
	port int
	dbs  atomic.Int64
	// run runs one of PostgreSQL's programs as the server's user; data
	// and opts are the data directory and the server's options.
	run        func(name string, args ...string) error
	data, opts string
	logFile    string
}

// binDir finds the newest PostgreSQL's programs.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return "", errors.New("PostgreSQL not found: no /usr/lib/postgresql/*/bin/initdb (Debian's postgresql package; `make apt-deps` installs it)")
	}
	sort.Slice(ok, func(i, j int) bool { return version(ok[i]) < version(ok[j]) })
	return ok[len(ok)-1], nil
}

func version(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

// unavailable skips the test, or fails it under CI.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgtest: %v", err)
	}
	t.Skipf("pgtest: %v", err)
}

// Start starts a PostgreSQL server that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		unavailable(t, err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailable(t, fmt.Errorf("running as root and no postgres user to run PostgreSQL as: %v", err))
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parent is private to root, and the server runs
	// as the postgres user.
	dir, err := os.MkdirTemp("", "sonde-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) error {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v: %s", name, err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run("initdb", "-D", data, "-U", "sonde", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	// fsync off: a test server's data need not survive the machine.
	opts := fmt.Sprintf("-k %s -p %d -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", dir, port)
	if err := run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("%v\n%s", err, log)
	}
	t.Cleanup(func() {
		if err := run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"); err != nil {
			t.Logf("pgtest: %v", err)
		}
	})
	return &Server{port: port, run: run, data: data, opts: opts, logFile: filepath.Join(dir, "log")}
}

// Stop stops the server, so a test sees its clients fail; Resume starts
// it again on the same port. The stop is "fast" (clients cut off, then a
// checkpoint), not "immediate": the server runs with
// synchronous_commit=off, and a crash would lose transactions it had
// confirmed.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.run("pg_ctl", "-D", s.data, "-m", "fast", "-w", "stop"); err != nil {
		t.Fatalf("pgtest: stop: %v", err)
	}
}

// Resume starts a server Stop stopped, with its data and port.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.run("pg_ctl", "-D", s.data, "-l", s.logFile, "-w", "-t", "60", "-o", s.opts, "start"); err != nil {
		log, _ := os.ReadFile(s.logFile)
		t.Fatalf("pgtest: resume: %v\n%s", err, log)
	}
}

// URL is the URL of database db on the server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://sonde@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// NewDatabase creates an empty database and returns its URL.
func (s *Server) NewDatabase(t *testing.T) string { return s.NewDB(t) }

// NewDB is NewDatabase for a test or a benchmark.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d", s.dbs.Add(1))
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return s.URL(name)
}

// freePort finds a TCP port free on 127.0.0.1 now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
