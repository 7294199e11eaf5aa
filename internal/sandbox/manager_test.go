package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"talon/internal/config"
	"talon/internal/sandbox"
	_ "talon/internal/sandbox/host"
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

// run starts argv in sb and returns its stdout.
func run(t *testing.T, sb sandbox.Sandbox, argv ...string) string {
	t.Helper()
	var out bytes.Buffer
	p, err := sb.Start(context.Background(), sandbox.Command{Argv: argv, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if exit, err := p.Wait(); err != nil || exit.Code != 0 {
		t.Fatalf("%v: exit %+v, err %v, output %s", argv, exit, err, out.String())
	}
	return out.String()
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
		wg.Go(func() { run(t, s, "true") })
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
