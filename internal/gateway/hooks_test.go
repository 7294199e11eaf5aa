package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestHooks: the operator's hooks at /hooks and a tenant's under
// /hooks/{tenant}: a wake queues its text and runs a heartbeat-style turn
// (which, with no heartbeat target, delivers nothing), an agent hook runs
// a turn and answers its completion without the model's text, and the
// token rules hold (spec automation.md §10, vector 11).
func TestHooks(t *testing.T) {
	ts, url := startWS(t, `,"hooks":{"enabled":true,"token":"operator-hooks-token-0123"}`)
	writeFile(t, filepath.Join(ts.dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}},
		hooks: {enabled: true, token: "acme-hooks-token-012345"}}`))
	post := func(path, token, body string, hdr ...string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, ts.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	const op = "operator-hooks-token-0123"
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
	}{
		{"no token", "/hooks/wake", "", `{"text":"x"}`, 401},
		{"wrong token", "/hooks/wake", "nope", `{"text":"x"}`, 401},
		{"token in the query", "/hooks/agent?token=x", op, `{"message":"x"}`, 400},
		{"the tenant's token on the operator's path", "/hooks/wake", "acme-hooks-token-012345", `{"text":"x"}`, 401},
		{"the operator's token on the tenant's path", "/hooks/acme/hooks/wake", op, `{"text":"x"}`, 401},
		{"an unknown mapping", "/hooks/nothing-here", op, `{}`, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := post(tc.path, tc.token, tc.body); code != tc.status {
				t.Errorf("%s: %d %v, want %d", tc.path, code, body, tc.status)
			}
		})
	}

	code, body := post("/hooks/wake", op, `{"text":"Build 7 is green","mode":"now"}`)
	if code != 200 || body["ok"] != true || body["eventOutcome"] != "queued" {
		t.Fatalf("wake: %d %v", code, body)
	}
	c := dialWS(t, url)
	waitFor(t, "the wake's heartbeat turn", func() bool {
		var ev map[string]any
		if err := c.Call(t.Context(), "last-heartbeat", nil, &ev); err != nil || ev == nil {
			return false
		}
		return ev["status"] == "skipped" && ev["reason"] == "no-target"
	})
	waitHistory(t, url, "agent:main:main", "] Build 7 is green")

	code, body = post("/hooks/agent", op, `{"message":"summarise the build","waitForCompletion":true}`, "Idempotency-Key", "build-7")
	completion, _ := body["completion"].(map[string]any)
	if code != 200 || body["runId"] == "" || completion["status"] != "ok" {
		t.Fatalf("agent: %d %v", code, body)
	}
	raw, _ := json.Marshal(body)
	if strings.Contains(string(raw), "inspect:") {
		t.Errorf("the completion carries the model's text: %s", raw)
	}
	again, body2 := post("/hooks/agent", op, `{"message":"summarise the build","waitForCompletion":true}`, "Idempotency-Key", "build-7")
	if again != 200 || body2["runId"] != body["runId"] {
		t.Errorf("the same Idempotency-Key: %d %v, want run %v again", again, body2, body["runId"])
	}

	// The tenant's hooks wake the tenant's own main session.
	if code, body := post("/hooks/acme/hooks/wake", "acme-hooks-token-012345", `{"text":"acme event","mode":"next-heartbeat"}`); code != 200 || body["ok"] != true {
		t.Fatalf("tenant wake: %d %v", code, body)
	}
	// The operator's main session holds the agent hook's completion
	// notice (no destination was given), not the tenant's event.
	for _, ev := range ts.srv.defaultTenant.events().drain("agent:main:main") {
		if strings.Contains(ev.text, "acme") || !strings.HasPrefix(ev.text, `Hook "Hook" finished`) {
			t.Errorf("the operator's main session has %q", ev.text)
		}
	}
	acme, err := ts.srv.lookup("acme")
	if err != nil || acme.events().pending("agent:main:main") != 1 {
		t.Errorf("the tenant's event is not queued for its main session: %v", err)
	}
}
