package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/approval"
	"talon/protocol"
	"talon/protocol/client"
)

func TestApprovalsGetSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	out, errs, code := talon(t, "", "approvals", "get", "--state-dir", dir, "--json")
	if code != 0 {
		t.Fatalf("get on a missing file: %d %s", code, errs)
	}
	var view struct {
		Exists bool
		Hash   string
	}
	if err := json.Unmarshal([]byte(out), &view); err != nil || view.Exists || view.Hash != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("get = %s (%v)", out, err)
	}

	file := `{"version":1,"socket":{"path":"/s","token":"secret"},"agents":{"main":{"security":"allowlist","ask":"nope","allowlist":["/usr/bin/git"]}}}`
	out, errs, code = talon(t, file, "approvals", "set", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "hash: ") || !strings.Contains(errs, `agents.main.ask: unknown value "nope" dropped`) {
		t.Fatalf("set: %d\n%s\n%s", code, out, errs)
	}
	hash := strings.TrimSpace(strings.SplitN(out, "hash: ", 2)[1])

	out, _, code = talon(t, "", "approvals", "get", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "hash: "+hash) || !strings.Contains(out, `"pattern": "/usr/bin/git"`) || strings.Contains(out, "secret") {
		t.Fatalf("get after set: %d\n%s", code, out)
	}

	_, errs, code = talon(t, file, "approvals", "set", "--state-dir", dir)
	if code != 2 || !strings.Contains(errs, "exec approvals base hash required") {
		t.Errorf("set without --base-hash: %d %s", code, errs)
	}
	_, errs, code = talon(t, file, "approvals", "set", "--state-dir", dir, "--base-hash", strings.Repeat("0", 64))
	if code != 2 || !strings.Contains(errs, "exec approvals changed since last load; re-run exec.approvals.get and retry") {
		t.Errorf("set with a stale --base-hash: %d %s", code, errs)
	}
	_, errs, code = talon(t, `{"version":2}`, "approvals", "set", "--state-dir", dir, "--base-hash", hash)
	if code != 2 || !strings.Contains(errs, "version must be 1") {
		t.Errorf("set of a bad file: %d %s", code, errs)
	}
	if _, errs, code = talon(t, `{"version":1}`, "approvals", "set", "--state-dir", dir, "--base-hash", hash); code != 0 {
		t.Errorf("set with the right hash: %d %s", code, errs)
	}

	os.WriteFile(filepath.Join(dir, "exec-approvals.json"), []byte("{oops"), 0o600)
	out, errs, code = talon(t, "", "approvals", "get", "--state-dir", dir)
	if code != 1 || !strings.Contains(errs, "exec is denied until it is fixed") || !strings.Contains(out, `"security": "deny"`) {
		t.Errorf("get of a corrupt file: %d\n%s\n%s", code, out, errs)
	}
}

// TestApprovalsResolveArgs: bad arguments exit 2 before anything is
// dialled; a gateway that cannot be reached exits 1.
func TestApprovalsResolveArgs(t *testing.T) {
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"approvals", "resolve", "abc", "allow"}, 2, `decision "allow": use allow-once, allow-always or deny`},
		{[]string{"approvals", "resolve", " ", "deny"}, 2, "empty id"},
		{[]string{"approvals", "resolve", "abc"}, 2, "accepts 2 arg(s)"},
		{[]string{"approvals", "pending", "extra"}, 2, "unknown command"},
		{[]string{"approvals", "pending", "--url", "http://x"}, 2, `--url "http://x": want ws://HOST:PORT`},
		{[]string{"approvals", "pending", "--timeout", "soon"}, 2, `--timeout "soon"`},
		{[]string{"approvals", "resolve", "abc", "deny", "--url", "ws://127.0.0.1:1", "--token", "x"}, 1, "connecting to ws://127.0.0.1:1"},
	}
	for _, c := range cases {
		_, errs, code := talon(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.err)
		}
	}
}

func TestPrintPending(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	var b strings.Builder
	printPending(&b, nil, now)
	if b.String() != "No exec approvals pending.\n" {
		t.Errorf("empty: %q", b.String())
	}
	b.Reset()
	printPending(&b, []approval.RequestedPayload{
		{ID: "0123456789abcdef", ExpiresAtMs: 1_000_000 + 90_000, Request: approval.Request{AgentID: "main", SessionKey: "agent:main:main", Host: approval.HostGateway, Cwd: "/w", Command: "ls\ntouch x"}},
		{ID: "fedcba9876543210", ExpiresAtMs: 999_000, Request: approval.Request{AgentID: "ops", SessionKey: "agent:ops:main", Host: approval.HostSandbox, Cwd: "/workspace", Command: strings.Repeat("y", 300)}},
	}, now)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") ||
		!strings.Contains(lines[1], "01234567  1m30s") || !strings.HasSuffix(lines[1], `ls\ntouch x`) ||
		!strings.Contains(lines[2], "fedcba98  0s") || !strings.HasSuffix(lines[2], strings.Repeat("y", 200)+"…") {
		t.Errorf("table:\n%s", b.String())
	}
}

// approvalsConfig is a gateway with no sandbox: exec runs on the gateway
// host under the default policy (allowlist, ask on-miss), and the offline
// inspect model calls the tools a "/call" line names.
const approvalsConfig = `{gateway: {port: %d, auth: {token: %q}}}`

// TestApprovalsPendingResolve: against a running gateway, with an operator
// client connected (so exec asks instead of falling back), `approvals
// pending` lists the command a turn asked about and `approvals resolve`
// decides it; the outcome reaches the session's history as a system event.
func TestApprovalsPendingResolve(t *testing.T) {
	state, wsURL := startGatewayConfig(t, approvalsConfig)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op, err := client.Dial(ctx, wsURL, client.Options{Token: callToken, Scopes: []string{protocol.ScopeApprovals, protocol.ScopeRead}})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	httpURL := "http" + strings.TrimPrefix(wsURL, "ws")
	const session = "agent:main:cli-approvals"

	ask := func(command string) (id string) {
		t.Helper()
		answer := chatTurn(t, httpURL, "cli-approvals", `/call exec {"command":"`+command+`"}`)
		if !strings.HasPrefix(answer, "Approval required (id ") {
			t.Fatalf("not approval-pending: %s", answer)
		}
		var d struct{ ApprovalID string }
		lines := strings.Split(answer, "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &d); err != nil || d.ApprovalID == "" {
			t.Fatalf("details: %v: %s", err, answer)
		}
		return d.ApprovalID
	}
	args := func(a ...string) []string { return append(a, "--state-dir", state) }

	id := ask("touch ran && echo done")
	out, errs, code := talon(t, "", args("approvals", "pending")...)
	if code != 0 || !strings.Contains(out, approval.Slug(id)+"  ") || !strings.Contains(out, session) || !strings.HasSuffix(out, "touch ran && echo done\n") {
		t.Fatalf("pending: %d\n%s\n%s", code, out, errs)
	}
	out, _, code = talon(t, "", args("approvals", "pending", "--json")...)
	var list struct{ Approvals []approval.RequestedPayload }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Approvals) != 1 || list.Approvals[0].ID != id ||
		list.Approvals[0].Request.Host != approval.HostGateway {
		t.Fatalf("pending --json: %d %s", code, out)
	}
	if out, errs, code = talon(t, "", args("approvals", "resolve", approval.Slug(id), "allow-once")...); code != 0 || out != approval.Slug(id)+": allow-once\n" {
		t.Fatalf("resolve: %d %q %s", code, out, errs)
	}
	want := "System: Exec finished (gateway id=" + id + ", session=" + session + ", code 0)\ndone"
	waitHistory(ctx, t, op, session, want)
	if _, err := os.Stat(filepath.Join(state, "workspace", "ran")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	if _, errs, code = talon(t, "", args("approvals", "resolve", id, "deny")...); code != 1 || !strings.Contains(errs, "unknown or expired approval id") {
		t.Errorf("a second resolve: %d %s", code, errs)
	}

	id = ask("touch denied")
	if _, errs, code = talon(t, "", args("approvals", "resolve", id[:10], "deny")...); code != 0 {
		t.Fatalf("deny: %d %s", code, errs)
	}
	waitHistory(ctx, t, op, session, "System: Exec denied (gateway id="+id+", user-denied): touch denied")
	if _, err := os.Stat(filepath.Join(state, "workspace", "denied")); err == nil {
		t.Error("the denied command ran")
	}
	if out, _, code = talon(t, "", args("approvals", "pending")...); code != 0 || out != "No exec approvals pending.\n" {
		t.Errorf("pending at the end: %d %q", code, out)
	}
}

// chatTurn sends one user message to the session over the HTTP endpoint
// and returns the answer.
func chatTurn(t *testing.T, httpURL, session, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "openclaw", "messages": []map[string]string{{"role": "user", "content": text}}})
	req, err := http.NewRequest(http.MethodPost, httpURL+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+callToken)
	req.Header.Set("X-OpenClaw-Session-Key", session)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK || len(out.Choices) != 1 {
		t.Fatalf("chat: %d %v %+v", res.StatusCode, err, out)
	}
	return out.Choices[0].Message.Content
}

// waitHistory waits until the session's last message is the system event
// want. The approved command runs in the background after the resolve
// answers, so the history is read until it shows up (or ctx ends).
func waitHistory(ctx context.Context, t *testing.T, op *client.Client, session, want string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		var h struct {
			Messages []struct {
				Role    string
				Content []struct{ Text string }
				Meta    struct{ SystemEvent bool } `json:"__openclaw"`
			}
		}
		if err := op.Call(ctx, "chat.history", map[string]string{"sessionKey": session}, &h); err != nil {
			t.Fatal(err)
		}
		if n := len(h.Messages); n > 0 && len(h.Messages[n-1].Content) > 0 {
			m := h.Messages[n-1]
			last = m.Content[0].Text
			if last == want && m.Role == "user" && m.Meta.SystemEvent {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the history never ended with %q; last %q", want, last)
}
