package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ocNodeRun is the output of node/openclaw_node.mjs.
type ocNodeRun struct {
	Node         string              `json:"node"`
	OpenClawNode string              `json:"openclawNode"`
	Cases        map[string]nodeCase `json:"cases"`
	Events       []struct {
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
	} `json:"events"`
	Frames []struct {
		Dir   string `json:"dir"`
		Frame string `json:"frame"`
	} `json:"frames"`
}

// chunk is one item of openclaw-node's chat() stream.
type chunk struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	RunID string `json:"runId"`
}

// historyMessage is a transcript message of chat.history.
type historyMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is a message's content as text: a string, or its text parts.
func (m historyMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return string(m.Content)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// approvalConfig is the default tenant's config for the openclaw-node
// test: every exec command on the gateway host waits for an operator
// (spec §4.4: allowlist with ask "always" prompts whatever the analysis).
func approvalConfig(t *testing.T, stateDir string) {
	t.Helper()
	type obj = map[string]any
	data, err := json.MarshalIndent(obj{
		"gateway": obj{"auth": obj{"token": defaultToken}},
		"agents":  obj{"list": []obj{{"id": "main", "default": true}}},
		"tools":   obj{"exec": obj{"host": "gateway", "security": "allowlist", "ask": "always"}},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "talon.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOpenClawNode drives the WebSocket control plane with the npm package
// openclaw-node@0.14.0, unchanged: connect (challenge, connect, hello-ok),
// health, config.get, sessions.list, a chat turn streamed through the
// `agent` method with the inspect model, the transcript, an exec approval
// resolved by the client (allow-once) whose outcome reaches the
// transcript, and a wrong token that must end the connect attempt.
func TestOpenClawNode(t *testing.T) {
	t.Parallel()
	needCommands(t, "node", "npm")
	needNodePackage(t, nodeDir(), "openclaw-node")
	needNodePackage(t, nodeDir(), "ws")
	dir := t.TempDir()
	approvalConfig(t, dir)
	s := startServerIn(t, dir)
	wsURL := "ws" + strings.TrimPrefix(s.base, "http")

	// HOME: openclaw-node would put its device identity under ~/.openclaw
	// if the script did not give it a path; a scratch HOME makes sure.
	var out ocNodeRun
	runNode(t, 150*time.Second, append(cleanEnv("NODE_OPTIONS", "OPENCLAW_*", "HOME"), "HOME="+t.TempDir()), &out,
		"openclaw_node.mjs", wsURL, defaultToken)
	t.Logf("node %s, openclaw-node %s", out.Node, out.OpenClawNode)

	// frames is the conversation, for a failure message: the first and
	// the last 80 frames (polling the transcript makes many).
	frames := func() string {
		var b strings.Builder
		for i, f := range out.Frames {
			if i == 80 && len(out.Frames) > 160 {
				fmt.Fprintf(&b, "… %d frames left out …\n", len(out.Frames)-160)
			}
			if i < 80 || i >= len(out.Frames)-80 {
				b.WriteString(f.Dir + " " + f.Frame + "\n")
			}
		}
		return b.String()
	}
	// result decodes one step's result, failing when the step threw (a
	// step after a failed connect does not run).
	result := func(t *testing.T, name string, v any) {
		t.Helper()
		decodeCase(t, out.Cases, name, v)
	}

	t.Run("connect", func(t *testing.T) {
		var hello struct {
			Type     string   `json:"type"`
			Protocol int      `json:"protocol"`
			Methods  []string `json:"methods"`
			Events   []string `json:"events"`
			Auth     *struct {
				Role        string   `json:"role"`
				Scopes      []string `json:"scopes"`
				DeviceToken *string  `json:"deviceToken"`
			} `json:"auth"`
			IsConnected bool `json:"isConnected"`
		}
		result(t, "connect", &hello)
		if hello.Type != "hello-ok" || hello.Protocol != 4 || !hello.IsConnected {
			t.Errorf("hello: type %q protocol %d connected %v, want hello-ok, 4 (openclaw-node asks for 4 only), true", hello.Type, hello.Protocol, hello.IsConnected)
		}
		// What this client calls must be advertised: hasMethod() is how
		// applications discover them.
		for _, m := range []string{"health", "config.get", "sessions.list", "agent", "chat.history", "exec.approval.resolve"} {
			if !slices.Contains(hello.Methods, m) {
				t.Errorf("features.methods lacks %s: %v", m, hello.Methods)
			}
		}
		for _, e := range []string{"agent", "chat", "exec.approval.requested", "exec.approval.resolved", "tick"} {
			if !slices.Contains(hello.Events, e) {
				t.Errorf("features.events lacks %s: %v", e, hello.Events)
			}
		}
		if hello.Auth == nil {
			t.Fatal("hello-ok has no auth (protocol 4 always carries role and scopes)")
		}
		if hello.Auth.Role != "operator" {
			t.Errorf("auth.role %q, want operator", hello.Auth.Role)
		}
		for _, sc := range []string{"operator.read", "operator.write", "operator.approvals"} {
			if !slices.Contains(hello.Auth.Scopes, sc) {
				t.Errorf("auth.scopes %v lacks the requested %s", hello.Auth.Scopes, sc)
			}
		}
		// openclaw-node stores a device token and sends it instead of the
		// shared token from then on; a shared-token client gets none.
		if hello.Auth.DeviceToken != nil {
			t.Errorf("auth.deviceToken issued to a shared-token client: %q", *hello.Auth.DeviceToken)
		}
	})

	t.Run("health", func(t *testing.T) {
		var h map[string]any
		result(t, "health", &h)
		if h == nil {
			t.Fatal("health payload is not an object")
		}
		if ok, has := h["ok"]; has && ok != true {
			t.Errorf("health ok = %v", ok)
		}
	})

	t.Run("config.get", func(t *testing.T) {
		var c struct {
			Keys   []string       `json:"keys"`
			Hash   *string        `json:"hash"`
			Config map[string]any `json:"config"`
			Raw    string         `json:"raw"`
		}
		result(t, "config.get", &c)
		if c.Hash == nil || *c.Hash == "" {
			t.Errorf("config.get has no hash (keys %v)", c.Keys)
		}
		if c.Raw != "string" {
			t.Errorf("config.get raw is a %s, want a string", c.Raw)
		}
		if c.Config == nil {
			t.Fatalf("config.get has no config object (keys %v)", c.Keys)
		}
		data, _ := json.Marshal(c.Config)
		if bytes.Contains(data, []byte(defaultToken)) {
			t.Errorf("config.get shows the gateway token: %s", data)
		}
		if !bytes.Contains(data, []byte(`"always"`)) {
			t.Errorf("config.get does not show the written tools.exec.ask: %s", data)
		}
	})

	t.Run("sessions.list", func(t *testing.T) {
		var l struct {
			Count    *int              `json:"count"`
			Sessions []json.RawMessage `json:"sessions"`
		}
		result(t, "sessions.list", &l)
		if l.Count == nil || l.Sessions == nil {
			t.Errorf("sessions.list: count %v, sessions %v; want both", l.Count, l.Sessions)
		}
	})

	var streamed string
	t.Run("chat", func(t *testing.T) {
		var chunks []chunk
		result(t, "chat", &chunks)
		checkStream(t, chunks)
		for _, c := range chunks {
			if c.Type == "text" {
				streamed += c.Text
			}
		}
	})

	t.Run("chat.history", func(t *testing.T) {
		var h struct {
			SessionKey string           `json:"sessionKey"`
			Messages   []historyMessage `json:"messages"`
		}
		result(t, "chat.history", &h)
		if h.SessionKey != "agent:main:e2e-openclaw-node" {
			t.Errorf("sessionKey %q", h.SessionKey)
		}
		var user, assistant bool
		for _, m := range h.Messages {
			user = user || m.Role == "user" && strings.Contains(m.text(), "hello from openclaw-node")
			assistant = assistant || m.Role == "assistant" && streamed != "" && m.text() == streamed
		}
		if !user || !assistant {
			t.Errorf("transcript has the user message: %v, the streamed answer %q: %v; messages:\n%s", user, streamed, assistant, dump(h.Messages))
		}
	})

	t.Run("approval", func(t *testing.T) {
		var chunks []chunk
		result(t, "approval.chat", &chunks)
		checkStream(t, chunks)
		// The command waits: exec answers approval-pending (spec §4.5).
		if !slices.ContainsFunc(chunks, func(c chunk) bool {
			return c.Type == "tool_result" && strings.Contains(c.Text, `"status":"approval-pending"`)
		}) {
			t.Errorf("no exec tool_result with approval-pending in %+v", chunks)
		}

		var r struct {
			Requested *struct {
				ID      string `json:"id"`
				Request struct {
					Command    string `json:"command"`
					SessionKey string `json:"sessionKey"`
				} `json:"request"`
				ExpiresAtMs int64 `json:"expiresAtMs"`
			} `json:"requested"`
			ResolveResult *struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			} `json:"resolveResult"`
			ResolvedEvent *struct {
				ID       string `json:"id"`
				Decision string `json:"decision"`
			} `json:"resolvedEvent"`
		}
		result(t, "approval.resolved", &r)
		if r.Requested == nil || r.Requested.ID == "" {
			t.Fatal("no exec.approval.requested with an id reached the approver")
		}
		if !strings.HasPrefix(r.Requested.Request.Command, "echo talon-e2e-approved-") || r.Requested.Request.SessionKey != "agent:main:e2e-approval" || r.Requested.ExpiresAtMs == 0 {
			t.Errorf("exec.approval.requested: command %q session %q expiresAtMs %d", r.Requested.Request.Command, r.Requested.Request.SessionKey, r.Requested.ExpiresAtMs)
		}
		if r.ResolveResult == nil || !r.ResolveResult.OK {
			t.Errorf("exec.approval.resolve: %+v", r.ResolveResult)
		}
		if r.ResolvedEvent == nil || r.ResolvedEvent.ID != r.Requested.ID || r.ResolvedEvent.Decision != "allow-once" {
			t.Errorf("exec.approval.resolved: %+v, want id %s decision allow-once", r.ResolvedEvent, r.Requested.ID)
		}

		var h struct {
			Marker   string           `json:"marker"`
			Found    bool             `json:"found"`
			Event    historyMessage   `json:"event"`
			Messages []historyMessage `json:"messages"`
		}
		result(t, "approval.history", &h)
		if !h.Found {
			t.Fatalf("the transcript never showed \"Exec finished (…)\" with the command's output %q; messages:\n%s", h.Marker, dump(h.Messages))
		}
		if text := h.Event.text(); !strings.Contains(text, "id="+r.Requested.ID) || !strings.Contains(text, "code 0)") {
			t.Errorf("system event %q: want the approval id %s and code 0", text, r.Requested.ID)
		}
	})

	t.Run("badToken", func(t *testing.T) {
		var b struct {
			Connected bool   `json:"connected"`
			Error     string `json:"error"`
		}
		result(t, "badToken", &b)
		// openclaw-node ignores a failed connect res: only a close ends
		// the attempt, so a server that does not close hangs it.
		if b.Connected || b.Error != "WebSocket closed before handshake completed" {
			t.Errorf("wrong token: connected %v, error %q; want the connect rejected by a close", b.Connected, b.Error)
		}
	})

	if t.Failed() {
		t.Logf("the conversation (frames both ways, each cut to 600 characters):\n%s", frames())
	}
}

// checkStream checks one chat() stream of openclaw-node: the run started,
// streamed text, ended, and the final response closed the stream, all
// under one runId.
func checkStream(t *testing.T, chunks []chunk) {
	t.Helper()
	var types []string
	var text string
	for _, c := range chunks {
		types = append(types, c.Type)
		if c.Type == "text" {
			text += c.Text
		}
		if c.Type == "error" {
			t.Errorf("error chunk: %q", c.Text)
		}
		if c.RunID == "" || c.RunID != chunks[0].RunID {
			t.Errorf("chunk %+v: runId differs from the first chunk's %q", c, chunks[0].RunID)
		}
	}
	if len(types) < 4 || types[0] != "agent_start" || types[len(types)-1] != "done" || !slices.Contains(types, "agent_end") || text == "" {
		t.Errorf("chunks %v with text %q; want agent_start, text…, agent_end, done", types, text)
	}
}

// dump is v as indented JSON, for failure messages.
func dump(v any) string {
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}
