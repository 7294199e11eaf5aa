package exec

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/approval"
	"talon/internal/config"
	"talon/internal/sandbox"
	_ "talon/internal/sandbox/bwrap" // the backend, and its helper in this test binary
	"talon/internal/sandbox/sandboxtest"
	"talon/internal/tools"
)

// requireBwrap returns why the bwrap backend cannot run here, or nil;
// under CI=true that fails the test instead.
func requireBwrap(t *testing.T) error { return sandboxtest.Require(t, "bwrap") }

// TestBwrap runs exec and process in the bwrap backend: commands start in
// /workspace, which is the sandbox root on the host; stdin, background
// jobs, kill and the timeout work through it; the default policy runs
// commands in a sandbox that isolates (security full), with no opt-in. Without bwrap the test is skipped, except under
// CI=true, where it fails saying how to install it.
func TestBwrap(t *testing.T) {
	if err := requireBwrap(t); err != nil {
		t.Skip(err)
	}
	b, err := sandbox.New("bwrap", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rigOn(t, b, DefaultLimits())
	r.env.ExecPolicy, r.env.Sandboxed = approval.PolicyInput{}, true // isolated: the defaults run it
	dir := r.dir
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	res := r.run(r.exec, r.env, map[string]any{"command": "pwd; echo made > made.txt; cd sub && pwd"})
	if res.IsError || !strings.HasPrefix(res.Text, "/workspace\n/workspace/sub\n[exit code 0") {
		t.Errorf("pwd: %+v", res)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "made.txt")); err != nil || string(got) != "made\n" {
		t.Errorf("made.txt on the host: %q, %v", got, err)
	}
	res = r.run(r.exec, r.env, map[string]any{"command": "pwd", "workdir": "sub"})
	if !strings.HasPrefix(res.Text, "/workspace/sub\n") {
		t.Errorf("workdir: %+v", res)
	}
	res = r.run(r.exec, r.env, map[string]any{"command": "echo started; sleep 300", "timeout": 1})
	if !res.IsError || !strings.Contains(res.Text, "started\n[timed out: killed") {
		t.Errorf("timeout: %+v", res)
	}

	id := r.start(r.env, `read line; echo "got $line"`)
	if w := r.run(r.process, r.env, map[string]any{"action": "write", "sessionId": id, "data": "hello\n", "eof": true}); w.IsError {
		t.Fatalf("write: %+v", w)
	}
	polled, last := r.waitEnd(r.env, id)
	if !strings.Contains(polled, "got hello\n") || last.IsError {
		t.Errorf("stdin through bwrap: %s", polled)
	}

	id = r.start(r.env, "sleep 300")
	kill := r.run(r.process, r.env, map[string]any{"action": "kill", "sessionId": id})
	if kill.IsError || !strings.HasPrefix(kill.Text, "Killed job "+id+": ") {
		t.Errorf("kill: %+v", kill)
	}
}

// TestTimeoutCeiling: the config's limits.timeoutSeconds bounds a command
// even when the model asks exec for a longer timeout.
func TestTimeoutCeiling(t *testing.T) {
	if err := requireBwrap(t); err != nil {
		t.Skip(err)
	}
	state := t.TempDir()
	f, err := config.Parse("t.json5", []byte(`{agents: {defaults: {sandbox: {mode: "all", backend: "bwrap", limits: {timeoutSeconds: 1}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sandbox.Resolve(f.Config, state, "main", "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	m := sandbox.NewManager()
	defer m.Close()
	box, err := m.Prepare(context.Background(), &plan)
	if err != nil {
		t.Fatal(err)
	}
	env := &tools.Env{AgentID: "main", SessionKey: "agent:main:main", Sandbox: box, Isolated: box.Isolated(), Sandboxed: true}
	// Were the model's timeout used, the test would outlive go test's own.
	raw, _ := json.Marshal(map[string]any{"command": "echo started; sleep 7200", "timeout": MaxTimeout})
	res, err := New(NewJobs(DefaultLimits()))[0].Run(context.Background(), env, raw)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.HasPrefix(res.Text, "started\n[timed out: killed with everything it started · ran ") {
		t.Errorf("result %+v, want a timeout at the config's 1 s", res)
	}
}
