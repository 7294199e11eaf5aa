package sessions

import (
	"context"
	"encoding/json"
	"fmt"

	"talon/internal/tools"
)

// Subagent tools, as OpenClaw's (docs/tools/subagents/tool-reference.md):
// sessions_spawn starts a child in its own session and returns at once,
// the child's result is announced back to the caller's session when it
// ends; subagents lists, steers and kills the caller's children;
// sessions_yield ends the turn to wait for them; agents_list names the
// agents a spawn may run as.

// Limits of the subagent tools' arguments.
const (
	MaxTaskBytes    = 64 << 10
	MaxLabelRunes   = 120
	MaxSteerBytes   = 16 << 10
	MaxRecentMinute = 24 * 60
)

type spawn struct{}

var spawnSchema = tools.Object(
	tools.Prop{Name: "task", Type: tools.TypeString, Required: true, Description: "The task for the subagent; it sees only this text, so brief it fully: objective, inputs, expected output."},
	tools.Prop{Name: "label", Type: tools.TypeString, Description: "Short task title shown in lists; name the work, not the agent."},
	tools.Prop{Name: "agentId", Type: tools.TypeString, Description: "Run the child as another configured agent, when subagents.allowAgents allows it (see agents_list); default: this agent."},
	tools.Prop{Name: "model", Type: tools.TypeString, Description: "Override the subagent's model (provider/model). An unknown model is skipped with a warning and the default is used."},
	tools.Prop{Name: "runTimeoutSeconds", Type: tools.TypeInteger, Description: "Per-run timeout in seconds; overrides the configured subagent default. Zero disables the timeout."},
	tools.Prop{Name: "mode", Type: tools.TypeString, Enum: []string{"run"}, Description: `"run": one-shot (the only mode: Talon binds no channel threads).`},
	tools.Prop{Name: "cleanup", Type: tools.TypeString, Enum: []string{"delete", "keep"}, Description: `"delete" removes the child's session after its result is announced; default "keep".`},
	tools.Prop{Name: "expectsCompletionMessage", Type: tools.TypeBoolean, Description: "false: fire-and-forget; this session gets no completion announce when the child finishes. Default true."},
	tools.Prop{Name: "sandbox", Type: tools.TypeString, Enum: []string{"inherit", "require"}, Description: `"inherit" the sandbox rules (default); "require" fails unless the child runs sandboxed.`},
)

// deliveryParams are OpenClaw's refused channel-delivery parameters: a
// child reports to its requester, never to a chat.
var deliveryParams = []string{"target", "transport", "channel", "to", "threadId", "thread_id", "replyTo", "reply_to"}

func (*spawn) Name() string { return "sessions_spawn" }
func (*spawn) Description() string {
	return `Spawn a subagent session (runtime "subagent") for background or parallel work. Returns at once with status "accepted", runId and childSessionKey; do not wait or poll: the child's final answer is announced to this session as a new turn when it finishes (use sessions_yield to end this turn until then). Subagents get fewer tools, and how deep they may spawn is limited.`
}
func (*spawn) Schema() json.RawMessage { return spawnSchema }
func (*spawn) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	b, err := backend(env)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	a, err := tools.ParseArgs(raw)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	for _, p := range deliveryParams {
		if a.Has(p) {
			return tools.Errorf("sessions_spawn does not support %q; remove channel-delivery parameters", p), nil
		}
	}
	if a.Has("timeoutSeconds") {
		return tools.Errorf(`sessions_spawn does not support "timeoutSeconds". Use "runTimeoutSeconds" for a per-run timeout.`), nil
	}
	if err := a.Only(tools.PropertyNames(spawnSchema)...); err != nil {
		return tools.ErrorResult(err), nil
	}
	r, err := spawnRequest(a)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	out, err := b.Spawn(ctx, r)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	return tools.Result{Text: string(out)}, nil
}

// spawnRequest checks a call's arguments.
func spawnRequest(a tools.Args) (tools.SpawnRequest, error) {
	var r tools.SpawnRequest
	var err error
	if r.Task, err = a.String("task", true); err != nil {
		return r, err
	}
	if len(r.Task) > MaxTaskBytes {
		return r, fmt.Errorf("task is %d bytes; at most %d", len(r.Task), MaxTaskBytes)
	}
	if r.Label, err = a.String("label", false); err != nil {
		return r, err
	}
	if n := len([]rune(r.Label)); n > MaxLabelRunes {
		return r, fmt.Errorf("label is %d characters; at most %d", n, MaxLabelRunes)
	}
	if r.AgentID, err = a.String("agentId", false); err != nil {
		return r, err
	}
	if r.Model, err = a.String("model", false); err != nil {
		return r, err
	}
	if a.Has("runTimeoutSeconds") {
		n, err := a.Int("runTimeoutSeconds", false, 0, 24*3600)
		if err != nil {
			return r, err
		}
		r.RunTimeoutSeconds = &n
	}
	if _, err := a.StringEnum("mode", false, "run"); err != nil {
		return r, fmt.Errorf(`%w; mode "session" needs a thread binding, which Talon does not build`, err)
	}
	cleanup, err := a.StringEnum("cleanup", false, "delete", "keep")
	if err != nil {
		return r, err
	}
	r.Delete = cleanup == "delete"
	r.Announce = true
	if a.Has("expectsCompletionMessage") {
		if r.Announce, err = a.Bool("expectsCompletionMessage", false); err != nil {
			return r, err
		}
	}
	sb, err := a.StringEnum("sandbox", false, "inherit", "require")
	if err != nil {
		return r, err
	}
	r.RequireSandbox = sb == "require"
	return r, nil
}

type subagents struct{}

var subagentsSchema = tools.Object(
	tools.Prop{Name: "action", Type: tools.TypeString, Enum: []string{"list", "kill", "steer"}, Description: `"list" (default) this session's children with their status; "kill" stops a child's run; "steer" sends a running child a message: its run restarts with it.`},
	tools.Prop{Name: "target", Type: tools.TypeString, Description: `The child for kill and steer: its runId, session key, label, its number in the list (1 = newest), or "last"; kill also takes "all".`},
	tools.Prop{Name: "message", Type: tools.TypeString, Description: "What to tell the child, for steer."},
	tools.Prop{Name: "recentMinutes", Type: tools.TypeInteger, Description: "For list: children that ended in the last N minutes are listed too (default 30, at most 1440); running ones always are."},
)

func (*subagents) Name() string { return "subagents" }
func (*subagents) Description() string {
	return "List, steer or kill the sub-agent runs this session spawned. Use on demand for status or to redirect or stop a child; never poll it to wait for completion: results are announced (sessions_yield waits)."
}
func (*subagents) Schema() json.RawMessage { return subagentsSchema }
func (*subagents) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	return run(env, raw, subagentsSchema, func(b tools.Sessions, a tools.Args) (json.RawMessage, error) {
		r, err := subagentsRequest(a)
		if err != nil {
			return nil, err
		}
		return b.Subagents(ctx, r)
	})
}

func subagentsRequest(a tools.Args) (tools.SubagentsRequest, error) {
	var r tools.SubagentsRequest
	var err error
	if r.Action, err = a.StringEnum("action", false, "list", "kill", "steer"); err != nil {
		return r, err
	}
	if r.Action == "" {
		r.Action = "list"
	}
	if r.Target, err = a.String("target", r.Action != "list"); err != nil {
		return r, err
	}
	if r.Message, err = a.String("message", r.Action == "steer"); err != nil {
		return r, err
	}
	if len(r.Message) > MaxSteerBytes {
		return r, fmt.Errorf("message is %d bytes; at most %d", len(r.Message), MaxSteerBytes)
	}
	if r.RecentMinutes, err = a.Int("recentMinutes", false, 1, MaxRecentMinute); err != nil {
		return r, err
	}
	if r.RecentMinutes == 0 {
		r.RecentMinutes = 30
	}
	return r, nil
}

type yield struct{}

var yieldSchema = tools.Object(
	tools.Prop{Name: "message", Type: tools.TypeString, Description: "Private context for the resumed turn; not sent to the user."},
)

func (*yield) Name() string { return "sessions_yield" }
func (*yield) Description() string {
	return "End this turn for pending child completion events; this is not a final-result submission. Return completed work normally. The next turn starts when a child's result is announced."
}
func (*yield) Schema() json.RawMessage { return yieldSchema }
func (*yield) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	res, err := run(env, raw, yieldSchema, func(b tools.Sessions, a tools.Args) (json.RawMessage, error) {
		msg, err := a.String("message", false)
		if err != nil {
			return nil, err
		}
		if len(msg) > MaxSteerBytes {
			return nil, fmt.Errorf("message is %d bytes; at most %d", len(msg), MaxSteerBytes)
		}
		return b.Yield(ctx, msg)
	})
	res.EndTurn = err == nil && !res.IsError
	return res, err
}

type agentsList struct{}

var agentsListSchema = tools.Object()

func (*agentsList) Name() string { return "agents_list" }
func (*agentsList) Description() string {
	return "List configured agent ids with name/model metadata, allowed as sessions_spawn targets."
}
func (*agentsList) Schema() json.RawMessage { return agentsListSchema }
func (*agentsList) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	return run(env, raw, agentsListSchema, func(b tools.Sessions, _ tools.Args) (json.RawMessage, error) {
		return b.AgentsList(ctx)
	})
}
