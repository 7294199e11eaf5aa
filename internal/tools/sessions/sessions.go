// Package sessions holds the session tools: session_status, sessions_list,
// sessions_history, sessions_send, and the subagent tools sessions_spawn,
// subagents, sessions_yield and agents_list (subagents.go). They validate
// arguments and call the tools.Sessions backend in their Env, which the
// agent runner provides; they are stateless and safe for concurrent use.
//
// The package also holds the rules of what these tools reach, which the
// backend applies (pure functions, no I/O):
//
//   - Visibility: OpenClaw's tools.sessions.visibility scopes — self, tree
//     (the session and those it spawned; the default), agent, all (other
//     agents' sessions too, when tools.agentToAgent allows) — and its
//     sandbox clamp: a sandboxed session is held to tree unless
//     agents.defaults.sandbox.sessionToolsVisibility is "all", which lifts
//     the clamp and nothing else. Sessions live in the tenant's own store,
//     so no scope reaches another tenant.
//   - CheckDrive: Talon's own rule on top, for sessions_send and
//     sessions_spawn: a sandboxed session never makes a less-confined
//     session act (sandbox.Looser), whatever the settings.
//
// A refusal is a tool error naming the rule and its config key.
package sessions

import (
	"context"
	"encoding/json"
	"errors"

	"talon/internal/tools"
)

// All returns the session and subagent tools.
func All() []tools.Tool {
	return []tools.Tool{&status{}, &list{}, &history{}, &send{}, &spawn{}, &subagents{}, &yield{}, &agentsList{}}
}

var (
	_ tools.Tool = (*status)(nil)
	_ tools.Tool = (*list)(nil)
	_ tools.Tool = (*history)(nil)
	_ tools.Tool = (*send)(nil)
	_ tools.Tool = (*spawn)(nil)
	_ tools.Tool = (*subagents)(nil)
	_ tools.Tool = (*yield)(nil)
	_ tools.Tool = (*agentsList)(nil)
)

// Limits of the listing tools.
const (
	MaxList    = 200
	MaxHistory = 200
)

var errNoBackend = errors.New("session tools are not available in this run")

func backend(env *tools.Env) (tools.Sessions, error) {
	if env == nil || env.Sessions == nil {
		return nil, errNoBackend
	}
	return env.Sessions, nil
}

// run is the shared body: parse against the schema, call, wrap the JSON.
func run(env *tools.Env, raw, schema json.RawMessage, call func(tools.Sessions, tools.Args) (json.RawMessage, error)) (tools.Result, error) {
	b, err := backend(env)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	args, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	out, err := call(b, args)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	return tools.Result{Text: string(out)}, nil
}

type status struct{}

var statusSchema = tools.Object(
	tools.Prop{Name: "sessionKey", Type: tools.TypeString,
		Description: "Session to describe; default: the current session."},
)

func (*status) Name() string { return "session_status" }
func (*status) Description() string {
	return "Show a session's status: its key, transcript id, model, last update, token usage (since reset, last turn, context used of the window) and how often its context was compacted."
}
func (*status) Schema() json.RawMessage { return statusSchema }
func (*status) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	return run(env, raw, statusSchema, func(b tools.Sessions, a tools.Args) (json.RawMessage, error) {
		key, err := a.String("sessionKey", false)
		if err != nil {
			return nil, err
		}
		if key == "" {
			key = env.SessionKey
		}
		return b.Status(ctx, key)
	})
}

type list struct{}

var listSchema = tools.Object(
	tools.Prop{Name: "limit", Type: tools.TypeInteger, Description: "How many sessions to list, newest first, 1 to 200. Default 50."},
)

func (*list) Name() string { return "sessions_list" }
func (*list) Description() string {
	return "List the sessions this session may see, newest first, with their keys, labels and last update times."
}
func (*list) Schema() json.RawMessage { return listSchema }
func (*list) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	return run(env, raw, listSchema, func(b tools.Sessions, a tools.Args) (json.RawMessage, error) {
		limit, err := a.Int("limit", false, 1, MaxList)
		if err != nil {
			return nil, err
		}
		if limit == 0 {
			limit = 50
		}
		return b.List(ctx, env.AgentID, limit)
	})
}

type history struct{}

var historySchema = tools.Object(
	tools.Prop{Name: "sessionKey", Type: tools.TypeString, Required: true, Description: "Session whose messages to read."},
	tools.Prop{Name: "limit", Type: tools.TypeInteger, Description: "How many of the latest messages to return, 1 to 200. Default 50."},
)

func (*history) Name() string { return "sessions_history" }
func (*history) Description() string {
	return "Read the latest messages of a session this session may see, oldest first."
}
func (*history) Schema() json.RawMessage { return historySchema }
func (*history) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	return run(env, raw, historySchema, func(b tools.Sessions, a tools.Args) (json.RawMessage, error) {
		key, err := a.String("sessionKey", true)
		if err != nil {
			return nil, err
		}
		limit, err := a.Int("limit", false, 1, MaxHistory)
		if err != nil {
			return nil, err
		}
		if limit == 0 {
			limit = 50
		}
		return b.History(ctx, key, limit)
	})
}

type send struct{}

var sendSchema = tools.Object(
	tools.Prop{Name: "sessionKey", Type: tools.TypeString, Required: true, Description: "Session to send the message to."},
	tools.Prop{Name: "message", Type: tools.TypeString, Required: true, Description: "The message, as a user turn in that session."},
)

func (*send) Name() string { return "sessions_send" }
func (*send) Description() string {
	return "Send a message into another session this session may see and wait for its reply, which is returned."
}
func (*send) Schema() json.RawMessage { return sendSchema }
func (*send) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	return run(env, raw, sendSchema, func(b tools.Sessions, a tools.Args) (json.RawMessage, error) {
		key, err := a.String("sessionKey", true)
		if err != nil {
			return nil, err
		}
		msg, err := a.String("message", true)
		if err != nil {
			return nil, err
		}
		if key == env.SessionKey {
			return nil, errors.New("a session cannot send to itself")
		}
		return b.Send(ctx, env.SessionKey, key, msg)
	})
}
