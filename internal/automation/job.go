package automation

import "encoding/json"

// Job is a cron job as OpenClaw's protocol carries it (spec
// automation.md §3): its definition and, in State, what the scheduler
// keeps about it. Times are Unix milliseconds.
type Job struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Description    string `json:"description,omitempty"`
	Enabled        bool   `json:"enabled"`
	DeleteAfterRun bool   `json:"deleteAfterRun,omitempty"`
	// AgentID owns the job; "" is the config's default agent.
	AgentID string `json:"agentId,omitempty"`
	// SessionKey is the explicit session of a main/wake job.
	SessionKey string   `json:"sessionKey,omitempty"`
	Schedule   Schedule `json:"schedule"`
	// SessionTarget is main, isolated, current or session:<key>.
	SessionTarget string `json:"sessionTarget"`
	// WakeMode is now or next-heartbeat (main-session jobs).
	WakeMode string    `json:"wakeMode,omitempty"`
	Payload  Payload   `json:"payload"`
	Delivery *Delivery `json:"delivery,omitempty"`
	// FailureAlert is the job's own alert settings; Disabled when the job
	// says failureAlert: false.
	FailureAlert *FailureAlert `json:"failureAlert,omitempty"`
	// Creator is who made the job, for the cron tool's scope (R7.3):
	// "operator", or "agent:<agentId>" with the channel account of the
	// chat it was made from. Talon's.
	Creator     string   `json:"creator,omitempty"`
	CreatedAtMs int64    `json:"createdAtMs"`
	UpdatedAtMs int64    `json:"updatedAtMs"`
	State       JobState `json:"state"`
	// ConfigRevision counts the definition's edits (cron.update's
	// expectedConfigRevision).
	ConfigRevision int64 `json:"configRevision"`
}

// Schedule kinds.
const (
	KindAt    = "at"
	KindEvery = "every"
	KindCron  = "cron"
)

// Schedule is when a job runs (§3.1): Kind "at" with At (ISO 8601, UTC
// without an offset), "every" with EveryMs from AnchorMs, or "cron" with
// Expr (5 or 6 fields) in TZ and StaggerMs.
type Schedule struct {
	Kind     string `json:"kind"`
	At       string `json:"at,omitempty"`
	EveryMs  int64  `json:"everyMs,omitempty"`
	AnchorMs *int64 `json:"anchorMs,omitempty"`
	Expr     string `json:"expr,omitempty"`
	TZ       string `json:"tz,omitempty"`
	// StaggerMs is the window a recurring slot is moved by (R3.4); nil
	// for the default (5 min for top-of-hour expressions), 0 for exact.
	StaggerMs *int64 `json:"staggerMs,omitempty"`
}

// Payload kinds.
const (
	PayloadSystemEvent = "systemEvent"
	PayloadAgentTurn   = "agentTurn"
)

// Payload is what a run does (§3.2): enqueue Text as a system event, or
// run an agent turn with Message.
type Payload struct {
	Kind string `json:"kind"`
	// Text of a systemEvent.
	Text string `json:"text,omitempty"`
	// The agentTurn's prompt and settings.
	Message        string   `json:"message,omitempty"`
	Model          string   `json:"model,omitempty"`
	Fallbacks      []string `json:"fallbacks,omitzero"`
	Thinking       string   `json:"thinking,omitempty"`
	TimeoutSeconds *int     `json:"timeoutSeconds,omitempty"`
	LightContext   bool     `json:"lightContext,omitempty"`
	// ToolsAllow caps the run's tools; nil is every tool the policy
	// gives ("*"), [] none (R3.11). Fallbacks nil is the configured
	// chain, [] none. Both are omitzero, not omitempty: an empty list
	// must survive a JSON round trip, or [] would widen to everything.
	ToolsAllow                 []string `json:"toolsAllow,omitzero"`
	AllowUnsafeExternalContent bool     `json:"allowUnsafeExternalContent,omitempty"`
}

// Delivery modes.
const (
	DeliverAnnounce = "announce"
	DeliverWebhook  = "webhook"
	DeliverNone     = "none"
)

// Delivery is where a run's result goes (§3.3).
type Delivery struct {
	Mode      string `json:"mode"`
	Channel   string `json:"channel,omitempty"` // a channel id or "last"
	To        string `json:"to,omitempty"`      // a chat target, or the webhook URL
	AccountID string `json:"accountId,omitempty"`
	// ThreadID is a Telegram topic or Slack thread; a number or a string
	// on the wire.
	ThreadID           json.RawMessage `json:"threadId,omitempty"`
	BestEffort         bool            `json:"bestEffort,omitempty"`
	FailureDestination *Destination    `json:"failureDestination,omitempty"`
}

// Destination is a chat to send an alert to.
type Destination struct {
	Channel   string `json:"channel,omitempty"`
	To        string `json:"to,omitempty"`
	AccountID string `json:"accountId,omitempty"`
}

// FailureAlert is §6.4's settings of one job or of cron.failureAlert.
type FailureAlert struct {
	Disabled       bool   `json:"-"` // failureAlert: false
	Enabled        *bool  `json:"enabled,omitempty"`
	After          int    `json:"after,omitempty"`
	CooldownMs     int64  `json:"cooldownMs,omitempty"`
	IncludeSkipped bool   `json:"includeSkipped,omitempty"`
	Mode           string `json:"mode,omitempty"` // announce or webhook
	Destination
}

// Run statuses.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusSkipped = "skipped"
	// StatusLost is a run the gateway lost track of (the process ended
	// while it ran); its history is kept 24 h, not 7 days (R4.3).
	StatusLost = "lost"
)

// JobState is what the scheduler keeps about a job (§3 state): separate
// from the definition, so an edit that keeps the schedule keeps it.
type JobState struct {
	NextRunAtMs        *int64        `json:"nextRunAtMs,omitempty"`
	RunningAtMs        *int64        `json:"runningAtMs,omitempty"`
	LastRunAtMs        *int64        `json:"lastRunAtMs,omitempty"`
	LastRunStatus      string        `json:"lastRunStatus,omitempty"`
	LastError          string        `json:"lastError,omitempty"`
	LastDurationMs     *int64        `json:"lastDurationMs,omitempty"`
	ConsecutiveErrors  int           `json:"consecutiveErrors"`
	ConsecutiveSkipped int           `json:"consecutiveSkipped"`
	ScheduleErrors     int           `json:"scheduleErrors,omitempty"`
	LastDelivered      *bool         `json:"lastDelivered,omitempty"`
	LastDeliveryStatus string        `json:"lastDeliveryStatus,omitempty"`
	LastDeliveryError  string        `json:"lastDeliveryError,omitempty"`
	AutoDisabled       *AutoDisabled `json:"autoDisabled,omitempty"`
	// LastAlertAtMs and AlertCause track §6.4's cooldown per incident.
	LastAlertAtMs *int64 `json:"lastAlertAtMs,omitempty"`
	AlertCause    string `json:"alertCause,omitempty"`
}

// AutoDisabled says why the scheduler turned a job off.
type AutoDisabled struct {
	Reason            string `json:"reason"` // schedule-errors, consecutive-failures
	AtMs              int64  `json:"atMs"`
	ConsecutiveErrors int    `json:"consecutiveErrors,omitempty"`
}

// Completion statuses and delivery statuses of a run (§6.3).
const (
	CompletionSucceeded = "succeeded"
	CompletionFailed    = "failed"
	CompletionUnknown   = "unknown"

	Delivered          = "delivered"
	NotDelivered       = "not-delivered"
	DeliveryUnknown    = "unknown"
	DeliveryNotAsked   = "not-requested"
	SuppressSilent     = "silent"
	SuppressEmpty      = "empty"
	SuppressHeartbeat  = "heartbeat"
	SkipReasonMissed   = "missed"
	SkipReasonDisabled = "disabled"
)

// Run is one run-log entry (§6.3).
type Run struct {
	Ts                        int64  `json:"ts"`
	JobID                     string `json:"jobId"`
	JobName                   string `json:"jobName,omitempty"`
	Action                    string `json:"action"` // "finished"
	Status                    string `json:"status"`
	CompletionStatus          string `json:"completionStatus,omitempty"`
	Error                     string `json:"error,omitempty"`
	Reason                    string `json:"reason,omitempty"` // of a skipped run: missed, …
	Summary                   string `json:"summary,omitempty"`
	Delivered                 *bool  `json:"delivered,omitempty"`
	DeliveryStatus            string `json:"deliveryStatus,omitempty"`
	DeliveryError             string `json:"deliveryError,omitempty"`
	DeliverySuppressionReason string `json:"deliverySuppressionReason,omitempty"`
	SessionID                 string `json:"sessionId,omitempty"`
	SessionKey                string `json:"sessionKey,omitempty"`
	RunID                     string `json:"runId"`
	RunAtMs                   int64  `json:"runAtMs"`
	DurationMs                int64  `json:"durationMs"`
	NextRunAtMs               *int64 `json:"nextRunAtMs,omitempty"`
	Model                     string `json:"model,omitempty"`
	Provider                  string `json:"provider,omitempty"`
	Usage                     *Usage `json:"usage,omitempty"`
}

// Usage is a run's token counts.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}
