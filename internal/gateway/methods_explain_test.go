package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
	"talon/internal/policy"
	"talon/internal/sandbox"
	"talon/internal/tools"
	"talon/protocol"
	"talon/protocol/client"
)

// explainConfig has a second agent with its own deny list, a group policy
// and sandboxes on a docker socket that does not exist, so the backend
// check fails the same way on every machine.
const explainConfig = `,
  "tools": {"profile": "coding", "deny": ["browser"]},
  "agents": {
    "defaults": {"sandbox": {"mode": "non-main", "backend": "docker", "docker": {"socket": "/nonexistent/docker.sock"}}},
    "list": [{"id": "main", "default": true}, {"id": "work", "tools": {"deny": ["exec"]}}]
  },
  "channels": {"whatsapp": {"groups": {"*": {"tools": {"deny": ["write"]}, "toolsBySender": {"username:alice": {"allow": ["read", "write"]}}}}}}`

func TestExplainMethodErrors(t *testing.T) {
	_, url := startWS(t, explainConfig)
	ctx := context.Background()
	c, err := client.Dial(ctx, url, client.Options{Token: wsToken, Scopes: []string{protocol.ScopeRead}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cases := []struct {
		method string
		params any
		want   string
	}{
		{"tools.explain", nil, "invalid tools.explain params: pass exactly one of agentId or sessionKey"},
		{"tools.explain", map[string]any{"agentId": "work", "sessionKey": "agent:work:x"}, "invalid tools.explain params: pass exactly one of agentId or sessionKey"},
		{"tools.explain", map[string]any{"agentId": 5}, "invalid tools.explain params: agentId must be a string, not number"},
		{"tools.explain", map[string]any{"agentId": "ghost"}, `invalid tools.explain params: agent "ghost" is not in the config (agents.list)`},
		{"tools.explain", map[string]any{"sessionKey": "agent:ghost:x"}, `invalid tools.explain params: agent "ghost" is not in the config (agents.list)`},
		{"tools.explain", map[string]any{"sessionKey": "agent:work:\x01"}, "invalid tools.explain params: invalid session key: contains a control character"},
		{"tools.explain", map[string]any{"sessionKey": strings.Repeat("k", 600)}, "invalid tools.explain params: invalid session key: longer than 512 bytes"},
		{"tools.explain", map[string]any{"agentId": "work", "model": "gpt-5.2"}, "invalid tools.explain params: model needs provider"},
		{"tools.explain", map[string]any{"agentId": "work", "channel": strings.Repeat("c", 300)}, "invalid tools.explain params: channel is longer than 256 bytes"},
		{"tools.explain", map[string]any{"agentId": "work", "sender": map[string]any{"name": "a\nb"}}, "invalid tools.explain params: sender.name contains a control character"},
		{"tools.explain", map[string]any{"agentId": "work", "sender": "alice"}, "invalid tools.explain params: sender must be an object, not string"},
		{"tools.explain", map[string]any{"agentId": "work", "pluginTools": []any{map[string]any{"name": "x"}}}, "invalid tools.explain params: pluginTools[0] needs a name and a pluginId"},
		{"tools.explain", map[string]any{"agentId": "work", "pluginTools": []any{map[string]any{"name": "x", "pluginId": "p", "origin": "moon"}}},
			"invalid tools.explain params: pluginTools[0].origin must be bundled, global, workspace or config"},
		{"tools.explain", map[string]any{"agentId": "work", "pluginTools": make([]map[string]any, 257)}, "invalid tools.explain params: pluginTools has 257 entries, at most 256 are allowed"},
		{"sandbox.explain", nil, "invalid sandbox.explain params: agentId is required"},
		{"sandbox.explain", map[string]any{"agentId": "ghost"}, `invalid sandbox.explain params: agent "ghost" is not in the config (agents.list)`},
		{"sandbox.explain", map[string]any{"agentId": "main", "sessionKey": "agent:main:\x7f"}, "invalid sandbox.explain params: invalid session key: contains a control character"},
		{"sandbox.explain", map[string]any{"agentId": "main", "sessionKey": "agent:work:x"}, "sandbox.explain: session agent:work:x belongs to agent work, not main"},
		{"sandbox.explain", []int{1}, "invalid sandbox.explain params: params must be an object"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.want, func(t *testing.T) {
			err := c.Call(ctx, tc.method, tc.params, nil)
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidRequest || pe.Message != tc.want {
				t.Fatalf("err = %v, want INVALID_REQUEST %q", err, tc.want)
			}
		})
	}

	none, err := client.Dial(ctx, url, client.Options{Token: wsToken, Scopes: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	for _, m := range []string{"tools.explain", "sandbox.explain"} {
		if err := none.Call(ctx, m, map[string]any{"agentId": "main"}, nil); err == nil || !strings.Contains(err.Error(), "missing scope: operator.read") {
			t.Errorf("%s without read: %v", m, err)
		}
	}
}

// TestExplainMethods checks that the methods answer what the package
// functions behind `talon tools explain` and `talon sandbox explain`
// answer for the same run, and a few facts of that answer.
func TestExplainMethods(t *testing.T) {
	ts, url := startWS(t, explainConfig)
	ctx := context.Background()
	c, err := client.Dial(ctx, url, client.Options{Token: wsToken, Scopes: []string{protocol.ScopeRead}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := config.Load(filepath.Join(ts.dir, "talon.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config
	yes := true

	toolCases := []struct {
		name   string
		params map[string]any
		ctx    policy.Context
		// available and removed name rows of the answer to check.
		available, removed []string
	}{
		{"agent", map[string]any{"agentId": "Work"},
			policy.Context{AgentID: "work", SessionKey: "agent:work:main"}, []string{"read", "write"}, []string{"exec", "browser"}},
		{"group sender", map[string]any{"sessionKey": "agent:main:whatsapp:group:g1", "sender": map[string]any{"username": "alice"}, "owner": true},
			policy.Context{SessionKey: "agent:main:whatsapp:group:g1", Sender: policy.Sender{Username: "alice"}, SenderIsOwner: true}, []string{"read", "write"}, []string{"exec"}},
		{"group other", map[string]any{"sessionKey": "agent:main:whatsapp:group:g1", "sender": map[string]any{"id": "bob"}},
			policy.Context{SessionKey: "agent:main:whatsapp:group:g1", Sender: policy.Sender{ID: "bob"}}, []string{"read", "exec"}, []string{"write"}},
		{"provider plugins sandboxed", map[string]any{
			"agentId": "main", "provider": "openai", "model": "gpt-5.2", "channel": "slack", "sandboxed": true,
			"pluginTools": []any{map[string]any{"name": "gen", "pluginId": "img", "optional": true, "origin": "config"}, map[string]any{"name": "pub", "pluginId": "api"}},
		}, policy.Context{
			AgentID: "main", SessionKey: "agent:main:main", ModelProvider: "openai", ModelID: "gpt-5.2", MessageProvider: "slack", Sandboxed: &yes,
			Plugins: []policy.Registration{{Name: "gen", Plugin: "img", Optional: true, Origin: policy.OriginConfig}, {Name: "pub", Plugin: "api", Origin: policy.OriginBundled}},
		}, []string{"read"}, []string{"gen", "pub"}},
	}
	for _, tc := range toolCases {
		t.Run("tools "+tc.name, func(t *testing.T) {
			raw, err := c.CallRaw(ctx, "tools.explain", tc.params)
			if err != nil {
				t.Fatal(err)
			}
			// Built: the core registry and memory-core's tools (the
			// memory slot's default); a declared plugin tool is built.
			built := append(ts.srv.tools.Names(), policy.MemoryTools...)
			want := policy.Explain(cfg, tc.ctx, policy.CandidateTools(cfg), policy.Inventory{Built: built})
			tools.PriceExplanation(&want, ts.srv.tools)
			wantJSON, _ := json.Marshal(&want)
			// The answer is the explanation plus the agent's plugins.
			var split struct {
				policy.Explanation
				Plugins []struct {
					ID      string `json:"id"`
					Enabled bool   `json:"enabled"`
					Reason  string `json:"reason"`
				} `json:"plugins"`
			}
			if err := json.Unmarshal(raw, &split); err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := json.Marshal(&split.Explanation)
			if diff := cmp.Diff(string(wantJSON), string(gotJSON)); diff != "" {
				t.Fatalf("tools.explain differs from policy.Explain (-want +got):\n%s", diff)
			}
			if i := slices.IndexFunc(split.Plugins, func(p struct {
				ID      string `json:"id"`
				Enabled bool   `json:"enabled"`
				Reason  string `json:"reason"`
			}) bool {
				return p.ID == "api-tools"
			}); i < 0 || split.Plugins[i].Enabled || split.Plugins[i].Reason != "bundled (disabled by default)" {
				t.Errorf("plugins = %+v, want api-tools listed, off by default", split.Plugins)
			}
			var got policy.Explanation
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			rows := map[string]policy.ToolRow{}
			for _, r := range got.Tools {
				rows[r.Name] = r
			}
			for _, n := range tc.available {
				if r, ok := rows[n]; !ok || !r.Available {
					t.Errorf("%s: row %+v, want available", n, r)
				}
			}
			for _, n := range tc.removed {
				if r, ok := rows[n]; !ok || r.Available || r.Removal == nil || r.Reason == "" {
					t.Errorf("%s: row %+v, want removed with a reason", n, r)
				}
			}
			for _, n := range []string{"canvas", "nodes"} {
				if r := rows[n]; r.Available || r.State != policy.StateNotBuilt || r.Reason != policy.ReasonNotBuilt || r.Fix != "" {
					t.Errorf("%s: row %+v, want not built in Talon, without a fix", n, r)
				}
			}
			if rows["read"].Tokens == 0 {
				t.Error("read is not priced")
			}
		})
	}

	for _, tc := range []struct {
		name, agent, key string
		params           map[string]any
		sandboxed        bool
	}{
		{"main session", "main", "agent:main:main", map[string]any{"agentId": "main"}, false},
		{"group", "work", "agent:work:whatsapp:group:1", map[string]any{"agentId": "work", "sessionKey": "agent:work:whatsapp:group:1"}, true},
	} {
		t.Run("sandbox "+tc.name, func(t *testing.T) {
			raw, err := c.CallRaw(ctx, "sandbox.explain", tc.params)
			if err != nil {
				t.Fatal(err)
			}
			want, err := sandbox.Explain(ctx, cfg, ts.dir, tc.agent, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := json.Marshal(want)
			if diff := cmp.Diff(string(wantJSON), string(raw)); diff != "" {
				t.Fatalf("sandbox.explain differs from sandbox.Explain (-want +got):\n%s", diff)
			}
			var got sandbox.Explanation
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.Plan.Sandboxed != tc.sandboxed || got.Plan.SessionKey != tc.key || got.Backend.Name != "docker" || got.Backend.Usable || got.Backend.Problem == "" {
				t.Fatalf("plan = %+v, backend = %+v", got.Plan, got.Backend)
			}
		})
	}
}

// TestExplainMatchesRun: for every agent, the rows tools.explain calls
// available are, in order, the tools a real run offers the model (the
// inspect model answers "/tools" with their names), and a plugin tool
// of another agent's workspace is neither available to this agent nor
// flagged as a tool nothing provides.
func TestExplainMatchesRun(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{
  "gateway": {"auth": {"token": "`+wsToken+`"}},
  "plugins": {"entries": {"api-tools": {"enabled": true}}},
  "agents": {"defaults": {"model": "inspect"}, "list": [
    {"id": "main", "default": true},
    {"id": "coder", "workspace": "ws-coder", "tools": {"deny": ["web_fetch"]}},
    {"id": "social", "workspace": "ws-social", "tools": {"alsoAllow": ["publish_linkedin", "canvas"]}}
  ]}
}`))
	writeFile(t, filepath.Join(dir, "ws-social", "api-tools", "publish_linkedin.yaml"), []byte(`name: publish_linkedin
description: Publish a post
parameters:
  text:
    type: string
    description: The post
    required: true
request:
  method: POST
  url: "https://api.example.com/posts"
allowed_hosts: [api.example.com]
`))
	ts := startServer(t, dir, nil)
	c := dialWS(t, "ws"+strings.TrimPrefix(ts.url, "http"))
	for _, tc := range []struct {
		agent, model string
		has, lacks   []string
	}{
		{"main", "openclaw", []string{"read", "web_fetch", "memory_search", "browser"}, []string{"publish_linkedin", "canvas"}},
		{"coder", "openclaw/coder", []string{"exec"}, []string{"web_fetch", "publish_linkedin", "canvas"}},
		{"social", "openclaw/social", []string{"publish_linkedin", "web_fetch", "browser"}, []string{"canvas"}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			// The HTTP endpoint's caller is the owner: explain it as one.
			x := mustCall[policy.Explanation](t, c, "tools.explain", map[string]any{"agentId": tc.agent, "owner": true})
			r := ts.post(map[string]string{"Authorization": "Bearer " + wsToken},
				`{"model":"`+tc.model+`","messages":[{"role":"user","content":"/tools"}]}`)
			if r.status != 200 {
				t.Fatalf("chat: %d %s", r.status, r.body)
			}
			offered := strings.Split(r.content, "\n")
			if diff := cmp.Diff(offered, x.Available()); diff != "" {
				t.Errorf("available rows differ from the tools the model is offered (-offered +explain):\n%s", diff)
			}
			if x.Counts.Available != len(offered) || x.Counts.AllowedNotBuilt == 0 {
				t.Errorf("counts = %+v, want %d available and some the policy allows but Talon lacks", x.Counts, len(offered))
			}
			for _, n := range tc.has {
				if !slices.Contains(offered, n) {
					t.Errorf("%s is not offered: %v", n, offered)
				}
			}
			for _, n := range tc.lacks {
				if slices.Contains(x.Available(), n) {
					t.Errorf("%s is available to %s", n, tc.agent)
				}
			}
			for _, f := range x.Findings {
				if f.Code == policy.CodeUnknownTool && strings.Contains(f.Message, "publish_linkedin") {
					t.Errorf("publish_linkedin, which social's api-tools provide, is flagged: %+v", f)
				}
			}
			_, canvasNamed := findCode(x.Findings, policy.CodeNotBuilt)
			if canvasNamed != (tc.agent == "social") {
				t.Errorf("tool-not-built finding for canvas: %v, want it for social only; findings %+v", canvasNamed, x.Findings)
			}
		})
	}
}

func findCode(fs []policy.Finding, code string) (policy.Finding, bool) {
	for _, f := range fs {
		if f.Code == code {
			return f, true
		}
	}
	return policy.Finding{}, false
}
