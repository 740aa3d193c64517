//go:build !unix

package pgtest

import "testing"

// Server is a running PostgreSQL; there is none where the server's
// programs are not run as on Unix (Start skips the test).
type Server struct{}

// Start skips the test: PostgreSQL is started for tests on Unix only.
func Start(t testing.TB) *Server {
	t.Skip("pgtest: PostgreSQL is started for tests on Unix only")
	return nil
}

// Stop, Resume, URL, NewDatabase and NewDB are never reached (Start
// skipped), but let the tests that call them build.
func (s *Server) Stop(t testing.TB)               {}
func (s *Server) Resume(t testing.TB)             {}
func (s *Server) URL(db string) string            { return "" }
func (s *Server) NewDatabase(t *testing.T) string { return "" }
func (s *Server) NewDB(t testing.TB) string       { return "" }
