package server

import (
	"net/http"

	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/rtcquality"
)

// rtcRoutes mounts the page's WebRTC quality test (internal/rtcquality)
// under the session API: the session ID authenticates the calls, and the
// peer connection ends with the session.
func (s *Server) rtcRoutes() {
	s.mux.handleFunc("POST "+protocol.PathSessions+"/{id}/webrtc", policySession, func(w http.ResponseWriter, r *http.Request) {
		if ses := s.lookup(w, r); ses != nil {
			// The peer connection is no stream the idle reclaim sees.
			ses.hold()
			s.rtc.HandleOffer(w, r, rtcquality.Session{ID: ses.id, Ctx: ses.ctx})
		}
	})
	s.mux.handleFunc("POST "+protocol.PathSessions+"/{id}/webrtc/records", policySession, func(w http.ResponseWriter, r *http.Request) {
		if ses := s.lookup(w, r); ses != nil {
			s.rtc.HandleRecords(w, r, rtcquality.Session{ID: ses.id, Ctx: ses.ctx})
		}
	})
}
