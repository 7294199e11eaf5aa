package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"talon/internal/config"
	"talon/internal/contain"
	"talon/internal/netguard"
	"talon/internal/tools"
)

// Defaults of Options.
const (
	DefaultIdle  = 5 * time.Minute
	startTimeout = 30 * time.Second
)

// Options configure the tool; the zero value is the gateway's.
type Options struct {
	// Idle is how long a browser may go unused before it is closed;
	// 0 means DefaultIdle.
	Idle time.Duration
}

// Tool is the browser tool: one Chromium per agent, started on the first
// call that needs it and closed when idle, on "stop", or by Forget.
type Tool struct {
	idle time.Duration

	mu       sync.Mutex
	browsers map[key]*instance
	reaper   *time.Timer
}

// key names one agent's browser: the state directory it belongs to and
// the agent.
type key struct{ dir, agent string }

var (
	_ tools.Tool      = (*Tool)(nil)
	_ tools.Forgetter = (*Tool)(nil)
)

// New returns the browser tool.
func New(o Options) *Tool {
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	return &Tool{idle: o.Idle, browsers: map[key]*instance{}}
}

func (*Tool) Name() string { return "browser" }

func (*Tool) Schema() json.RawMessage { return schema }

// keyOf is the browser of env's agent: under the tenant's state directory,
// or, for a run without one, under the agent's directory.
func keyOf(env *tools.Env) key {
	dir := env.StateDir
	if dir == "" {
		dir = env.AgentDir
	}
	return key{dir: dir, agent: env.AgentID}
}

// profileDir is where the agent's browser profile lives: outside the
// workspace, which the model can write (it could plant preferences or
// read the cookies of the logins kept there).
func (k key) profileDir() string {
	return filepath.Join(k.dir, "browser", config.NormalizeAgentID(k.agent))
}

func (t *Tool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	in, err := parse(raw)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("browser: %w", err)), nil
	}
	if env.Sandboxed {
		// Defence in depth: the policy does not offer the tool in a
		// sandboxed session (policy.construct).
		return tools.Errorf("browser: not available in a sandboxed session: the browser would run on the gateway host, outside the sandbox"), nil
	}
	if env.Config != nil && env.Config.Browser.Enabled != nil && !*env.Config.Browser.Enabled {
		return tools.Errorf("browser: disabled by browser.enabled"), nil
	}
	k := keyOf(env)
	if k.dir == "" {
		return tools.Errorf("browser: this run has no state directory to keep a browser profile in"), nil
	}
	ctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	switch in.action {
	case "status":
		return t.status(k), nil
	case "stop":
		t.stop(k)
		return tools.JSONResult(map[string]any{"ok": true, "running": false, "profile": profileName})
	}
	b, err := t.browser(ctx, env, k)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("browser: %w", err)), nil
	}
	b.mu.Lock()
	b.proxy.setRule(guard(env))
	res, err := b.do(ctx, env, in)
	dead := b.dead()
	b.lastUsed = time.Now()
	b.mu.Unlock()
	switch {
	case dead:
		t.drop(k, b)
		return tools.Errorf("browser: Chromium stopped during the call (it crashed, was killed or its DevTools connection broke): %v; the next call starts a fresh browser", err), nil
	case err != nil && ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return tools.Errorf("browser: %s did not finish within %s (timeoutMs): %v", in.action, in.timeout, err), nil
	case err != nil:
		return tools.ErrorResult(fmt.Errorf("browser: %s: %w", in.action, err)), nil
	}
	return res, nil
}

// profileName is the one profile Talon runs, named as OpenClaw's managed
// one.
const profileName = "openclaw"

// browser is k's running browser, started when there is none or the last
// one died.
func (t *Tool) browser(ctx context.Context, env *tools.Env, k key) (*instance, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.browsers[k]; b != nil {
		b.mu.Lock()
		dead := b.dead()
		b.mu.Unlock()
		if !dead {
			return b, nil
		}
		delete(t.browsers, k)
		go b.close()
	}
	exe := ""
	if env.Config != nil {
		exe = env.Config.Browser.ExecutablePath
	}
	exe, err := findChromium(exe)
	if err != nil {
		return nil, err
	}
	dir := k.profileDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the browser profile directory: %w", err)
	}
	b, err := launch(ctx, exe, dir, false, guard(env), startTimeout)
	if err != nil {
		return nil, err
	}
	t.browsers[k] = b
	t.schedule()
	return b, nil
}

// guard is the tenant's network rule, as tools.Outbound.Client has it.
func guard(env *tools.Env) netguard.Options {
	g := netguard.Options{AllowLoopback: env.AllowLoopback}
	if env.Outbound.Guard != nil {
		g = *env.Outbound.Guard
	}
	return g
}

// drop forgets b if it is still k's browser, and closes it.
func (t *Tool) drop(k key, b *instance) {
	t.mu.Lock()
	if t.browsers[k] == b {
		delete(t.browsers, k)
	}
	t.mu.Unlock()
	b.mu.Lock()
	b.close()
	b.mu.Unlock()
}

func (t *Tool) stop(k key) {
	t.mu.Lock()
	b := t.browsers[k]
	t.mu.Unlock()
	if b != nil {
		t.drop(k, b)
	}
}

// Holds is false: a browser is the tool's own process, closed when idle
// (Idle), and needs nothing of its tenant's between calls.
func (t *Tool) Holds(string) bool { return false }

// Forget closes every browser of a state directory under dir: the
// tenant that owns dir is gone.
func (t *Tool) Forget(dir string) {
	t.mu.Lock()
	var gone []*instance
	for k, b := range t.browsers {
		if _, in := contain.Within(dir, k.dir); in {
			gone = append(gone, b)
			delete(t.browsers, k)
		}
	}
	t.mu.Unlock()
	for _, b := range gone {
		b.mu.Lock()
		b.close()
		b.mu.Unlock()
	}
}

// Close closes every browser (the gateway stops).
func (t *Tool) Close() error {
	t.Forget("/")
	return nil
}

// schedule arms the idle sweep when browsers run; t.mu is held.
func (t *Tool) schedule() {
	if t.reaper != nil || len(t.browsers) == 0 {
		return
	}
	t.reaper = time.AfterFunc(t.idle/4+time.Second, t.sweep)
}

// sweep closes the browsers idle for longer than t.idle.
func (t *Tool) sweep() {
	t.mu.Lock()
	t.reaper = nil
	idle := idleSince(t.browsers, time.Now().Add(-t.idle))
	for _, k := range idle {
		b := t.browsers[k]
		delete(t.browsers, k)
		go func() {
			b.mu.Lock()
			b.close()
			b.mu.Unlock()
		}()
	}
	t.schedule()
	t.mu.Unlock()
}

// idleSince are the browsers last used before cutoff and not in a call
// now (a call holds the browser's lock).
func idleSince(bs map[key]*instance, cutoff time.Time) []key {
	var out []key
	for k, b := range bs {
		if !b.mu.TryLock() {
			continue
		}
		if b.lastUsed.Before(cutoff) {
			out = append(out, k)
		}
		b.mu.Unlock()
	}
	return out
}

// status reports k's browser without starting one.
func (t *Tool) status(k key) tools.Result {
	t.mu.Lock()
	b := t.browsers[k]
	t.mu.Unlock()
	st := map[string]any{
		"enabled": true, "running": false, "profile": profileName, "driver": "openclaw",
		"transport": "cdp-pipe", "headless": true, "cdpPort": nil, "cdpUrl": nil, "pid": nil,
		"tabCount": 0,
	}
	if b != nil {
		b.mu.Lock()
		if !b.dead() && pidAlive(b.pid) {
			st["running"], st["pid"], st["tabCount"] = true, b.pid, len(b.tabs)
		}
		b.mu.Unlock()
	}
	r, _ := tools.JSONResult(st)
	return r
}

var syscallZero = syscall.Signal(0)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
