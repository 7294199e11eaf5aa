package sessions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"talon/internal/tools"
)

// recorder is a tools.Sessions that records what the tools asked for.
type recorder struct{ calls []string }

func (r *recorder) rec(s string) (json.RawMessage, error) {
	r.calls = append(r.calls, s)
	return json.RawMessage(`{"ok":true}`), nil
}
func (r *recorder) Status(_ context.Context, k string) (json.RawMessage, error) {
	return r.rec("status " + k)
}
func (r *recorder) List(_ context.Context, a string, n int) (json.RawMessage, error) {
	return r.rec("list " + a + " " + itoa(n))
}
func (r *recorder) History(_ context.Context, k string, n int) (json.RawMessage, error) {
	return r.rec("history " + k + " " + itoa(n))
}
func (r *recorder) Send(_ context.Context, from, to, m string) (json.RawMessage, error) {
	return r.rec("send " + from + " " + to + " " + m)
}
func (r *recorder) Spawn(_ context.Context, s tools.SpawnRequest) (json.RawMessage, error) {
	b, _ := json.Marshal(s)
	return r.rec("spawn " + string(b))
}
func (r *recorder) Subagents(_ context.Context, s tools.SubagentsRequest) (json.RawMessage, error) {
	b, _ := json.Marshal(s)
	return r.rec("subagents " + string(b))
}
func (r *recorder) Yield(_ context.Context, m string) (json.RawMessage, error) {
	return r.rec("yield " + m)
}
func (r *recorder) AgentsList(context.Context) (json.RawMessage, error) { return r.rec("agents") }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestSessionTools(t *testing.T) {
	byName := map[string]tools.Tool{}
	for _, tl := range All() {
		if err := tools.LintSchema(tl.Schema()); err != nil {
			t.Errorf("%s schema: %v", tl.Name(), err)
		}
		byName[tl.Name()] = tl
	}
	cases := []struct {
		tool, args string
		want       string // recorded call, or the error text when errText
		errText    bool
	}{
		{"session_status", `{}`, "status agent:main:cur", false},
		{"session_status", `{"sessionKey":"agent:main:x"}`, "status agent:main:x", false},
		{"sessions_list", `{}`, "list main 50", false},
		{"sessions_list", `{"limit":500}`, "limit", true},
		{"sessions_history", `{"sessionKey":"k","limit":3}`, "history k 3", false},
		{"sessions_history", `{}`, `missing required argument "sessionKey"`, true},
		{"sessions_send", `{"sessionKey":"agent:main:b","message":"hi"}`, "send agent:main:cur agent:main:b hi", false},
		{"sessions_send", `{"sessionKey":"agent:main:cur","message":"hi"}`, "cannot send to itself", true},
		{"sessions_spawn", `{"task":"count","label":"c"}`, `spawn {"Task":"count","Label":"c","AgentID":"","Model":"","RunTimeoutSeconds":null,"Delete":false,"Announce":true,"RequireSandbox":false}`, false},
		{"sessions_spawn", `{"task":"t","agentId":"ops","model":"x/y","runTimeoutSeconds":0,"mode":"run","cleanup":"delete","expectsCompletionMessage":false,"sandbox":"require"}`,
			`spawn {"Task":"t","Label":"","AgentID":"ops","Model":"x/y","RunTimeoutSeconds":0,"Delete":true,"Announce":false,"RequireSandbox":true}`, false},
		{"sessions_spawn", `{"task":"count","extra":1}`, `unknown argument "extra"`, true},
		{"sessions_spawn", `{"task":"count","channel":"telegram"}`, `does not support "channel"; remove channel-delivery parameters`, true},
		{"sessions_spawn", `{"task":"count","timeoutSeconds":5}`, `Use "runTimeoutSeconds"`, true},
		{"sessions_spawn", `{"task":"count","mode":"session"}`, "needs a thread binding", true},
		{"sessions_spawn", `{"task":"count","runTimeoutSeconds":-1}`, "runTimeoutSeconds", true},
		{"sessions_spawn", `{"task":"count","cleanup":"archive"}`, "cleanup", true},
		{"sessions_spawn", `{"label":"c"}`, `missing required argument "task"`, true},
		{"sessions_spawn", `{"task":"` + strings.Repeat("x", MaxTaskBytes+1) + `"}`, "at most", true},
		{"subagents", `{}`, `subagents {"Action":"list","Target":"","Message":"","RecentMinutes":30}`, false},
		{"subagents", `{"action":"steer","target":"2","message":"focus"}`, `subagents {"Action":"steer","Target":"2","Message":"focus","RecentMinutes":30}`, false},
		{"subagents", `{"action":"kill"}`, `missing required argument "target"`, true},
		{"subagents", `{"action":"steer","target":"last"}`, `missing required argument "message"`, true},
		{"subagents", `{"action":"wait"}`, "action", true},
		{"subagents", `{"recentMinutes":0}`, "recentMinutes", true},
		{"sessions_yield", `{"message":"waiting for 2"}`, "yield waiting for 2", false},
		{"agents_list", `{}`, "agents", false},
		{"agents_list", `{"x":1}`, `unknown argument "x"`, true},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			rec := &recorder{}
			env := &tools.Env{AgentID: "main", SessionKey: "agent:main:cur", Sessions: rec}
			res, err := byName[c.tool].Run(context.Background(), env, json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			if c.errText {
				if !res.IsError || !strings.Contains(res.Text, c.want) {
					t.Errorf("result %+v, want an error containing %q", res, c.want)
				}
				return
			}
			if res.IsError || len(rec.calls) != 1 || rec.calls[0] != c.want {
				t.Errorf("result %+v calls %q, want %q", res, rec.calls, c.want)
			}
		})
	}
	y, _ := byName["sessions_yield"].Run(context.Background(), &tools.Env{Sessions: &recorder{}}, nil)
	if y.IsError || !y.EndTurn {
		t.Errorf("sessions_yield accepted does not end the turn: %+v", y)
	}
	if y, _ := byName["sessions_yield"].Run(context.Background(), &tools.Env{}, nil); y.EndTurn {
		t.Errorf("a refused sessions_yield ends the turn: %+v", y)
	}
	res, _ := byName["sessions_list"].Run(context.Background(), &tools.Env{}, nil)
	if !res.IsError || !strings.Contains(res.Text, "not available") {
		t.Errorf("without a backend: %+v", res)
	}
}
