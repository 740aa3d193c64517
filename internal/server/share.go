package server

import (
	"bytes"
	"io/fs"
	"net/http"

	"github.com/sonde-project/sonde/web"
)

// PathShared/{id} is a stored result's permanent read-only page: the test
// page's shell, which sees the path and renders the result from
// PathResults/{id} without running a test. GET only; it starts no work.
const PathShared = "/r/"

func (s *Server) handleShared(w http.ResponseWriter, r *http.Request) {
	if _, err := s.history.GetResult(r.Context(), r.PathValue("id")); err != nil {
		s.resultError(w, err)
		return
	}
	page, err := fs.ReadFile(web.Assets(), "index.html")
	if err != nil {
		s.writeError(w, http.StatusInternalServerError, "page unavailable")
		return
	}
	s.pageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page's script unmarks it once the result is drawn (style.css).
	_, _ = w.Write(bytes.Replace(page, []byte("<body>"), []byte(`<body class="shared">`), 1))
}
