package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"talon/protocol"
)

// TestExecApprovalOverWS: a run's exec asks, the approval event reaches
// approvers only, an operator lists and resolves it by prefix, a second
// resolve fails, and the command's outcome lands in the session.
func TestExecApprovalOverWS(t *testing.T) {
	_, url := startWS(t, "")
	approver := dialWS(t, url, protocol.ScopeApprovals, protocol.ScopeRead)
	writer := dialWS(t, url, protocol.ScopeWrite)
	const key = "agent:main:approve"
	mustRPC(t, writer, "chat.send", map[string]any{
		"sessionKey": key, "idempotencyKey": "ap-1",
		"message": `/call exec {"command":"echo approved-ran"}`,
	}, nil)

	var requested struct {
		ID      string `json:"id"`
		Request struct {
			Command    string `json:"command"`
			SessionKey string `json:"sessionKey"`
			Host       string `json:"host"`
		} `json:"request"`
		ExpiresAtMs int64 `json:"expiresAtMs"`
	}
	waitEvent(t, approver, protocol.EventApprovalRequest, &requested)
	if requested.Request.Command != "echo approved-ran" || requested.Request.SessionKey != key || requested.Request.Host != "gateway" || requested.ExpiresAtMs == 0 {
		t.Fatalf("requested = %+v", requested)
	}
	var list struct {
		Approvals []struct{ ID string } `json:"approvals"`
	}
	mustRPC(t, approver, "exec.approval.list", nil, &list)
	if len(list.Approvals) != 1 || list.Approvals[0].ID != requested.ID {
		t.Fatalf("list = %+v, want %s", list, requested.ID)
	}
	if _, msg := rpc(t, writer, "exec.approval.resolve", map[string]any{"id": requested.ID, "decision": "allow-once"}); msg != "missing scope: operator.approvals" {
		t.Fatalf("writer resolve: %q", msg)
	}
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"decision": "allow-once"}, "invalid exec.approval.resolve params: id is required"},
		{map[string]any{"id": requested.ID, "decision": "sure"}, `invalid decision "sure"`},
		{map[string]any{"id": "zz-none", "decision": "deny"}, "unknown or expired approval id"},
	} {
		if _, msg := rpc(t, approver, "exec.approval.resolve", tc.params); !strings.HasPrefix(msg, tc.want) {
			t.Errorf("resolve %v: %q, want %q", tc.params, msg, tc.want)
		}
	}
	mustRPC(t, approver, "exec.approval.resolve", map[string]any{"id": requested.ID[:8], "decision": "allow-once"}, nil)
	var resolved struct {
		ID       string  `json:"id"`
		Decision *string `json:"decision"`
	}
	waitEvent(t, approver, protocol.EventApprovalResolved, &resolved)
	if resolved.ID != requested.ID || resolved.Decision == nil || *resolved.Decision != "allow-once" {
		t.Fatalf("resolved = %+v", resolved)
	}
	if _, msg := rpc(t, approver, "exec.approval.resolve", map[string]any{"id": requested.ID, "decision": "allow-once"}); !strings.HasPrefix(msg, "unknown or expired approval id") {
		t.Fatalf("second resolve: %q", msg)
	}
	// The command runs in the background; its outcome becomes a system
	// event in the session.
	deadline := time.Now().Add(20 * time.Second)
	for {
		raw, msg := rpc(t, approver, "chat.history", map[string]any{"sessionKey": key})
		if msg != "" {
			t.Fatal(msg)
		}
		if strings.Contains(string(raw), "Exec finished") {
			if !strings.Contains(string(raw), "approved-ran") {
				t.Fatalf("the event lacks the output: %s", raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Exec finished event in the history: %s", raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The writer, without operator.approvals, saw neither event.
	for {
		select {
		case f := <-writer.Events():
			if strings.HasPrefix(f.Event, "exec.approval") {
				t.Fatalf("a client without operator.approvals got %s", f.Event)
			}
			continue
		default:
		}
		break
	}
}

// waitEvent reads events until one named name arrives and decodes it.
func waitEvent(t *testing.T, c interface {
	Events() <-chan protocol.Frame
}, name string, out any) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case f, ok := <-c.Events():
			if !ok {
				t.Fatalf("connection closed while waiting for %s", name)
			}
			if f.Event == name {
				if err := json.Unmarshal(f.Payload, out); err != nil {
					t.Fatal(err)
				}
				return
			}
		case <-timeout:
			t.Fatalf("no %s event", name)
		}
	}
}

// TestExecApprovalsFileOverWS: get and set of the approvals file with
// baseHash, as exec.approvals.get/set.
func TestExecApprovalsFileOverWS(t *testing.T) {
	_, url := startWS(t, "")
	admin := dialWS(t, url)
	reader := dialWS(t, url, protocol.ScopeRead, protocol.ScopeApprovals)
	var got struct {
		Path   string `json:"path"`
		Exists bool   `json:"exists"`
		Hash   string `json:"hash"`
		File   struct {
			Version int `json:"version"`
		} `json:"file"`
	}
	mustRPC(t, admin, "exec.approvals.get", nil, &got)
	if got.Exists || got.File.Version != 1 || !strings.HasSuffix(got.Path, "exec-approvals.json") {
		t.Fatalf("get on a fresh state dir = %+v", got)
	}
	file := json.RawMessage(`{"version":1,"defaults":{"security":"allowlist"},"agents":{"main":{"allowlist":["/usr/bin/echo"]}}}`)
	cases := []struct {
		name   string
		get    bool // exec.approvals.get as the reader, else set as admin
		params map[string]any
		want   string
	}{
		{"reader cannot get", true, nil, "missing scope: operator.admin"},
		{"no file", false, map[string]any{}, "invalid exec.approvals.set params: file is required"},
		{"bad version", false, map[string]any{"file": map[string]any{"version": 2}}, "invalid exec.approvals.set params: file:"},
		{"first write", false, map[string]any{"file": file}, ""},
		{"now needs a hash", false, map[string]any{"file": file}, "exec approvals base hash required; re-run exec.approvals.get and retry"},
		{"stale hash", false, map[string]any{"file": file, "baseHash": got.Hash + "0"}, "exec approvals changed since last load; re-run exec.approvals.get and retry"},
	}
	for _, tc := range cases {
		method, cl := "exec.approvals.set", admin
		if tc.get {
			method, cl = "exec.approvals.get", reader
		}
		_, msg := rpc(t, cl, method, tc.params)
		if tc.want == "" && msg != "" || tc.want != "" && !strings.HasPrefix(msg, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, msg, tc.want)
		}
	}
	mustRPC(t, admin, "exec.approvals.get", nil, &got)
	var set struct {
		Hash string `json:"hash"`
		File struct {
			Agents map[string]struct {
				Allowlist []struct{ Pattern string } `json:"allowlist"`
			} `json:"agents"`
		} `json:"file"`
	}
	mustRPC(t, admin, "exec.approvals.set", map[string]any{"file": file, "baseHash": got.Hash}, &set)
	if set.Hash == got.Hash || len(set.File.Agents["main"].Allowlist) != 1 || set.File.Agents["main"].Allowlist[0].Pattern != "/usr/bin/echo" {
		t.Fatalf("set = %+v", set)
	}
}
