package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// WriteJSON answers a control request with v as JSON, never cached.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers a control request with an error: an ErrorReply, one
// line a user can act on.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, ErrorReply{Error: msg})
}

// DecodeBody decodes r's JSON body, of at most limit bytes, into v; on an
// error it answers 413 (too large) or 400, naming what, and returns false.
func DecodeBody(w http.ResponseWriter, r *http.Request, limit int64, what string, v any) bool {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(v)
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("invalid %s: larger than %d bytes", what, limit))
	default:
		WriteError(w, http.StatusBadRequest, "invalid "+what+": "+err.Error())
	}
	return false
}
