package gateway

import (
	"encoding/json"
	"net/http"
)

// Error types of the OpenAI error envelope.
const (
	errInvalidRequest = "invalid_request_error"
	errUnauthorized   = "unauthorized"
	errNotFound       = "not_found_error"
	errAPI            = "api_error"
	errTooLarge       = "payload_too_large"
	errTimeout        = "request_timeout"
	errRateLimited    = "rate_limited"
	// errContextLength is OpenAI's code for a request over the window:
	// compaction could not bring the conversation back into it.
	errContextLength = "context_length_exceeded"
)

// writeError sends {"error":{"message","type"}} with a status. Messages are
// safe for clients: details of internal failures are logged, not sent.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"message": msg, "type": typ}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
