package protocol

import (
	"encoding/json"
	"fmt"
)

// Frame types.
const (
	TypeReq   = "req"
	TypeRes   = "res"
	TypeEvent = "event"
)

// Versions this implementation speaks: a client whose
// [minProtocol, maxProtocol] meets [MinVersion, MaxVersion] is answered
// with the highest common one.
const (
	MinVersion = 3
	MaxVersion = 4
)

// Error codes: the whole upstream enum, and Talon's budget refusal. Almost every client mistake is
// InvalidRequest; handler and backend failures are Unavailable.
const (
	CodeNotLinked      = "NOT_LINKED"
	CodeNotPaired      = "NOT_PAIRED"
	CodeAgentTimeout   = "AGENT_TIMEOUT"
	CodeInvalidRequest = "INVALID_REQUEST"
	CodeUnavailable    = "UNAVAILABLE"
	CodeForbidden      = "FORBIDDEN"
	// CodeBudgetExceeded is Talon's own: the tenant's monthly usage
	// budget is spent, so no turn starts until the next month (or a
	// larger budget); Details say the budget, the usage and resetsAt.
	CodeBudgetExceeded = "BUDGET_EXCEEDED"
)

// Close codes the server uses.
const (
	ClosePolicy   = 1008 // bad handshake, auth, slow consumer
	CloseProtocol = 1002 // protocol version mismatch
	CloseRestart  = 1012 // service restart (shutdown)
)

// Request is a client → server call.
type Request struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Response answers a Request; a request may get more than one (the
// two-phase methods).
type Response struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	OK      bool   `json:"ok"`
	Payload any    `json:"payload,omitempty"`
	Error   *Error `json:"error,omitempty"`
}

// Event is a server push. Seq is set on broadcasts only.
type Event struct {
	Type         string        `json:"type"`
	Event        string        `json:"event"`
	Payload      any           `json:"payload,omitempty"`
	Seq          *int64        `json:"seq,omitempty"`
	StateVersion *StateVersion `json:"stateVersion,omitempty"`
}

// StateVersion counts changes of presence and health.
type StateVersion struct {
	Presence int64 `json:"presence"`
	Health   int64 `json:"health"`
}

// Error is the ErrorShape of a failed response.
type Error struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	Details      any    `json:"details,omitempty"`
	Retryable    bool   `json:"retryable,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an INVALID_REQUEST error.
func Errorf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// Frame is any frame as read off the wire, before its type is known.
type Frame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	OK      bool            `json:"ok,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	Event   string          `json:"event,omitempty"`
	Seq     *int64          `json:"seq,omitempty"`
}
