package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"talon/internal/agent"
	"talon/internal/llm"
	"talon/internal/session"
	"talon/internal/store"
	"talon/protocol"
	"talon/protocol/client"
)

// sessionsConfig has two agents and a provider whose catalog has a
// reasoning model, for the model and thinkingLevel rules.
const sessionsConfig = `,"agents":{"list":[{"id":"main","default":true},{"id":"ops"}]},
"models":{"providers":{"local":{"baseUrl":"http://127.0.0.1:9/v1","api":"openai-completions",
"models":[{"id":"big","reasoning":true,"contextWindow":128000},{"id":"small"}]}}}`

// rpc calls a method and returns its payload or its error message ("" on
// success); an error that is not INVALID_REQUEST is reported with its
// code.
func rpc(t *testing.T, c *client.Client, method string, params any) (json.RawMessage, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := c.CallRaw(ctx, method, params)
	var pe *protocol.Error
	switch {
	case err == nil:
		return raw, ""
	case errors.As(err, &pe) && pe.Code == protocol.CodeInvalidRequest:
		return nil, pe.Message
	case errors.As(err, &pe):
		return nil, pe.Code + ": " + pe.Message
	}
	t.Fatalf("%s: %v", method, err)
	return nil, ""
}

// mustRPC calls a method that must succeed and decodes its payload.
func mustRPC(t *testing.T, c *client.Client, method string, params, out any) {
	t.Helper()
	raw, msg := rpc(t, c, method, params)
	if msg != "" {
		t.Fatalf("%s %v: %s", method, params, msg)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v in %s", method, err, raw)
		}
	}
}

type patchResult struct {
	OK       bool          `json:"ok"`
	Path     string        `json:"path"`
	Key      string        `json:"key"`
	Entry    session.Entry `json:"entry"`
	Resolved struct {
		ModelProvider string `json:"modelProvider"`
		Model         string `json:"model"`
	} `json:"resolved"`
}

// TestSessionsPatchMessages sends every kind of bad sessions.patch through
// the WS method and checks OpenClaw's message (spec §5.3).
func TestSessionsPatchMessages(t *testing.T) {
	_, url := startWS(t, sessionsConfig)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "agent:ops:taken", "label": "Taken"}, nil)
	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "agent:main:subagent:s1", "spawnedBy": "agent:main:main", "spawnDepth": 1}, nil)
	long := strings.Repeat("é", session.MaxLabelLen+1)
	cases := []struct {
		name  string
		patch map[string]any
		want  string
	}{
		{"no key", map[string]any{"label": "x"}, "invalid sessions.patch params: key is required"},
		{"key not a string", map[string]any{"key": 5}, "invalid sessions.patch params: key must be a string"},
		{"empty key", map[string]any{"key": " "}, "invalid sessions.patch params: key is required"},
		{"control character in key", map[string]any{"key": "a\x01b"}, "invalid session key: contains a control character"},
		{"unknown agent", map[string]any{"key": "agent:ghost:main"}, `unknown agent "ghost" (session agent:ghost:main): add it to agents.list first`},
		{"unknown field", map[string]any{"key": "main", "bogus": 1}, `invalid sessions.patch params: unexpected property "bogus"`},
		{"label not a string", map[string]any{"key": "main", "label": 3}, "invalid label: must be a string"},
		{"label empty", map[string]any{"key": "main", "label": "  "}, "invalid label: empty"},
		{"label too long", map[string]any{"key": "main", "label": long}, "invalid label: too long (max 512)"},
		{"label in use in the agent", map[string]any{"key": "agent:ops:other", "label": "Taken"}, "label already in use: Taken"},
		{"thinkingLevel unknown", map[string]any{"key": "main", "thinkingLevel": "loud"}, "invalid thinkingLevel (use off|minimal|low|medium|high)"},
		{"thinkingLevel not a string", map[string]any{"key": "main", "thinkingLevel": 2}, "invalid thinkingLevel (use off|minimal|low|medium|high)"},
		{"thinkingLevel xhigh on inspect", map[string]any{"key": "main", "thinkingLevel": "xhigh"}, `thinkingLevel "xhigh" is not supported for talon/inspect (use off|minimal|low|medium|high)`},
		{"thinkingLevel xhigh on a model without reasoning", map[string]any{"key": "main", "model": "local/small", "thinkingLevel": "x-high"}, `thinkingLevel "xhigh" is not supported for local/small (use off|minimal|low|medium|high)`},
		{"thinkingLevel max", map[string]any{"key": "main", "thinkingLevel": "max"}, `thinkingLevel "max" is not supported for talon/inspect (use off|minimal|low|medium|high)`},
		{"thinkingLevel unknown on a reasoning model", map[string]any{"key": "main", "model": "local/big", "thinkingLevel": "?"}, "invalid thinkingLevel (use off|minimal|low|medium|high|xhigh)"},
		{"verboseLevel", map[string]any{"key": "main", "verboseLevel": "loud"}, `invalid verboseLevel (use "on"|"off"|"full")`},
		{"reasoningLevel", map[string]any{"key": "main", "reasoningLevel": "deep"}, `invalid reasoningLevel (use "on"|"off"|"stream")`},
		{"responseUsage", map[string]any{"key": "main", "responseUsage": "all"}, `invalid responseUsage (use "off"|"tokens"|"full")`},
		{"elevatedLevel", map[string]any{"key": "main", "elevatedLevel": "root"}, `invalid elevatedLevel (use "on"|"off"|"ask"|"full")`},
		{"execHost", map[string]any{"key": "main", "execHost": "cloud"}, `invalid execHost (use "sandbox"|"gateway"|"node")`},
		{"execSecurity", map[string]any{"key": "main", "execSecurity": "some"}, `invalid execSecurity (use "deny"|"allowlist"|"full")`},
		{"execAsk", map[string]any{"key": "main", "execAsk": "never"}, `invalid execAsk (use "off"|"on-miss"|"always")`},
		{"execNode empty", map[string]any{"key": "main", "execNode": " "}, "invalid execNode: empty"},
		{"execNode not a string", map[string]any{"key": "main", "execNode": true}, "invalid execNode: must be a string"},
		{"sendPolicy", map[string]any{"key": "main", "sendPolicy": "maybe"}, `invalid sendPolicy (use "allow"|"deny")`},
		{"groupActivation", map[string]any{"key": "main", "groupActivation": "never"}, `invalid groupActivation (use "mention"|"always")`},
		{"model empty", map[string]any{"key": "main", "model": " "}, "invalid model: empty"},
		{"model not a string", map[string]any{"key": "main", "model": 4}, "invalid model: must be a string or null"},
		{"model outside the catalog", map[string]any{"key": "main", "model": "local/huge"}, "model not allowed: local/huge"},
		{"model of an unknown provider", map[string]any{"key": "main", "model": "nope/x"}, "model not allowed: nope/x"},
		{"bare model of the inspect provider", map[string]any{"key": "main", "model": "big"}, "model not allowed: talon/big"},
		{"spawnedBy on a plain session", map[string]any{"key": "main", "spawnedBy": "agent:main:main"}, "spawnedBy is only supported for subagent:* sessions"},
		{"spawnDepth on a plain session", map[string]any{"key": "main", "spawnDepth": 1}, "spawnDepth is only supported for subagent:* sessions"},
		{"spawnDepth negative", map[string]any{"key": "agent:main:subagent:s2", "spawnDepth": -1}, "invalid spawnDepth (use an integer >= 0)"},
		{"spawnedBy changed", map[string]any{"key": "agent:main:subagent:s1", "spawnedBy": "agent:main:other"}, "spawnedBy cannot be changed once set"},
		{"spawnDepth changed", map[string]any{"key": "agent:main:subagent:s1", "spawnDepth": 2}, "spawnDepth cannot be changed once set"},
		{"spawnedBy cleared", map[string]any{"key": "agent:main:subagent:s1", "spawnedBy": nil}, "spawnedBy cannot be cleared once set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, msg := rpc(t, admin, "sessions.patch", tc.patch)
			if msg != tc.want {
				t.Errorf("got %q\nwant %q", msg, tc.want)
			}
		})
	}
	// Nothing was written by the refused patches.
	var list listResult
	mustRPC(t, admin, "sessions.list", nil, &list)
	if keys := list.keys(); !slices.Equal(keys, []string{"agent:main:subagent:s1", "agent:ops:taken"}) {
		t.Errorf("sessions after refused patches = %v", keys)
	}
}

// TestSessionsPatchApplies: accepted values are normalised and stored,
// null clears, the model sets or clears the override, and the result
// echoes the canonical key.
func TestSessionsPatchApplies(t *testing.T) {
	_, url := startWS(t, sessionsConfig+`,"session":{"mainKey":"home"}`)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	steps := []struct {
		name  string
		patch map[string]any
		check func(r patchResult) string
	}{
		{"create with aliases and case", map[string]any{"key": "MAIN", "label": " Mine ", "verboseLevel": " ON ", "responseUsage": "on", "thinkingLevel": "Think-Hard"},
			func(r patchResult) string {
				e := r.Entry
				if r.Key != "agent:main:home" || e.Label != "Mine" || e.VerboseLevel != "on" || e.ResponseUsage != "tokens" || e.ThinkingLevel != "low" || e.SessionID == "" {
					return fmt.Sprintf("%+v", r)
				}
				if r.Resolved.ModelProvider != "talon" || r.Resolved.Model != "inspect" || !strings.HasSuffix(r.Path, StoreFile) {
					return fmt.Sprintf("resolved %+v path %q", r.Resolved, r.Path)
				}
				return ""
			}},
		{"exec fields", map[string]any{"key": "agent:main:main", "execHost": "Gateway", "execSecurity": "allowlist", "execAsk": "on-miss", "execNode": "Mac-1", "elevatedLevel": "off"},
			func(r patchResult) string {
				e := r.Entry
				if e.ExecHost != "gateway" || e.ExecSecurity != "allowlist" || e.ExecAsk != "on-miss" || e.ExecNode != "Mac-1" || e.ElevatedLevel != "off" || e.Label != "Mine" {
					return fmt.Sprintf("%+v", e)
				}
				return ""
			}},
		{"a model from the catalog", map[string]any{"key": "home", "model": "LOCAL/Big", "thinkingLevel": "xhigh"},
			func(r patchResult) string {
				e := r.Entry
				if e.ProviderOverride != "local" || e.ModelOverride != "big" || e.ThinkingLevel != "xhigh" || r.Resolved.Model != "big" || r.Resolved.ModelProvider != "local" {
					return fmt.Sprintf("%+v %+v", e, r.Resolved)
				}
				return ""
			}},
		{"a model without xhigh lowers the level", map[string]any{"key": "home", "model": "local/small"},
			func(r patchResult) string {
				if r.Entry.ModelOverride != "small" || r.Entry.ThinkingLevel != "high" {
					return fmt.Sprintf("%+v", r.Entry)
				}
				return ""
			}},
		{"the agent's own model clears the override", map[string]any{"key": "home", "model": "inspect"},
			func(r patchResult) string {
				if r.Entry.ModelOverride != "" || r.Entry.ProviderOverride != "" || r.Resolved.Model != "inspect" {
					return fmt.Sprintf("%+v", r.Entry)
				}
				return ""
			}},
		{"null clears", map[string]any{"key": "home", "label": nil, "execHost": nil, "thinkingLevel": nil, "model": nil, "reasoningLevel": "off"},
			func(r patchResult) string {
				e := r.Entry
				if e.Label != "" || e.ExecHost != "" || e.ThinkingLevel != "" || e.ReasoningLevel != "" || e.ExecSecurity != "allowlist" {
					return fmt.Sprintf("%+v", e)
				}
				return ""
			}},
		{"labels are per agent", map[string]any{"key": "agent:ops:home", "label": "Shared"},
			func(r patchResult) string {
				if r.Key != "agent:ops:home" || r.Entry.Label != "Shared" {
					return fmt.Sprintf("%+v", r)
				}
				return ""
			}},
		{"the same label under another agent", map[string]any{"key": "home", "label": "Shared"},
			func(r patchResult) string {
				if r.Entry.Label != "Shared" {
					return fmt.Sprintf("%+v", r)
				}
				return ""
			}},
	}
	var sessionID string
	for _, st := range steps {
		var r patchResult
		mustRPC(t, admin, "sessions.patch", st.patch, &r)
		if !r.OK {
			t.Fatalf("%s: ok = false", st.name)
		}
		if msg := st.check(r); msg != "" {
			t.Errorf("%s: %s", st.name, msg)
		}
		if r.Key == "agent:main:home" {
			if sessionID != "" && r.Entry.SessionID != sessionID {
				t.Errorf("%s: sessionId changed from %s to %s", st.name, sessionID, r.Entry.SessionID)
			}
			sessionID = r.Entry.SessionID
		}
	}
}

// TestSessionsScopes: listing needs read, changing needs write, and the
// fields that change what commands may do on the host need admin.
func TestSessionsScopes(t *testing.T) {
	_, url := startWS(t, sessionsConfig)
	none := dialWS(t, url, noScopes...)
	read := dialWS(t, url, protocol.ScopeRead)
	write := dialWS(t, url, protocol.ScopeWrite)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	cases := []struct {
		c      *client.Client
		method string
		params map[string]any
		want   string
	}{
		{none, "sessions.list", nil, "missing scope: operator.read"},
		{none, "chat.history", map[string]any{"sessionKey": "main"}, "missing scope: operator.read"},
		{read, "sessions.list", nil, ""},
		{read, "chat.history", map[string]any{"sessionKey": "main"}, ""},
		{read, "sessions.patch", map[string]any{"key": "main", "label": "x"}, "missing scope: operator.write"},
		{read, "sessions.reset", map[string]any{"key": "main"}, "missing scope: operator.write"},
		{read, "sessions.delete", map[string]any{"key": "x"}, "missing scope: operator.write"},
		{write, "sessions.list", nil, ""},
		{write, "sessions.patch", map[string]any{"key": "main", "label": "x", "verboseLevel": "on", "model": "local/big"}, ""},
		{write, "sessions.patch", map[string]any{"key": "main", "execHost": "gateway"}, "missing scope: operator.admin"},
		{write, "sessions.patch", map[string]any{"key": "main", "execSecurity": nil}, "missing scope: operator.admin"},
		{write, "sessions.patch", map[string]any{"key": "main", "execAsk": "off"}, "missing scope: operator.admin"},
		{write, "sessions.patch", map[string]any{"key": "main", "execNode": "n"}, "missing scope: operator.admin"},
		{write, "sessions.patch", map[string]any{"key": "main", "elevatedLevel": "full"}, "missing scope: operator.admin"},
		{write, "sessions.reset", map[string]any{"key": "main"}, ""},
		{write, "sessions.delete", map[string]any{"key": "x"}, ""},
		{admin, "sessions.patch", map[string]any{"key": "main", "execHost": "gateway", "elevatedLevel": "full"}, ""},
	}
	for i, tc := range cases {
		if _, msg := rpc(t, tc.c, tc.method, tc.params); msg != tc.want {
			t.Errorf("case %d %s %v: got %q, want %q", i, tc.method, tc.params, msg, tc.want)
		}
	}
}

type listResult struct {
	Ts       int64  `json:"ts"`
	Path     string `json:"path"`
	Count    int    `json:"count"`
	Defaults struct {
		ModelProvider string   `json:"modelProvider"`
		Model         string   `json:"model"`
		ContextTokens *float64 `json:"contextTokens"`
	} `json:"defaults"`
	Sessions []sessionRow `json:"sessions"`
}

func (l listResult) keys() []string {
	out := []string{}
	for _, s := range l.Sessions {
		out = append(out, s.Key)
	}
	return out
}

// tenantStore is the default tenant's store, opened by an earlier call.
func tenantStore(t *testing.T, ts *testServer) *store.DB {
	t.Helper()
	rt, err := ts.srv.defaultTenant.current(ts.srv)
	if err != nil {
		t.Fatal(err)
	}
	return rt.runner.Store
}

// TestSessionsList covers the filters, the row shape and the parameter
// checks.
func TestSessionsList(t *testing.T) {
	ts, url := startWS(t, sessionsConfig)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	for _, p := range []map[string]any{
		{"key": "main", "label": "Home", "thinkingLevel": "low", "execNode": "mac"},
		{"key": "agent:ops:main", "model": "local/big"},
		{"key": "agent:ops:group:room", "label": "Room"},
		{"key": "agent:main:subagent:kid", "spawnedBy": "agent:main:main", "spawnDepth": 1},
		{"key": "Project-X"},
		{"key": "global"},
		{"key": "unknown"},
	} {
		mustRPC(t, admin, "sessions.patch", p, nil)
	}
	// An old session, two days back.
	db := tenantStore(t, ts)
	old := time.Now().Add(-48 * time.Hour).UnixMilli()
	if err := db.PutSession(context.Background(), "main", "agent:main:old", session.Entry{SessionID: "old-id", UpdatedAt: old, DisplayName: "Archive"}); err != nil {
		t.Fatal(err)
	}
	// A session with only a system event, then one a person talked in,
	// with a system event after the answer: titles and previews are what
	// people said.
	sink := agent.TranscriptSink(db)
	if err := sink(context.Background(), "main", "agent:main:events", "Exec denied (gateway id=1, user-denied): rm -rf /"); err != nil {
		t.Fatal(err)
	}
	rep := ts.post(map[string]string{"Authorization": "Bearer " + wsToken}, `{"model":"openclaw","user":"Bob","messages":[{"role":"user","content":"  What is\n the   plan for today, and how long will the whole thing take?  "}]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("chat: %d %s", rep.status, rep.body)
	}
	if err := sink(context.Background(), "main", "agent:main:openai-user:bob", "Exec finished (gateway id=2, session=s, code 0)"); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		params map[string]any
		want   []string // keys, newest first (sets are sorted when order is by time ties)
	}{
		{"default leaves out global and unknown", nil, []string{"agent:main:openai-user:bob", "agent:main:events", "agent:main:project-x", "agent:main:subagent:kid", "agent:ops:group:room", "agent:ops:main", "agent:main:main", "agent:main:old"}},
		{"includeGlobal and includeUnknown", map[string]any{"includeGlobal": true, "includeUnknown": true}, []string{"agent:main:openai-user:bob", "agent:main:events", "unknown", "global", "agent:main:project-x", "agent:main:subagent:kid", "agent:ops:group:room", "agent:ops:main", "agent:main:main", "agent:main:old"}},
		{"limit", map[string]any{"limit": 2}, []string{"agent:main:openai-user:bob", "agent:main:events"}},
		{"agentId", map[string]any{"agentId": "OPS", "includeGlobal": true}, []string{"agent:ops:group:room", "agent:ops:main"}},
		{"label", map[string]any{"label": " Home "}, []string{"agent:main:main"}},
		{"spawnedBy canonicalised", map[string]any{"spawnedBy": "main"}, []string{"agent:main:subagent:kid"}},
		{"search matches key, label, displayName", map[string]any{"search": "ROOM"}, []string{"agent:ops:group:room"}},
		{"search by displayName", map[string]any{"search": "archive"}, []string{"agent:main:old"}},
		{"activeMinutes", map[string]any{"activeMinutes": 60}, []string{"agent:main:openai-user:bob", "agent:main:events", "agent:main:project-x", "agent:main:subagent:kid", "agent:ops:group:room", "agent:ops:main", "agent:main:main"}},
		{"filters and limit together", map[string]any{"search": "ops", "limit": 1}, []string{"agent:ops:group:room"}},
		{"an agent with no sessions", map[string]any{"agentId": "nobody"}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l listResult
			mustRPC(t, admin, "sessions.list", tc.params, &l)
			got := l.keys()
			// Sessions patched in the same millisecond tie on updatedAt and
			// are ordered by key; compare as sets where ties can differ.
			if !sameKeys(got, tc.want) {
				t.Errorf("keys = %v\nwant   %v", got, tc.want)
			}
			if l.Count != len(l.Sessions) || !strings.HasSuffix(l.Path, StoreFile) || l.Ts == 0 {
				t.Errorf("count %d path %q ts %d", l.Count, l.Path, l.Ts)
			}
		})
	}

	var l listResult
	mustRPC(t, admin, "sessions.list", map[string]any{"includeDerivedTitles": true, "includeLastMessage": true, "includeGlobal": true}, &l)
	rows := map[string]sessionRow{}
	for _, r := range l.Sessions {
		rows[r.Key] = r
	}
	bob := rows["agent:main:openai-user:bob"]
	if bob.DerivedTitle != "What is the plan for today, and how long will the whole thi…" || !strings.HasPrefix(bob.LastMessagePreview, "inspect: system prompt") {
		t.Errorf("title %q preview %q", bob.DerivedTitle, bob.LastMessagePreview)
	}
	if ev := rows["agent:main:events"]; ev.DerivedTitle != "" || ev.LastMessagePreview != "" {
		t.Errorf("a session of system events only: title %q preview %q", ev.DerivedTitle, ev.LastMessagePreview)
	}
	if m := rows["agent:main:main"]; m.Kind != "direct" || m.Label != "Home" || m.ThinkingLevel != "low" || m.ExecNode != "mac" || m.Model != "inspect" || m.ModelProvider != "talon" || m.DerivedTitle != "" {
		t.Errorf("main row = %+v", m)
	}
	if o := rows["agent:ops:main"]; o.Model != "big" || o.ModelProvider != "local" || o.ModelOverride != "big" || o.ContextTokens == nil || *o.ContextTokens != 128000 {
		t.Errorf("ops row = %+v", o)
	}
	if g := rows["agent:ops:group:room"]; g.Kind != "group" {
		t.Errorf("group row = %+v", g)
	}
	if g := rows["global"]; g.Kind != "global" {
		t.Errorf("global row = %+v", g)
	}
	if k := rows["agent:main:subagent:kid"]; k.SpawnedBy != "agent:main:main" || k.SpawnDepth == nil || *k.SpawnDepth != 1 {
		t.Errorf("subagent row = %+v", k)
	}
	// The offline model's window is the default one (context.md R2.1).
	if l.Defaults.Model != "inspect" || l.Defaults.ModelProvider != "talon" || l.Defaults.ContextTokens == nil || *l.Defaults.ContextTokens != 200_000 {
		t.Errorf("defaults = %+v", l.Defaults)
	}

	bad := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"limit": 0}, "invalid sessions.list params: limit must be an integer from 1 to 10000"},
		{map[string]any{"limit": 2.5}, "invalid sessions.list params: limit must be an integer from 1 to 10000"},
		{map[string]any{"limit": 10001}, "invalid sessions.list params: limit must be an integer from 1 to 10000"},
		{map[string]any{"limit": "5"}, "invalid sessions.list params: limit must be a number, not string"},
		{map[string]any{"activeMinutes": 0}, "invalid sessions.list params: activeMinutes must be an integer from 1 to 5256000"},
		{map[string]any{"activeMinutes": -3}, "invalid sessions.list params: activeMinutes must be an integer from 1 to 5256000"},
		{map[string]any{"includeGlobal": "yes"}, "invalid sessions.list params: includeGlobal must be a boolean, not string"},
		{map[string]any{"label": ""}, "invalid sessions.list params: label must be a non-empty string of at most 512 characters"},
		{map[string]any{"label": strings.Repeat("x", 513)}, "invalid sessions.list params: label must be a non-empty string of at most 512 characters"},
		{map[string]any{"spawnedBy": " "}, "invalid sessions.list params: spawnedBy must be a non-empty session key"},
		{map[string]any{"agentId": ""}, "invalid sessions.list params: agentId must be a non-empty agent id"},
		{map[string]any{"search": strings.Repeat("s", 513)}, "invalid sessions.list params: search must be at most 512 characters"},
		{map[string]any{"search": 3}, "invalid sessions.list params: search must be a string, not number"},
	}
	for _, tc := range bad {
		if _, msg := rpc(t, admin, "sessions.list", tc.params); msg != tc.want {
			t.Errorf("%v: got %q, want %q", tc.params, msg, tc.want)
		}
	}
	if _, msg := rpc(t, admin, "sessions.list", []int{1}); msg != "invalid sessions.list params: params must be an object" {
		t.Errorf("array params: %q", msg)
	}
}

// sameKeys compares two key lists ignoring the order of keys whose rows
// were written in the same millisecond: it checks the same members, that
// the one written last (the chat session) leads and the old one trails.
func sameKeys(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	if len(got) > 0 && strings.Contains(want[0], "openai-user") && got[0] != want[0] {
		return false
	}
	if n := len(want); n > 0 && want[n-1] == "agent:main:old" && got[n-1] != want[n-1] {
		return false
	}
	a, b := slices.Clone(got), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestSessionsResetDelete: reset starts a new transcript and keeps the
// settings; delete removes the row, keeps the transcript and refuses the
// main session; both refuse a session a run holds.
func TestSessionsResetDelete(t *testing.T) {
	ts, url := startWS(t, sessionsConfig)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	auth := map[string]string{"Authorization": "Bearer " + wsToken}
	if rep := ts.post(auth, `{"user":"carol","messages":[{"role":"user","content":"hi"}]}`); rep.status != http.StatusOK {
		t.Fatalf("chat: %d %s", rep.status, rep.body)
	}
	const key = "agent:main:openai-user:carol"
	var p patchResult
	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "Agent:Main:OpenAI-User:Carol", "label": "Carol"}, &p)
	first := p.Entry.SessionID

	var h historyResult
	mustRPC(t, admin, "chat.history", map[string]any{"sessionKey": key}, &h)
	if len(h.Messages) != 2 || h.SessionID != first {
		t.Fatalf("history before reset: %+v", h)
	}

	var r struct {
		OK    bool          `json:"ok"`
		Key   string        `json:"key"`
		Entry session.Entry `json:"entry"`
	}
	mustRPC(t, admin, "sessions.reset", map[string]any{"key": strings.ToUpper(key), "reason": "new"}, &r)
	if !r.OK || r.Key != key || r.Entry.SessionID == first || r.Entry.SessionID == "" || r.Entry.Label != "Carol" {
		t.Fatalf("reset = %+v", r)
	}
	mustRPC(t, admin, "chat.history", map[string]any{"sessionKey": key}, &h)
	if len(h.Messages) != 0 || h.SessionID != r.Entry.SessionID {
		t.Fatalf("history after reset: %+v", h)
	}
	// The old transcript is still in the store.
	db := tenantStore(t, ts)
	if old, err := db.Transcript(context.Background(), first, 0); err != nil || len(old) != 2 {
		t.Fatalf("old transcript: %d messages, %v", len(old), err)
	}

	// A run holding the session: reset and delete are refused at once.
	unlock, err := ts.srv.locks.lock(context.Background(), sessionLockKey(ts.srv.defaultTenant, key))
	if err != nil {
		t.Fatal(err)
	}
	busy := "UNAVAILABLE: Session " + key + " is still active (a run holds it); try again when the run has ended."
	for _, m := range []string{"sessions.reset", "sessions.delete"} {
		if _, msg := rpc(t, admin, m, map[string]any{"key": key}); msg != busy {
			t.Errorf("%s of a held session: %q", m, msg)
		}
	}
	unlock()

	type delResult struct {
		OK       bool     `json:"ok"`
		Key      string   `json:"key"`
		Deleted  bool     `json:"deleted"`
		Archived []string `json:"archived"`
	}
	var d delResult
	mustRPC(t, admin, "sessions.delete", map[string]any{"key": key}, &d)
	if !d.OK || d.Key != key || !d.Deleted || len(d.Archived) != 1 || !strings.HasSuffix(d.Archived[0], StoreFile+"#transcript/"+r.Entry.SessionID) {
		t.Fatalf("delete = %+v", d)
	}
	if _, err := db.GetSession(context.Background(), "main", key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session still there: %v", err)
	}
	mustRPC(t, admin, "sessions.delete", map[string]any{"key": key}, &d)
	if d.Deleted || len(d.Archived) != 0 {
		t.Errorf("second delete = %+v", d)
	}
	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "agent:ops:x"}, nil)
	mustRPC(t, admin, "sessions.delete", map[string]any{"key": "agent:ops:x", "deleteTranscript": false}, &d)
	if !d.Deleted || len(d.Archived) != 0 {
		t.Errorf("delete without transcript = %+v", d)
	}

	bad := []struct {
		method string
		params map[string]any
		want   string
	}{
		{"sessions.reset", map[string]any{}, "invalid sessions.reset params: key is required"},
		{"sessions.reset", map[string]any{"key": "main", "reason": "wipe"}, `invalid sessions.reset params: reason must be "new" or "reset"`},
		{"sessions.reset", map[string]any{"key": 1}, "invalid sessions.reset params: key must be a string, not number"},
		{"sessions.reset", map[string]any{"key": "agent:ghost:x"}, `unknown agent "ghost" (session agent:ghost:x): add it to agents.list first`},
		{"sessions.delete", map[string]any{"key": "main"}, "Cannot delete the main session (agent:main:main)."},
		{"sessions.delete", map[string]any{"key": "agent:ops:MAIN"}, "Cannot delete the main session (agent:ops:main)."},
		{"sessions.delete", map[string]any{"key": "x", "deleteTranscript": "yes"}, "invalid sessions.delete params: deleteTranscript must be a boolean, not string"},
		{"sessions.delete", nil, "invalid sessions.delete params: key is required"},
	}
	for _, tc := range bad {
		if _, msg := rpc(t, admin, tc.method, tc.params); msg != tc.want {
			t.Errorf("%s %v: got %q, want %q", tc.method, tc.params, msg, tc.want)
		}
	}
	// Reset of a session that does not exist creates it.
	mustRPC(t, admin, "sessions.reset", map[string]any{"key": "agent:ops:fresh"}, &r)
	if r.Key != "agent:ops:fresh" || r.Entry.SessionID == "" {
		t.Errorf("reset of a new session = %+v", r)
	}
}

// TestSessionsChangedEvents: patch, reset and delete broadcast
// sessions.changed to clients that can read, and not to a client
// without scopes.
func TestSessionsChangedEvents(t *testing.T) {
	ts, url := startWS(t, sessionsConfig)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	reader := dialWS(t, url, protocol.ScopeRead)
	blind := dialWS(t, url, noScopes...)
	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "Agent:Ops:Work", "label": "W"}, nil)
	mustRPC(t, admin, "sessions.reset", map[string]any{"key": "agent:ops:work"}, nil)
	mustRPC(t, admin, "sessions.delete", map[string]any{"key": "agent:ops:work"}, nil)
	mustRPC(t, admin, "sessions.delete", map[string]any{"key": "agent:ops:work"}, nil) // nothing deleted: no event

	type changed struct {
		SessionKey string `json:"sessionKey"`
		SessionID  string `json:"sessionId"`
		AgentID    string `json:"agentId"`
		Reason     string `json:"reason"`
		Ts         int64  `json:"ts"`
	}
	var got []changed
	for len(got) < 3 {
		select {
		case f, ok := <-reader.Events():
			if !ok {
				t.Fatalf("reader closed after %v", got)
			}
			if f.Event != protocol.EventSessionsChanged {
				continue
			}
			var c changed
			if err := json.Unmarshal(f.Payload, &c); err != nil || f.Seq == nil {
				t.Fatalf("event %+v: %v", f, err)
			}
			got = append(got, c)
		case <-time.After(10 * time.Second):
			t.Fatalf("reader got %v", got)
		}
	}
	for i, want := range []string{"patch", "reset", "delete"} {
		c := got[i]
		if c.Reason != want || c.SessionKey != "agent:ops:work" || c.AgentID != "ops" || c.SessionID == "" || c.Ts == 0 {
			t.Errorf("event %d = %+v, want reason %s", i, c, want)
		}
	}
	if got[0].SessionID == got[1].SessionID || got[1].SessionID != got[2].SessionID {
		t.Errorf("session ids: %+v", got)
	}
	// The blind client sees the shutdown, and nothing of the sessions
	// before it (events reach a client in order).
	ts.stop()
	sawShutdown := false
	for f := range blind.Events() {
		switch f.Event {
		case protocol.EventSessionsChanged:
			t.Errorf("a client without scopes got %s", f.Payload)
		case protocol.EventShutdown:
			sawShutdown = true
		}
	}
	if !sawShutdown {
		t.Error("the blind client saw no shutdown")
	}
	for f := range reader.Events() {
		if f.Event == protocol.EventSessionsChanged {
			t.Errorf("reader got an extra sessions.changed: %s", f.Payload)
		}
	}
}

type historyResult struct {
	SessionKey    string           `json:"sessionKey"`
	SessionID     string           `json:"sessionId"`
	ThinkingLevel string           `json:"thinkingLevel"`
	VerboseLevel  string           `json:"verboseLevel"`
	Messages      []historyMessage `json:"messages"`
}

// historyMessage decodes as historyMessage does not (content parts are
// any): a test view.
type historyView struct {
	Role         string `json:"role"`
	Timestamp    int64  `json:"timestamp"`
	ToolCallID   string `json:"toolCallId"`
	ToolName     string `json:"toolName"`
	IsError      *bool  `json:"isError"`
	StopReason   string `json:"stopReason"`
	ErrorMessage string `json:"errorMessage"`
	Content      []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"content"`
	Meta historyMeta `json:"__openclaw"`
}

func history(t *testing.T, c *client.Client, params map[string]any) (json.RawMessage, []historyView) {
	t.Helper()
	raw, msg := rpc(t, c, "chat.history", params)
	if msg != "" {
		t.Fatalf("chat.history %v: %s", params, msg)
	}
	var out struct {
		Messages []historyView `json:"messages"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return raw, out.Messages
}

// TestChatHistory reads a session a real turn over the HTTP endpoint
// wrote (a tool call and its result, with the inspect model), then checks
// the limits and the caps.
func TestChatHistory(t *testing.T) {
	ts, url := startWS(t, sessionsConfig)
	read := dialWS(t, url, protocol.ScopeRead)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	auth := map[string]string{"Authorization": "Bearer " + wsToken}
	before := time.Now().UnixMilli()
	if rep := ts.post(auth, `{"user":"Alice","messages":[{"role":"user","content":"/call sessions_list {\"limit\":1}"}]}`); rep.status != http.StatusOK {
		t.Fatalf("chat: %d %s", rep.status, rep.body)
	}
	if rep := ts.post(auth, `{"user":"Alice","messages":[{"role":"user","content":"/call no_such_tool {oops"}]}`); rep.status != http.StatusOK {
		t.Fatalf("chat: %d %s", rep.status, rep.body)
	}
	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "agent:main:openai-user:alice", "thinkingLevel": "high", "verboseLevel": "full"}, nil)

	raw, msgs := history(t, read, map[string]any{"sessionKey": "Agent:Main:OpenAI-User:ALICE"})
	var top historyResult
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if top.SessionKey != "agent:main:openai-user:alice" || top.SessionID == "" || top.ThinkingLevel != "high" || top.VerboseLevel != "full" {
		t.Errorf("history = %s", raw)
	}
	roles := []string{}
	for i, m := range msgs {
		roles = append(roles, m.Role)
		if m.Meta.Seq != int64(i+1) || m.Timestamp < before {
			t.Errorf("message %d: seq %d timestamp %d", i, m.Meta.Seq, m.Timestamp)
		}
	}
	want := []string{"user", "assistant", "toolResult", "assistant", "user", "assistant", "toolResult", "assistant"}
	if !slices.Equal(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	if c := msgs[0].Content; len(c) != 1 || c[0].Type != "text" || c[0].Text != `/call sessions_list {"limit":1}` {
		t.Errorf("user message = %+v", msgs[0])
	}
	if c := msgs[1].Content; len(c) != 1 || c[0].Type != "toolCall" || c[0].ID != "call_1" || c[0].Name != "sessions_list" || string(c[0].Arguments) != `{"limit":1}` {
		t.Errorf("tool call = %+v", msgs[1])
	}
	if m := msgs[2]; m.ToolCallID != "call_1" || m.ToolName != "sessions_list" || m.IsError == nil || *m.IsError || len(m.Content) != 1 || !strings.Contains(m.Content[0].Text, "sessions") {
		t.Errorf("tool result = %+v", m)
	}
	if m := msgs[3]; len(m.Content) != 1 || m.Content[0].Text != msgs[2].Content[0].Text {
		t.Errorf("answer = %+v, want the tool result's text", m)
	}
	// Arguments that are not JSON are shown as the model wrote them; the
	// unknown tool's result is an error.
	if c := msgs[5].Content; len(c) != 1 || string(c[0].Arguments) != `"{oops"` {
		t.Errorf("bad-arguments call = %+v", msgs[5])
	}
	if m := msgs[6]; m.IsError == nil || !*m.IsError {
		t.Errorf("unknown tool result = %+v", m)
	}

	// A system event is a user message the display can tell apart.
	if err := agent.TranscriptSink(tenantStore(t, ts))(context.Background(), "main", "agent:main:openai-user:alice", "Exec finished (gateway id=7, session=s, code 0)"); err != nil {
		t.Fatal(err)
	}
	_, msgs = history(t, read, map[string]any{"sessionKey": "agent:main:openai-user:alice"})
	if ev := msgs[len(msgs)-1]; len(msgs) != 9 || ev.Role != "user" || !ev.Meta.SystemEvent || ev.Content[0].Text != "System: Exec finished (gateway id=7, session=s, code 0)" || msgs[0].Meta.SystemEvent {
		t.Errorf("system event = %+v", ev)
	}

	// limit keeps the newest; maxChars cuts texts.
	_, last := history(t, read, map[string]any{"sessionKey": "agent:main:openai-user:alice", "limit": 3, "maxChars": 5})
	if len(last) != 3 || last[0].Role != "toolResult" || last[0].Meta.Seq != 7 || !strings.HasSuffix(last[0].Content[0].Text, truncatedMark) || len([]rune(strings.TrimSuffix(last[0].Content[0].Text, truncatedMark))) != 5 {
		t.Errorf("limit 3, maxChars 5 = %+v", last)
	}

	// Oversized messages and the total cap, on a transcript written
	// straight to the store: a failed turn's record, a 200 KiB message and
	// 60 of 110 KiB (6.4 MiB together).
	db := tenantStore(t, ts)
	ctx := context.Background()
	var p patchResult
	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "big"}, &p)
	sid := p.Entry.SessionID
	if err := db.AppendMessages(ctx, sid,
		llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopAborted, Error: "context canceled", Content: "partial"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c9", Name: "read", Content: strings.Repeat("a", 200<<10)},
	); err != nil {
		t.Fatal(err)
	}
	_, msgs = history(t, read, map[string]any{"sessionKey": "big", "maxChars": historyMaxMaxChars})
	if len(msgs) != 2 || msgs[0].StopReason != "aborted" || msgs[0].ErrorMessage != "context canceled" || msgs[0].Content[0].Text != "partial" {
		t.Fatalf("failed turn = %+v", msgs)
	}
	if m := msgs[1]; m.Content[0].Text != historyOversized || !m.Meta.Truncated || m.Meta.Reason != "oversized" || m.ToolCallID != "c9" || m.ToolName != "read" || m.Role != "toolResult" {
		t.Errorf("oversized = %+v", m)
	}
	// With the default maxChars the same message is cut, not replaced.
	_, msgs = history(t, read, map[string]any{"sessionKey": "big"})
	if got := msgs[1].Content[0].Text; got != strings.Repeat("a", historyDefaultMaxChars)+truncatedMark {
		t.Errorf("default maxChars: %d chars", len(got))
	}
	chunk := strings.Repeat("b", 110<<10)
	batch := make([]llm.Message, 60)
	for i := range batch {
		batch[i] = llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("%02d", i) + chunk}
	}
	if err := db.AppendMessages(ctx, sid, batch...); err != nil {
		t.Fatal(err)
	}
	raw, msgs = history(t, read, map[string]any{"sessionKey": "big", "maxChars": historyMaxMaxChars})
	var sizes struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(raw, &sizes); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, m := range sizes.Messages {
		total += len(m)
	}
	newest := msgs[len(msgs)-1].Content[0].Text
	if total > historyMaxTotalBytes || len(msgs) >= 62 || len(msgs) < 50 || !strings.HasPrefix(newest, "59") {
		t.Errorf("total cap: %d messages, %d bytes, newest %.4q", len(msgs), total, newest)
	}

	bad := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{}, "invalid chat.history params: sessionKey is required"},
		{map[string]any{"sessionKey": "main", "limit": 0}, "invalid chat.history params: limit must be an integer from 1 to 1000"},
		{map[string]any{"sessionKey": "main", "limit": 1001}, "invalid chat.history params: limit must be an integer from 1 to 1000"},
		{map[string]any{"sessionKey": "main", "maxChars": 0}, "invalid chat.history params: maxChars must be an integer from 1 to 500000"},
		{map[string]any{"sessionKey": "main", "maxChars": 1.5}, "invalid chat.history params: maxChars must be an integer from 1 to 500000"},
		{map[string]any{"sessionKey": 7}, "invalid chat.history params: sessionKey must be a string, not number"},
		{map[string]any{"sessionKey": "agent:"}, `invalid session key "agent:": want agent:<agentId>:<rest>`},
	}
	for _, tc := range bad {
		if _, msg := rpc(t, read, "chat.history", tc.params); msg != tc.want {
			t.Errorf("%v: got %q, want %q", tc.params, msg, tc.want)
		}
	}
	// A session that does not exist has no messages.
	raw, msgs = history(t, read, map[string]any{"sessionKey": "nobody"})
	if len(msgs) != 0 || !strings.Contains(string(raw), `"sessionKey":"agent:main:nobody"`) || strings.Contains(string(raw), "sessionId") {
		t.Errorf("missing session: %s", raw)
	}
}

// TestSessionModelOverrideRuns: a model set with sessions.patch is the
// one the session's next turn calls; clearing it goes back to the
// agent's model.
func TestSessionModelOverrideRuns(t *testing.T) {
	model := newScriptedLLM(t)
	ts, url := startWS(t, `,"models":{"providers":{"fake":{"baseUrl":"`+model.srv.URL+`/v1","models":[{"id":"scripted"}]}}}`)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	auth := map[string]string{"Authorization": "Bearer " + wsToken}
	turn := `{"user":"dora","messages":[{"role":"user","content":"hello"}]}`

	var p patchResult
	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "agent:main:openai-user:dora", "model": "fake/scripted"}, &p)
	if p.Resolved.ModelProvider != "fake" || p.Resolved.Model != "scripted" {
		t.Fatalf("resolved = %+v", p.Resolved)
	}
	model.push(scripted{Content: "from the scripted model"})
	if rep := ts.post(auth, turn); rep.status != http.StatusOK || rep.content != "from the scripted model" {
		t.Fatalf("turn with the override: %d %q %s", rep.status, rep.content, rep.body)
	}
	if req := string(model.request(1)); !strings.Contains(req, `"model":"scripted"`) {
		t.Errorf("the model was called with %s", req)
	}

	mustRPC(t, admin, "sessions.patch", map[string]any{"key": "agent:main:openai-user:dora", "model": nil}, &p)
	if rep := ts.post(auth, turn); rep.status != http.StatusOK || !strings.HasPrefix(rep.content, "inspect:") {
		t.Fatalf("turn after clearing: %d %q", rep.status, rep.content)
	}
	if n := model.count(); n != 1 {
		t.Errorf("the scripted model got %d calls, want 1", n)
	}
}

// TestSessionsListTokens: sessions.list rows carry the counters the
// runner writes with each turn: the last turn's input and output, the
// prompt in use, the model's configured window, and Talon's cumulative
// counters, which sessions.reset zeroes.
func TestSessionsListTokens(t *testing.T) {
	model := newScriptedLLM(t) // every answer reports 10 in, 5 out, 15 total
	ts, url := startWS(t, `,"agents":{"defaults":{"model":"fake/scripted"}},
		"models":{"providers":{"fake":{"baseUrl":"`+model.srv.URL+`/v1","models":[{"id":"scripted","contextWindow":32000}]}}}`)
	admin := dialWS(t, url, protocol.ScopeAdmin)
	auth := map[string]string{"Authorization": "Bearer " + wsToken}
	const k = "agent:main:openai-user:erin"
	row := func() sessionRow {
		t.Helper()
		var l listResult
		mustRPC(t, admin, "sessions.list", nil, &l)
		for _, r := range l.Sessions {
			if r.Key == k {
				return r
			}
		}
		t.Fatalf("no row %s in %v", k, l.keys())
		return sessionRow{}
	}
	type counts struct{ In, Out, Total, CumIn, CumOut, CumTotal, Window int64 }
	countsOf := func(r sessionRow) counts {
		c := counts{r.InputTokens, r.OutputTokens, r.TotalTokens, r.CumulativeInputTokens, r.CumulativeOutputTokens, r.CumulativeTotalTokens, 0}
		if r.ContextTokens != nil {
			c.Window = *r.ContextTokens
		}
		return c
	}
	for i := range 2 {
		model.push(scripted{Content: fmt.Sprintf("answer %d", i)})
		if rep := ts.post(auth, `{"user":"erin","messages":[{"role":"user","content":"hello"}]}`); rep.status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i, rep.status, rep.body)
		}
	}
	if got, want := countsOf(row()), (counts{10, 5, 10, 20, 10, 30, 32000}); got != want {
		t.Errorf("after two turns: %+v, want %+v", got, want)
	}
	mustRPC(t, admin, "sessions.reset", map[string]any{"key": k}, nil)
	if got, want := countsOf(row()), (counts{Window: 32000}); got != want {
		t.Errorf("after a reset: %+v, want %+v", got, want)
	}
}
