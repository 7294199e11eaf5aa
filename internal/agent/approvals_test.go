package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/approval"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/sandbox"
	_ "talon/internal/sandbox/bwrap" // the backend, and its helper in this test binary
	_ "talon/internal/sandbox/host"
	"talon/internal/sandbox/sandboxtest"
	"talon/internal/store"
	"talon/internal/tools/core"
)

// recorder is the model: inspect, which calls the tools a "/call" line
// names and answers with their results, plus a record of every request,
// and a hook run inside a chosen model call.
type recorder struct {
	mu     sync.Mutex
	seen   [][]llm.Message
	hookAt int    // the model call (1, 2, …) that runs hook
	hook   func() // runs inside that call, while the turn holds its session
}

func (r *recorder) Chat(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, append([]llm.Message(nil), req.Messages...))
	n, hook := len(r.seen), r.hook
	r.mu.Unlock()
	if hook != nil && n == r.hookAt {
		hook()
	}
	return provider.Inspect{}.Chat(ctx, req, onDelta)
}

func (r *recorder) last() []llm.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[len(r.seen)-1]
}

// approvalsRig is an agent runner over a real store, sandbox manager and
// approvals service in a fresh state dir, with the gateway's part played
// by the test: how many operators are connected, and resolving.
type approvalsRig struct {
	t      *testing.T
	state  string
	db     *store.DB
	svc    *approval.Service
	runner *Runner
	model  *recorder
	events chan string // each system event, once it is in the transcript
}

func newApprovalsRig(t *testing.T, cfgSrc string, approvers int) *approvalsRig {
	t.Helper()
	a := &approvalsRig{t: t, state: t.TempDir(), model: &recorder{}, events: make(chan string, 64)}
	cfg := mustConfig(t, cfgSrc)
	db, err := store.Open(filepath.Join(a.state, "talon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	boxes := sandbox.NewManager()
	t.Cleanup(func() { boxes.Close() })
	sink := TranscriptSink(db)
	a.svc, err = approval.NewService(a.state, func(ctx context.Context, agentID, key, text string) error {
		err := sink(ctx, agentID, key, text)
		a.events <- text
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	a.svc.Manager.Approvers = func(approval.Request) int { return approvers }
	t.Cleanup(a.svc.Close) // first: it posts to the store and runs in the sandboxes
	reg, err := core.Registry()
	if err != nil {
		t.Fatal(err)
	}
	a.db = db
	a.runner = &Runner{
		Config: cfg, Policy: policy.New(cfg), Tools: reg, Store: db, StateDir: a.state, Sandboxes: boxes, Approvals: a.svc,
		Resolve: func(string) (provider.Provider, string, error) { return a.model, config.InspectModel, nil },
	}
	return a
}

const key = "agent:main:main"

// turn runs one user turn of the main session and returns the answer.
func (a *approvalsRig) turn(text string) string {
	a.t.Helper()
	res, err := a.runner.Run(context.Background(), Request{AgentID: "main", SessionKey: key, Owner: true,
		Input: []llm.Message{{Role: llm.RoleUser, Content: text}}})
	if err != nil {
		a.t.Fatalf("turn %q: %v", text, err)
	}
	return res.Text
}

// exec runs a turn in which the model calls exec with command.
func (a *approvalsRig) exec(command string) string {
	a.t.Helper()
	args, _ := json.Marshal(map[string]string{"command": command})
	return a.turn("/call exec " + string(args))
}

// pendingID checks an answer is approval-pending and returns its id.
func (a *approvalsRig) pendingID(answer string) string {
	a.t.Helper()
	if !strings.HasPrefix(answer, "Approval required (id ") {
		a.t.Fatalf("not approval-pending: %s", answer)
	}
	var d struct {
		Status, ApprovalID, Host, Command, Cwd string
	}
	lines := strings.Split(answer, "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &d); err != nil || d.Status != "approval-pending" {
		a.t.Fatalf("details %+v, %v: %s", d, err, answer)
	}
	return d.ApprovalID
}

// event waits for the next system event; the bound only keeps a broken
// build from hanging.
func (a *approvalsRig) event() string {
	a.t.Helper()
	select {
	case e := <-a.events:
		return e
	case <-time.After(30 * time.Second):
		a.t.Fatal("no system event")
		return ""
	}
}

// transcript is the main session's transcript.
func (a *approvalsRig) transcript() []llm.Message {
	a.t.Helper()
	e, err := a.db.GetSession(context.Background(), "main", key)
	if err != nil {
		a.t.Fatal(err)
	}
	msgs, err := a.db.Transcript(context.Background(), e.SessionID, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	return msgs
}

func (a *approvalsRig) workspaceFile(name string) bool {
	_, err := os.Stat(filepath.Join(a.state, "workspace", name))
	return err == nil
}

// TestApprovalsThroughTheRunner: a session that is not sandboxed runs its
// commands on the gateway host under the default policy (allowlist, ask
// on-miss, askFallback deny), with the inspect model calling exec.
func TestApprovalsThroughTheRunner(t *testing.T) {
	ctx := context.Background()
	t.Run("allow-once: pending, then ran, then a system event the model sees", func(t *testing.T) {
		a := newApprovalsRig(t, `{}`, 1)
		id := a.pendingID(a.exec("touch ran && echo done"))
		if a.workspaceFile("ran") {
			t.Fatal("ran before approval")
		}
		if err := a.svc.Resolve(ctx, approval.Slug(id), approval.DecisionAllowOnce, "op"); err != nil {
			t.Fatal(err)
		}
		want := "Exec finished (gateway id=" + id + ", session=" + key + ", code 0)\ndone"
		if e := a.event(); e != want {
			t.Fatalf("event %q, want %q", e, want)
		}
		if !a.workspaceFile("ran") {
			t.Error("the approved command did not run")
		}
		msgs := a.transcript()
		last := msgs[len(msgs)-1]
		if !IsSystemEvent(last) || last.Content != SystemEventPrefix+want {
			t.Errorf("transcript ends with %+v", last)
		}
		a.turn("what happened?")
		seen := a.model.last()
		if len(seen) < 2 || seen[len(seen)-2].Content != SystemEventPrefix+want || seen[len(seen)-1].Content != "what happened?" {
			t.Errorf("the next turn sent %+v", seen)
		}
	})
	t.Run("deny: a denied event and nothing ran", func(t *testing.T) {
		a := newApprovalsRig(t, `{}`, 1)
		id := a.pendingID(a.exec("touch ran"))
		if err := a.svc.Resolve(ctx, id, approval.DecisionDeny, "op"); err != nil {
			t.Fatal(err)
		}
		want := "Exec denied (gateway id=" + id + ", user-denied): touch ran"
		if e := a.event(); e != want {
			t.Errorf("event %q, want %q", e, want)
		}
		if msgs := a.transcript(); msgs[len(msgs)-1].Content != SystemEventPrefix+want || a.workspaceFile("ran") {
			t.Errorf("transcript ends with %+v; ran: %v", msgs[len(msgs)-1], a.workspaceFile("ran"))
		}
	})
	t.Run("no approver: askFallback at once", func(t *testing.T) {
		a := newApprovalsRig(t, `{}`, 0)
		answer := a.exec("touch ran")
		if !strings.HasPrefix(answer, "Exec denied (gateway id=") || !strings.Contains(answer, "approval-timeout): touch ran") ||
			!strings.Contains(answer, `askFallback "deny" denies it`) || a.workspaceFile("ran") {
			t.Errorf("answer %q", answer)
		}
		if len(a.svc.Pending()) != 0 {
			t.Error("an approval is pending with nobody to answer it")
		}
	})
	t.Run("no approver, askFallback full in the file: runs at once", func(t *testing.T) {
		a := newApprovalsRig(t, `{tools: {exec: {security: "full", ask: "always"}}}`, 0)
		f := approval.Empty()
		f.Defaults.AskFallback = approval.SecurityFull
		if _, err := a.svc.Store.Save(ctx, f, ""); err != nil {
			t.Fatal(err)
		}
		if answer := a.exec("touch ran && echo done"); !strings.HasPrefix(answer, "done\n[exit code 0") || !a.workspaceFile("ran") {
			t.Errorf("answer %q", answer)
		}
	})
	t.Run("allow-always persists; the next identical call runs without asking", func(t *testing.T) {
		a := newApprovalsRig(t, `{}`, 1)
		id := a.pendingID(a.exec("echo always"))
		if err := a.svc.Resolve(ctx, id, approval.DecisionAllowAlways, "op"); err != nil {
			t.Fatal(err)
		}
		a.event()
		if al := a.svc.Store.Load().File.Agents["main"].Allowlist; len(al) != 2 || al[1].Pattern != approval.CommandMarker("echo always") {
			t.Errorf("allowlist %+v", al)
		}
		if answer := a.exec("echo always"); !strings.HasPrefix(answer, "always\n[exit code 0") {
			t.Errorf("answer %q", answer)
		}
		if n := len(a.svc.Pending()); n != 0 {
			t.Errorf("%d approvals pending after the allowed call", n)
		}
	})
	t.Run("an event posted during a turn comes after it", func(t *testing.T) {
		a := newApprovalsRig(t, `{tools: {exec: {security: "full"}}}`, 0)
		// The second model call comes after exec's call was saved and
		// before its result is: the worst place for an event to land.
		a.model.hookAt, a.model.hook = 2, func() {
			if err := a.svc.Post("main", key, "Exec finished (test)"); err != nil {
				t.Error(err)
			}
		}
		a.exec("echo hi")
		if e := a.event(); e != "Exec finished (test)" {
			t.Fatalf("event %q", e)
		}
		msgs := a.transcript()
		roles := make([]string, len(msgs))
		for i, m := range msgs {
			roles[i] = string(m.Role)
		}
		if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant,user" || !IsSystemEvent(msgs[4]) {
			t.Errorf("transcript roles %s", got)
		}
	})
	t.Run("the adversarial commands never run silently", func(t *testing.T) {
		a := newApprovalsRig(t, `{}`, 0)
		ls, err := filepath.EvalSymlinks("/usr/bin/ls")
		if err != nil {
			t.Fatal(err)
		}
		f := approval.Empty()
		f.Agents["main"] = &approval.Agent{Allowlist: []approval.Entry{{Pattern: ls}}}
		if _, err := a.svc.Store.Save(ctx, f, ""); err != nil {
			t.Fatal(err)
		}
		if answer := a.exec("ls -a"); !strings.Contains(answer, "[exit code 0") {
			t.Fatalf("an allowlisted command did not run: %s", answer)
		}
		for _, cmd := range []string{
			"env sh -c 'touch canary'", "busybox sh -c 'touch canary'", "ls; touch canary", "ls $(touch canary)",
			"find . -exec touch canary ';'", "sort -o canary /dev/null", "ls > canary", "ls\ntouch canary",
		} {
			if answer := a.exec(cmd); !strings.HasPrefix(answer, "Exec denied (gateway id=") {
				t.Errorf("%q: %s", cmd, answer)
			}
			if a.workspaceFile("canary") {
				t.Fatalf("%q ran", cmd)
			}
		}
	})
}

// requireBwrap returns why the bwrap backend cannot run here, or nil;
// under CI=true that fails the test instead.
func requireBwrap(t *testing.T) error { return sandboxtest.Require(t, "bwrap") }

// TestApprovalsInBwrap: a sandboxed session whose agent asks for an
// allowlist: programs are resolved as the sandbox sees them (the host's
// /usr bound read-only), a hit runs in bwrap, a miss waits for approval
// and then runs in bwrap too, at /workspace.
func TestApprovalsInBwrap(t *testing.T) {
	if err := requireBwrap(t); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	a := newApprovalsRig(t, `{agents: {defaults: {sandbox: {mode: "all", backend: "bwrap"}}, list: [{id: "main", tools: {exec: {security: "allowlist"}}}]}}`, 1)
	f := approval.Empty()
	f.Agents["main"] = &approval.Agent{Allowlist: []approval.Entry{{Pattern: "/usr/bin/*"}}}
	if _, err := a.svc.Store.Save(ctx, f, ""); err != nil {
		t.Fatal(err)
	}
	if answer := a.exec("pwd && ls -d /usr"); !strings.HasPrefix(answer, "/workspace\n/usr\n[exit code 0") {
		t.Errorf("a hit in the sandbox: %q", answer)
	}
	answer := a.exec("touch made && echo made")
	id := a.pendingID(answer)
	if !strings.Contains(answer, `"host":"sandbox"`) || !strings.Contains(answer, `"cwd":"/workspace"`) {
		t.Errorf("details: %s", answer)
	}
	if err := a.svc.Resolve(ctx, id, approval.DecisionAllowOnce, "op"); err != nil {
		t.Fatal(err)
	}
	want := "Exec finished (sandbox id=" + id + ", session=" + key + ", code 0)\nmade"
	if e := a.event(); e != want {
		t.Errorf("event %q, want %q", e, want)
	}
	plan, err := sandbox.Resolve(a.runner.Config, a.state, "main", key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plan.Spec.Root, "made")); err != nil {
		t.Errorf("the approved command's file is not in the sandbox workspace: %v", err)
	}
}
