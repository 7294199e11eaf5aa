package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"talon/internal/authlimit"
	"talon/internal/platform"
	"talon/internal/platform/install"
	"talon/internal/store/catalog"
)

// apiError is an error with the status and code the client sees.
type apiError struct {
	status  int
	code    string
	message string
	fix     string
	// retryAfter, when set, is sent as Retry-After.
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// badField is a 400 that names the field at fault.
func badField(field, format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, "invalid_"+field, "%s: %s", field, fmt.Sprintf(format, args...))
}

// classify maps an error of the platform (or of reading the request) to
// what the client sees. An error no rule knows is a 500 that keeps its
// message: every caller is an operator or the tenant itself.
func classify(err error) *apiError {
	var ae *apiError
	var pe *install.PluginError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &mb):
		return errorf(http.StatusRequestEntityTooLarge, "body_too_large", "the request body is larger than %d bytes", mb.Limit)
	case errors.As(err, &pe):
		e := errorf(http.StatusUnprocessableEntity, "plugin_off", "%v", err)
		e.fix = pe.Fix
		return e
	case errors.Is(err, platform.ErrNoChat):
		return errorf(http.StatusServiceUnavailable, "no_chat", "%v", err)
	case errors.Is(err, platform.ErrNoTemplate), errors.Is(err, catalog.ErrUnknownEntry):
		return errorf(http.StatusNotFound, "no_template", "%v", err)
	case errors.Is(err, platform.ErrNotInstalled):
		return errorf(http.StatusNotFound, "not_installed", "%v", err)
	case errors.Is(err, catalog.ErrUnknownTenant):
		return errorf(http.StatusNotFound, "no_tenant", "%v", err)
	case errors.Is(err, catalog.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", "%v", err)
	case errors.Is(err, platform.ErrInstalled):
		return errorf(http.StatusConflict, "installed", "%v", err)
	case errors.Is(err, catalog.ErrExists):
		return errorf(http.StatusConflict, "exists", "%v", err)
	case errors.Is(err, catalog.ErrInUse):
		return errorf(http.StatusConflict, "in_use", "%v", err)
	case errors.Is(err, catalog.ErrInvalid):
		return errorf(http.StatusBadRequest, "invalid", "%v", err)
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this.
		return errorf(499, "canceled", "%v", err)
	}
	return errorf(http.StatusInternalServerError, "internal", "%v", err)
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Fix     string `json:"fix,omitempty"`
	} `json:"error"`
}

// fail writes err as a JSON error response.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := classify(err)
	if e.status >= 500 {
		s.o.Log.Error("api", "method", r.Method, "path", r.URL.Path, "status", e.status, "err", err)
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="talon-platform"`)
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", authlimit.RetryAfter(e.retryAfter))
	}
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Fix = e.code, e.message, e.fix
	writeJSON(w, e.status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a client that went away is not our error
}
