package sandbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"talon/internal/sandbox"
)

// checkCounter is a backend that counts its checks and fails them when
// its settings say so; it never opens a sandbox.
type checkCounter struct{ fail bool }

var checksRun atomic.Int64

func (checkCounter) Name() string   { return "check-counter" }
func (checkCounter) Isolated() bool { return true }
func (b checkCounter) Check(context.Context) error {
	checksRun.Add(1)
	if b.fail {
		return errors.New("told to fail")
	}
	return nil
}
func (checkCounter) Open(context.Context, sandbox.Spec) (sandbox.Sandbox, error) {
	return nil, errors.New("check-counter opens nothing")
}

func init() {
	sandbox.Register("check-counter", func(s map[string]any) (sandbox.Backend, error) {
		return checkCounter{fail: s["fail"] == true}, nil
	})
}

// TestManagerSharesChecks: managers given one Checks probe a backend
// once; a manager without it probes its own; a failed check is not
// shared.
func TestManagerSharesChecks(t *testing.T) {
	cfg := mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all"}}}}`)
	shared := sandbox.NewChecks()
	prepare := func(m *sandbox.Manager, fail bool) error {
		p := resolve(t, cfg, t.TempDir(), "main", "agent:main:x")
		p.Backend.Value = "check-counter"
		if fail {
			p.BackendSettings = map[string]any{"fail": true}
		}
		_, err := m.Prepare(context.Background(), &p)
		return err
	}
	withShared := func() *sandbox.Manager {
		m := sandbox.NewManager()
		m.Checks = shared
		t.Cleanup(func() { m.Close() })
		return m
	}
	alone := sandbox.NewManager()
	t.Cleanup(func() { alone.Close() })
	cases := []struct {
		name   string
		m      *sandbox.Manager
		fail   bool
		checks int64 // run by this step
	}{
		{"the first manager checks", withShared(), false, 1},
		{"the second takes its pass", withShared(), false, 0},
		{"a manager of its own checks", alone, false, 1},
		{"a failure is checked", withShared(), true, 1},
		{"and checked again by the next", withShared(), true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := checksRun.Load()
			err := prepare(c.m, c.fail)
			if got := checksRun.Load() - before; got != c.checks {
				t.Errorf("%d checks, want %d", got, c.checks)
			}
			if c.fail != (err != nil) {
				t.Errorf("Prepare: %v", err)
			}
		})
	}
}
