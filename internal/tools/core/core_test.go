package core

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"talon/internal/approval"
	"talon/internal/policy"
	"talon/internal/sandbox"
	_ "talon/internal/sandbox/host"
	"talon/internal/tools"
)

func TestRegistry(t *testing.T) {
	r, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	names := r.Names()
	if len(names) != len(Order) {
		t.Fatalf("names = %v, want %v", names, Order)
	}
	for i := range Order {
		if names[i] != Order[i] {
			t.Errorf("names[%d] = %s, want %s", i, names[i], Order[i])
		}
	}
}

// TestOrderIsConstructionOrder: Order lists the tools in the order of
// OpenClaw's candidate list (policy.StandardTools, spec §1.3), which is
// where each tool Talon adds must go.
func TestOrderIsConstructionOrder(t *testing.T) {
	last := -1
	for _, n := range Order {
		i := slices.Index(policy.StandardTools, n)
		if i < 0 {
			t.Errorf("%s is not in policy.StandardTools", n)
			continue
		}
		if i < last {
			t.Errorf("%s comes after %s in Order but before it in policy.StandardTools", n, policy.StandardTools[last])
		}
		last = max(last, i)
	}
}

// TestSharedJobs: the registry's exec starts a background job that its
// process sees; a second registry has a table of its own.
func TestSharedJobs(t *testing.T) {
	dir := t.TempDir()
	b, err := sandbox.New("host", nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Open(context.Background(), sandbox.Spec{ID: "core-test", Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	env := &tools.Env{AgentID: "main", SessionKey: "agent:main:main", Sandbox: sb, Background: true,
		ExecPolicy: approval.PolicyInput{Global: approval.ExecSettings{Security: "full"}}}
	r1, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	run := func(r *tools.Registry, name, args string) string {
		t.Helper()
		tool, _ := r.Get(name)
		res, err := tool.Run(context.Background(), env, json.RawMessage(args))
		if err != nil || res.IsError {
			t.Fatalf("%s %s: %+v, %v", name, args, res, err)
		}
		return res.Text
	}
	started := run(r1, "exec", `{"command":"sleep 300","background":true}`)
	id := strings.Fields(started[strings.Index(started, "as job ")+len("as job "):])[0]
	if list := run(r1, "process", `{"action":"list"}`); !strings.HasPrefix(list, id+"  running") {
		t.Errorf("registry 1 lists %q, want job %s", list, id)
	}
	if list := run(r2, "process", `{"action":"list"}`); list != "No background jobs in this session." {
		t.Errorf("registry 2 lists %q", list)
	}
	run(r1, "process", `{"action":"remove","sessionId":"`+id+`"}`)
}
