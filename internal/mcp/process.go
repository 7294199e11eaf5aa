package mcp

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"talon/internal/config"
)

// stopGrace is how long a stdio server gets after stdin closes, and again
// after SIGTERM, before the next, harsher step.
const stopGrace = 3 * time.Second

// inheritedEnv are the only variables a stdio server gets from the gateway;
// everything else (API keys, tokens) stays with Talon.
var inheritedEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// proc is one stdio server process. We start and reap it ourselves (rather
// than through the SDK's CommandTransport) so its exit is always observed,
// it is always reaped, and stopping it never races a second Wait.
type proc struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of the child's stdin
	stdout *os.File // our end of the child's stdout
	stderr *stderrLog
	exited chan struct{} // closed once the process is reaped
	err    error         // cmd.Wait's result, written before exited closes
}

// childEnv is the environment of a stdio server.
func childEnv(extra map[string]string) ([]string, error) {
	env := map[string]string{}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env %q: names must be non-empty without '=' or NUL, values without NUL", k)
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out, nil
}

func startProc(name string, cfg config.MCPServer, log *slog.Logger) (*proc, error) {
	env, err := childEnv(cfg.Env)
	if err != nil {
		return nil, err
	}
	path, err := exec.LookPath(strings.TrimSpace(cfg.Command))
	if err != nil {
		return nil, fmt.Errorf("finding command: %w", err)
	}
	cmd := exec.Command(path, cfg.Args...)
	cmd.Env = env
	cmd.Dir = cfg.Cwd
	// If a grandchild keeps stderr open after the server exits, Wait
	// would block on it; this bounds that.
	cmd.WaitDelay = stopGrace
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	p := &proc{cmd: cmd, stdin: inW, stdout: outR, stderr: newStderrLog(log, name), exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	err = cmd.Start()
	inR.Close() // the child has its copies now
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	go func() {
		p.err = cmd.Wait()
		p.stderr.flush()
		close(p.exited)
	}()
	return p, nil
}

// pid is the process id, for operators and tests.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the process the way the MCP spec asks: close its stdin, wait,
// SIGTERM, wait, SIGKILL; it returns once the process is reaped.
func (p *proc) stop() {
	p.stdin.Close() // may already be closed by the session; harmless
	if p.waitExit(stopGrace) {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if p.waitExit(stopGrace) {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *proc) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitText says how the process ended; valid once exited is closed.
func (p *proc) exitText() string {
	s := "exit status 0"
	if p.err != nil {
		s = p.err.Error()
	}
	if tail := p.stderr.tailText(); tail != "" {
		s += "; stderr: " + tail
	}
	return s
}
