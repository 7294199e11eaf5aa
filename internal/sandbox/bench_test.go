package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"talon/internal/sandbox"
	"talon/internal/tools"
	"talon/internal/tools/fs"
)

// benchPlan is a sandboxed session under mode all, scope agent, access
// none, on the bwrap backend.
func benchPlan(b *testing.B) (*sandbox.Manager, string) {
	b.Helper()
	bwrapOrSkip(b)
	return sandbox.NewManager(), b.TempDir()
}

// BenchmarkResolve: what working out a session's sandbox adds to a turn.
func BenchmarkResolve(b *testing.B) {
	cfg := mustConfig(b, `{agents: {defaults: {sandbox: {mode: "all", workspaceAccess: "ro"}}}}`)
	state := b.TempDir()
	for b.Loop() {
		if _, err := sandbox.Resolve(cfg, state, "main", "agent:main:openai-user:bob"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepare: Resolve and Prepare, as a sandboxed turn does them
// before it calls the model (the backend check cached, the workspace
// already seeded: the steady state).
func BenchmarkPrepare(b *testing.B) {
	m, state := benchPlan(b)
	defer m.Close()
	cfg := mustConfig(b, `{agents: {defaults: {sandbox: {mode: "all", workspaceAccess: "ro"}}}}`)
	for b.Loop() {
		p, err := sandbox.Resolve(cfg, state, "main", "agent:main:openai-user:bob")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Prepare(context.Background(), &p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFSLoop: 100 calls through the fs tools (50 writes, 50 reads of
// what was written), in the agent workspace of an unsandboxed session and
// in the sandbox workspace of a sandboxed one, each opened as the runner
// opens it. The file tools do not enter the sandbox (they work on its root
// from the host, through os.Root), so the two should cost the same.
func BenchmarkFSLoop(b *testing.B) {
	write, read := fsTool(b, "write"), fsTool(b, "read")
	for _, c := range []struct{ name, cfg string }{
		{"host", `{}`},
		{"sandbox", `{agents: {defaults: {sandbox: {mode: "all"}}}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			m, state := benchPlan(b)
			defer m.Close()
			p, err := sandbox.Resolve(mustConfig(b, c.cfg), state, "main", "agent:main:openai-user:bob")
			if err != nil {
				b.Fatal(err)
			}
			dir := p.AgentWorkspace
			if p.Sandboxed {
				if _, err := m.Prepare(context.Background(), &p); err != nil {
					b.Fatal(err)
				}
				dir = p.Spec.Root
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				b.Fatal(err)
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer root.Close()
			env := &tools.Env{AgentID: "main", SessionKey: p.SessionKey, Workspace: root, Sandboxed: p.Sandboxed}
			args := make([][2]json.RawMessage, 50)
			for i := range args {
				path := fmt.Sprintf("notes/n%02d.txt", i)
				args[i][0] = json.RawMessage(fmt.Sprintf(`{"path":%q,"content":"line %d\n"}`, path, i))
				args[i][1] = json.RawMessage(fmt.Sprintf(`{"path":%q}`, path))
			}
			ctx := context.Background()
			for b.Loop() {
				for _, a := range args {
					if r, err := write.Run(ctx, env, a[0]); err != nil || r.IsError {
						b.Fatalf("write: %v %s", err, r.Text)
					}
					if r, err := read.Run(ctx, env, a[1]); err != nil || r.IsError {
						b.Fatalf("read: %v %s", err, r.Text)
					}
				}
			}
		})
	}
}

func fsTool(b *testing.B, name string) tools.Tool {
	for _, t := range fs.All() {
		if t.Name() == name {
			return t
		}
	}
	b.Fatalf("no fs tool %q", name)
	return nil
}
