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
	"talon/internal/platform/node"
	"talon/internal/platform/relay"
	"talon/internal/store"
	"talon/internal/store/catalog"
	"talon/protocol"
)

// apiError is an error with the status and code the client sees.
type apiError struct {
	status  int
	code    string
	message string
	fix     string
	// retryAfter, when set, is sent as Retry-After.
	retryAfter time.Duration
	// cause, when set, is what went wrong inside: it goes to the log
	// under a request id, which message ends with; the client never sees
	// it (its text has paths, addresses, SQL).
	cause error
}

func (e *apiError) Error() string { return e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// badField is a 400 that names the field at fault.
func badField(field, format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, "invalid_"+field, "%s: %s", field, fmt.Sprintf(format, args...))
}

// hidden is an error whose message says nothing of cause, which the log
// keeps.
func hidden(status int, code, message string, cause error) *apiError {
	return &apiError{status: status, code: code, message: message, cause: cause}
}

// gatewayFailed is a chat that could not reach the gateway, or lost it: the
// gateway's own message when it refused, else a fixed one.
func gatewayFailed(err error) *apiError {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Code == protocol.CodeBudgetExceeded {
		// The tenant's monthly budget is spent: the gateway's 402, not a
		// failure of the gateway.
		return errorf(http.StatusPaymentRequired, "budget_exceeded", "%s", pe.Message)
	}
	if msg, ok := relay.Refusal(err); ok {
		return errorf(http.StatusBadGateway, "gateway_error", "the gateway refused: %s", msg)
	}
	return hidden(http.StatusBadGateway, "gateway_error", "the gateway could not be reached or dropped the connection; a run that started goes on, and its reply will be in the session history", err)
}

// classify maps an error of the platform (or of reading the request) to
// what the client sees. An error no rule knows is a 500 that says only
// "internal error": the log has the rest.
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
	case errors.Is(err, node.ErrUnreachable):
		// Between two health checks: the node's address stays in the log.
		return hidden(http.StatusServiceUnavailable, "node_unavailable", "the tenant's node did not answer; try again, or see GET /api/nodes", err)
	case errors.Is(err, platform.ErrMoving), errors.Is(err, node.ErrMoving):
		e := errorf(http.StatusServiceUnavailable, "tenant_moving", "%v", platform.ErrMoving)
		e.retryAfter = movingRetry
		return e
	case errors.Is(err, install.ErrNoTenant):
		return errorf(http.StatusNotFound, "no_tenant", "%v", err)
	case errors.Is(err, install.ErrExists):
		return errorf(http.StatusConflict, "exists", "%v", err)
	case errors.Is(err, platform.ErrNodeUnavailable):
		return errorf(http.StatusServiceUnavailable, "node_unavailable", "%v", err)
	case errors.Is(err, platform.ErrNoNode):
		return errorf(http.StatusServiceUnavailable, "no_healthy_node", "%v", err)
	case errors.Is(err, platform.ErrUnplaced):
		return errorf(http.StatusServiceUnavailable, "unplaced", "%v", err)
	case errors.Is(err, platform.ErrBusy):
		e := errorf(http.StatusConflict, "busy", "%v", err)
		e.retryAfter = movingRetry
		return e
	case errors.Is(err, platform.ErrSameNode):
		return errorf(http.StatusConflict, "same_node", "%v", err)
	case errors.Is(err, platform.ErrLocalMove):
		return errorf(http.StatusConflict, "single_node", "%v", err)
	case errors.Is(err, catalog.ErrUnknownNode):
		return errorf(http.StatusNotFound, "no_node", "%v", err)
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
	return hidden(http.StatusInternalServerError, "internal", "internal error", err)
}

// movingRetry is the Retry-After of a tenant being moved.
const movingRetry = 5 * time.Second

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Fix     string `json:"fix,omitempty"`
	} `json:"error"`
}

// fail writes err as a JSON error response; a 5xx is logged.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := classify(err)
	msg := e.message
	if e.status >= 500 {
		msg = s.logFailure(r, e, err)
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="talon-platform"`)
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", authlimit.RetryAfter(e.retryAfter))
	}
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Fix = e.code, msg, e.fix
	writeJSON(w, e.status, b)
}

// logFailure logs a failure and returns the message for the client: e's,
// ending with the request id the log line has when e hides a cause.
func (s *server) logFailure(r *http.Request, e *apiError, err error) string {
	if e.cause == nil {
		s.o.Log.Error("api", "method", r.Method, "path", r.URL.Path, "status", e.status, "err", err)
		return e.message
	}
	id := store.NewID()
	s.o.Log.Error("api", "method", r.Method, "path", r.URL.Path, "status", e.status, "request", id, "err", e.cause)
	return e.message + " (request " + id + ")"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a client that went away is not our error
}
