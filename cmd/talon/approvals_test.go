package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/approval"
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
