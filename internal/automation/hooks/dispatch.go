package hooks

import (
	"context"
	"errors"
	"time"
)

// Dispatcher carries out what a hook request asks. The gateway implements
// it for a tenant; the handler has already applied every policy of §10,
// so a Dispatcher checks only what it alone knows (channel accounts,
// models, whether a session can take work).
type Dispatcher interface {
	// Wake queues w.Text as a system event and, for mode "now", asks for
	// a heartbeat-style turn (R8.4). The outcome is "queued", or
	// "coalesced" when the text equals the queue's last pending event.
	Wake(ctx context.Context, w Wake) (outcome string, err error)
	// Agent admits a turn and returns its run id and a channel that
	// receives the run's Completion once (or is closed when none can be
	// told). Admission must finish before ctx ends (15 s); when ctx ends
	// first, the queued work is cancelled and Agent returns ctx's error.
	// Errors wrapping ErrRejected, ErrConflict or ErrUnavailable answer
	// 400, 409 and 503; any other is a failed preparation (502).
	Agent(ctx context.Context, a AgentTurn) (runID string, done <-chan Completion, err error)
}

// Errors a Dispatcher wraps to choose the status of a refused request.
// The text of an ErrRejected error is shown to the caller; other texts
// are only logged.
var (
	ErrRejected    = errors.New("request rejected")
	ErrConflict    = errors.New("the session cannot accept work now")
	ErrUnavailable = errors.New("gateway unavailable")
)

// Wake modes.
const (
	ModeNow           = "now"
	ModeNextHeartbeat = "next-heartbeat"
)

// Wake is a wake request.
type Wake struct {
	AgentID string
	// SessionKey is the canonical session to wake; "" is the agent's
	// main session.
	SessionKey string
	Text       string
	Mode       string // ModeNow or ModeNextHeartbeat
	// Source names the hook: "hook:wake" or "hook:mapping:<id>".
	Source string
}

// AgentTurn is an admitted agent turn's request.
type AgentTurn struct {
	AgentID string
	// SessionKey is the canonical logical key (agent:<id>:…), never
	// empty: requests sharing one run one after another. Persistent
	// turns run in that session; others in a fresh run session.
	SessionKey string
	Persistent bool
	// Name labels the run ("Hook" by default).
	Name string
	// Message is the turn's input, already wrapped as untrusted external
	// content unless the mapping allowed unsafe content.
	Message  string
	WakeMode string
	// Deliver false: log the result only. Otherwise deliver to
	// Channel/To/AccountID when set; a mapping's Channel may be "last"
	// and its To empty (the delivery resolver decides); with no
	// destination at all a completion notice goes to the agent's main
	// session as a system event.
	Deliver   bool
	Channel   string
	To        string
	AccountID string
	Model     string
	Thinking  string
	// Timeout bounds the turn; 0 is the agent's default.
	Timeout time.Duration
	Source  string
}

// Completion is what a caller waiting for a run learns (R10.3): status
// and delivery facts, never the model's text.
type Completion struct {
	Status                    string `json:"status"`                     // ok, error or skipped
	ReplyDisposition          string `json:"replyDisposition,omitempty"` // visible, silent or empty
	Delivered                 *bool  `json:"delivered,omitempty"`
	DeliveryAttempted         *bool  `json:"deliveryAttempted,omitempty"`
	DeliveryError             string `json:"deliveryError,omitempty"` // "delivery-failed"
	DeliverySuppressionReason string `json:"deliverySuppressionReason,omitempty"`
}

// safe keeps a Completion to its enumerations, so that no text of a run
// (an error message, a reply) reaches the caller whatever the Dispatcher
// put there.
func (c Completion) safe() Completion {
	out := Completion{Status: "error", Delivered: c.Delivered, DeliveryAttempted: c.DeliveryAttempted}
	switch c.Status {
	case "ok", "error", "skipped":
		out.Status = c.Status
	}
	switch c.ReplyDisposition {
	case "visible", "silent", "empty":
		out.ReplyDisposition = c.ReplyDisposition
	}
	if c.DeliveryError != "" {
		out.DeliveryError = "delivery-failed"
	}
	switch c.DeliverySuppressionReason {
	case "empty", "silent", "heartbeat", "channel_transform":
		out.DeliverySuppressionReason = c.DeliverySuppressionReason
	}
	return out
}

// isRefusal reports whether err is one of the Dispatcher's refusals.
func isRefusal(err error) bool {
	return errors.Is(err, ErrRejected) || errors.Is(err, ErrConflict) || errors.Is(err, ErrUnavailable)
}
