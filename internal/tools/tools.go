package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
)

// Tool is one capability the model can call. Implementations are safe for
// concurrent use; per-call state lives in Env.
type Tool interface {
	// Name is the tool's id, lower case with underscores.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON Schema of the arguments: a flat object with a
	// description on every property and string enums, never unions.
	Schema() json.RawMessage
	// Run executes one call. A problem the model caused (bad arguments, a
	// missing file) is a Result with IsError; an error return is a failure
	// of Talon itself.
	Run(ctx context.Context, env *Env, args json.RawMessage) (Result, error)
}

// Env is what a tool call may touch.
type Env struct {
	AgentID    string
	SessionKey string
	// Workspace is the directory file tools are confined to, opened as an
	// os.Root so no path leads out of it.
	Workspace *os.Root
	// ReadOnly forbids writes (sandbox workspaceAccess ro).
	ReadOnly bool
	// Sessions serves the sessions_* and session_status tools; nil when
	// the caller offers none.
	Sessions Sessions
}

// Result is what a tool call returns to the model.
type Result struct {
	Text    string
	IsError bool
}

// Errorf is a Result reporting a problem to the model.
func Errorf(format string, args ...any) Result {
	return Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// Sessions is what the session tools need from the gateway. It is owned
// here, by its consumer, and implemented by the agent runner.
type Sessions interface {
	Status(ctx context.Context, sessionKey string) (json.RawMessage, error)
	List(ctx context.Context, agentID string, limit int) (json.RawMessage, error)
	History(ctx context.Context, sessionKey string, limit int) (json.RawMessage, error)
	Send(ctx context.Context, fromKey, toKey, message string) (json.RawMessage, error)
	Spawn(ctx context.Context, parentKey, agentID, task, label string) (json.RawMessage, error)
}
