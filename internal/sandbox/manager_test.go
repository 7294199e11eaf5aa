package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"talon/internal/config"
	"talon/internal/sandbox"
	_ "talon/internal/sandbox/bwrap"
	_ "talon/internal/sandbox/docker"
	_ "talon/internal/sandbox/host"
	"talon/internal/testtier"
)

func mustConfig(t testing.TB, src string) *config.Config {
	t.Helper()
	tree, err := config.ParseJSON5([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var cfg config.Config
	if _, err := config.Decode(tree, &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

func resolve(t *testing.T, cfg *config.Config, state, agent, key string) sandbox.Plan {
	t.Helper()
	p, err := sandbox.Resolve(cfg, state, agent, key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run starts argv in sb and returns its output.
func run(t *testing.T, sb sandbox.Sandbox, argv ...string) string {
	t.Helper()
	out, err := runErr(sb, argv...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runErr(sb sandbox.Sandbox, argv ...string) (string, error) {
	var out bytes.Buffer
	p, err := sb.Start(context.Background(), sandbox.Command{Argv: argv, Stdout: &out, Stderr: &out})
	if err != nil {
		return "", err
	}
	if exit, err := p.Wait(); err != nil || exit.Code != 0 {
		return "", fmt.Errorf("%v: exit %+v, err %v, output %s", argv, exit, err, out.String())
	}
	return out.String(), nil
}

// Unsandboxed runs get the host backend in the agent workspace; the
// sandbox opens on the first command, is shared by the agent's runs, and
// Close closes it and refuses new ones.
func TestManagerHost(t *testing.T) {
	state := t.TempDir()
	cfg := mustConfig(t, `{}`)
	m := sandbox.NewManager()
	a, err := m.Host(ptr(resolve(t, cfg, state, "main", "agent:main:main")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Host(ptr(resolve(t, cfg, state, "main", "agent:main:other")))
	if err != nil {
		t.Fatal(err)
	}
	if a.Isolated() {
		t.Error("the host sandbox says it is isolated")
	}
	if got := m.Open(); len(got) != 0 {
		t.Errorf("open before any command: %v", got)
	}
	// Commands of both runs, at once: one sandbox opens.
	var wg sync.WaitGroup
	for _, s := range []*sandbox.Session{a, b, a, b} {
		wg.Go(func() {
			if _, err := runErr(s, "true"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := m.Open(); !slices.Equal(got, []string{a.Plan().Spec.ID}) {
		t.Errorf("open = %v, want [%s]", got, a.Plan().Spec.ID)
	}
	if pwd := strings.TrimSpace(run(t, a, "pwd")); pwd != filepath.Join(state, "workspace") {
		t.Errorf("commands run in %s, want the agent workspace", pwd)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := m.Open(); len(got) != 0 {
		t.Errorf("open after Close: %v", got)
	}
	if _, err := a.Start(context.Background(), sandbox.Command{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("Start after Close: %v", err)
	}
}

// The host spec the manager keeps per agent and workspace follows a
// config that moves the workspace or adds an agent: every Host session's
// spec is the plan's own HostSpec, and runs in its workspace.
func TestManagerHostSpecFollowsConfig(t *testing.T) {
	state := t.TempDir()
	m := sandbox.NewManager()
	t.Cleanup(func() { m.Close() })
	cases := []struct{ cfg, agent, root string }{
		{`{}`, "main", filepath.Join(state, "workspace")},
		{`{}`, "main", filepath.Join(state, "workspace")},
		{`{agents: {defaults: {workspace: "` + state + `/moved"}}}`, "main", filepath.Join(state, "moved")},
		{`{agents: {list: [{id: "main"}, {id: "ops"}]}}`, "ops", filepath.Join(state, "workspace-ops")},
		{`{}`, "main", filepath.Join(state, "workspace")},
	}
	for i, c := range cases {
		p := resolve(t, mustConfig(t, c.cfg), state, c.agent, "agent:"+c.agent+":main")
		s, err := m.Host(&p)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Plan().Spec, p.HostSpec(); got.Root != c.root || !reflect.DeepEqual(got, want) {
			t.Errorf("%d: %s: spec %+v, want %+v in %s", i, c.cfg, got, want, c.root)
		}
		if pwd := strings.TrimSpace(run(t, s, "pwd")); pwd != c.root {
			t.Errorf("%d: %s: commands run in %s, want %s", i, c.cfg, pwd, c.root)
		}
	}
}

// A sandboxed plan never gets the host backend, even if a plan names it.
func TestManagerRefusesHostForSandboxedSessions(t *testing.T) {
	state := t.TempDir()
	p := resolve(t, mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all"}}}}`), state, "main", "agent:main:x")
	m := sandbox.NewManager()
	if _, err := m.Host(&p); err == nil {
		t.Error("Host accepted a sandboxed plan")
	}
	p.Backend = sandbox.Setting{Value: sandbox.BackendHost}
	_, err := m.Prepare(context.Background(), &p)
	var se *sandbox.Error
	if !errors.As(err, &se) || !strings.Contains(err.Error(), `sandbox backend "host" cannot run here: it does not isolate commands`) {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(p.Spec.Root); !os.IsNotExist(err) {
		t.Errorf("the sandbox workspace was created for a refused run (%v)", err)
	}
}

func ptr[T any](v T) *T { return &v }

// bwrapOrSkip returns the bwrap backend's check error handling: skip
// without it, except under CI=true, where a missing tool is a failure.
func bwrapOrSkip(t testing.TB) {
	t.Helper()
	b, err := sandbox.New(sandbox.BackendBwrap, nil)
	if err == nil {
		err = b.Check(context.Background())
	}
	if err == nil {
		return
	}
	testtier.Unavailable(t, "bwrap backend unusable here (apt-get install -y bubblewrap): %v", err)
}

// A sandboxed session under the real bwrap backend: Prepare lays out and
// seeds the sandbox workspace, commands write into it (and only it, at
// /workspace), the ro mount shows the agent workspace read-only at /agent,
// and sessions of one agent scope share one sandbox.
func TestManagerBwrap(t *testing.T) {
	bwrapOrSkip(t)
	state := t.TempDir()
	agentWS := filepath.Join(state, "workspace")
	if err := os.MkdirAll(agentWS, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(agentWS, "AGENTS.md"), []byte("be brief"), 0o600)
	cfg := mustConfig(t, `{agents: {defaults: {sandbox: {mode: "non-main", workspaceAccess: "ro"}}}}`)
	m := sandbox.NewManager()
	defer m.Close()
	ctx := context.Background()
	prep := func(key string) *sandbox.Session {
		p := resolve(t, cfg, state, "main", key)
		s, err := m.Prepare(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := prep("agent:main:openai-user:a"), prep("agent:main:openai-user:b")
	root := a.Plan().Spec.Root
	if got, _ := os.ReadFile(filepath.Join(root, "AGENTS.md")); string(got) != "be brief" {
		t.Errorf("seeded AGENTS.md = %q", got)
	}
	run(t, a, "sh", "-c", "echo from-a > /workspace/a.txt")
	run(t, b, "sh", "-c", "cat /workspace/a.txt > /workspace/b.txt")
	if got, _ := os.ReadFile(filepath.Join(root, "b.txt")); string(got) != "from-a\n" {
		t.Errorf("b.txt = %q: sessions of one agent scope do not share the sandbox workspace", got)
	}
	if got := run(t, a, "cat", "/agent/AGENTS.md"); got != "be brief" {
		t.Errorf("/agent/AGENTS.md = %q", got)
	}
	var out bytes.Buffer
	p, err := a.Start(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo x > /agent/new.txt"}, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if exit, _ := p.Wait(); exit.Code == 0 {
		t.Error("a command wrote into the read-only agent workspace")
	}
	if _, err := os.Stat(filepath.Join(agentWS, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("the agent workspace changed: %v", err)
	}
	if got := m.Open(); len(got) != 1 {
		t.Errorf("open sandboxes = %v, want one for the agent scope", got)
	}
}

// A sandboxed session whose backend cannot run here fails closed with an
// *Error naming the backend, the reason and the fix, before any workspace
// is made.
func TestManagerFailsClosed(t *testing.T) {
	state := t.TempDir()
	cfg := mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all", backend: "docker", docker: {socket: "/nonexistent/docker.sock"}}}}}`)
	p := resolve(t, cfg, state, "main", "agent:main:x")
	_, err := sandbox.NewManager().Prepare(context.Background(), &p)
	var se *sandbox.Error
	if !errors.As(err, &se) || se.Backend != "docker" {
		t.Fatalf("err = %#v, want a *sandbox.Error for docker", err)
	}
	for _, want := range []string{
		`session agent:main:x is sandboxed (mode "all" (agents.defaults.sandbox.mode) sandboxes every session)`,
		`sandbox backend "docker" cannot run here`,
		"no Docker engine at /nonexistent/docker.sock",
		"Talon does not fall back to running on the host",
		"agents.defaults.sandbox.backend",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "sandboxes")); !os.IsNotExist(err) {
		t.Errorf("a workspace was made for a run that cannot start (%v)", err)
	}
}

// A sandbox nobody uses is closed when another command opens a sandbox
// (here: as soon as it is idle); one whose command still runs is not.
func TestManagerClosesIdleSandboxes(t *testing.T) {
	state := t.TempDir()
	cfg := mustConfig(t, `{agents: {list: [{id: "a"}, {id: "b"}]}}`)
	m := sandbox.NewManager()
	m.IdleTimeout = -1
	defer m.Close()
	host := func(agent string) *sandbox.Session {
		s, err := m.Host(ptr(resolve(t, cfg, state, agent, "agent:"+agent+":main")))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := host("a"), host("b")
	idA, idB := a.Plan().Spec.ID, b.Plan().Spec.ID

	// a's command blocks on its stdin: a stays open however often b runs.
	stdin, w := io.Pipe()
	p, err := a.Start(context.Background(), sandbox.Command{Argv: []string{"cat"}, Stdin: stdin})
	if err != nil {
		t.Fatal(err)
	}
	run(t, b, "true")
	run(t, b, "true")
	if got := m.Open(); !slices.Contains(got, idA) {
		t.Errorf("open = %v: a's sandbox closed under a running command", got)
	}
	w.Close()
	if exit, err := p.Wait(); err != nil || exit.Code != 0 {
		t.Fatalf("cat: %+v %v", exit, err)
	}
	// Now a is idle: b's next command closes it.
	run(t, b, "true")
	if got := m.Open(); !slices.Equal(got, []string{idB}) {
		t.Errorf("open = %v, want only b's %s", got, idB)
	}
	// And a opens again on its next command.
	run(t, a, "true")
	if got := m.Open(); !slices.Contains(got, idA) {
		t.Errorf("open = %v: a did not reopen", got)
	}
}

// A confined manager (a tenant's) refuses every path that leads out of
// the tenant directory through a symbolic link — the agent workspace,
// the sandbox workspace, a mount — opens workspaces through the tenant
// directory's root, and never runs on the host.
func TestManagerConfine(t *testing.T) {
	bwrapOrSkip(t)
	state := t.TempDir()
	acme := filepath.Join(state, "tenants", "acme")
	beta := filepath.Join(state, "tenants", "beta", "workspace")
	for _, d := range []string{filepath.Join(acme, "ws"), beta} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(beta, "secret.txt"), []byte("beta's"), 0o600)
	// What a sandboxed command with the agent workspace read-write plants.
	for link, target := range map[string]string{"bws": "../beta/workspace", "ws/out": "../../beta/workspace", "boxes": "../beta"} {
		if err := os.Symlink(target, filepath.Join(acme, link)); err != nil {
			t.Fatal(err)
		}
	}
	m := sandbox.NewManager()
	m.Confine = acme
	defer m.Close()
	for _, tc := range []struct{ name, cfg, want string }{
		{"agent workspace through a link", `{agents: {list: [{id: "main", workspace: "bws"}], defaults: {sandbox: {mode: "all", workspaceAccess: "rw"}}}}`, "the workspace of agent main"},
		{"a link deeper in", `{agents: {list: [{id: "main", workspace: "ws/out/sub"}], defaults: {sandbox: {mode: "all", workspaceAccess: "rw"}}}}`, "the workspace of agent main"},
		{"sandbox workspaces through a link", `{agents: {list: [{id: "main", workspace: "ws"}], defaults: {sandbox: {mode: "all", workspaceRoot: "boxes"}}}}`, "the sandbox workspace of agent main"},
		{"a read-only mount through a link", `{agents: {list: [{id: "main", workspace: "bws"}], defaults: {sandbox: {mode: "all", workspaceAccess: "ro"}}}}`, "the workspace of agent main"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := resolve(t, mustConfig(t, tc.cfg), acme, "main", "agent:main:main")
			_, err := m.Prepare(context.Background(), &p)
			var se *sandbox.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "outside "+acme) {
				t.Fatalf("Prepare = %v; want a *sandbox.Error about %q leading outside the tenant", err, tc.want)
			}
		})
	}
	for _, dir := range []string{filepath.Join(acme, "bws"), filepath.Join(acme, "ws", "out", "sub"), acme, beta} {
		if r, err := m.Workspace(dir); err == nil {
			r.Close()
			t.Errorf("Workspace(%s) opened", dir)
		}
	}
	r, err := m.Workspace(filepath.Join(acme, "ws", "new"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadFile("../out/secret.txt"); err == nil {
		t.Error("the workspace root reads through a link out of the tenant")
	}
	r.Close()
	host := resolve(t, mustConfig(t, `{agents: {list: [{id: "main", workspace: "ws"}]}}`), acme, "main", "agent:main:main")
	if _, err := m.Host(&host); err == nil || !strings.Contains(err.Error(), "a tenant's commands never run on the host") {
		t.Errorf("Host = %v; want refused", err)
	}
	if got, _ := os.ReadFile(filepath.Join(beta, "secret.txt")); string(got) != "beta's" {
		t.Errorf("beta's file changed: %q", got)
	}
	if entries, _ := os.ReadDir(beta); len(entries) != 1 {
		t.Errorf("something was made in beta's workspace: %v", entries)
	}
	if entries, _ := os.ReadDir(filepath.Dir(beta)); len(entries) != 1 {
		t.Errorf("something was made in beta's directory: %v", entries)
	}
}
