package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"talon/internal/sandbox"
)

// waitDelay bounds how long Wait waits for output after bwrap exits; the
// command's PID namespace dies with bwrap, so its pipes close at once
// unless that failed.
const waitDelay = 2 * time.Second

// Sandbox is an open bwrap sandbox: the arguments its commands share and
// the commands running.
type Sandbox struct {
	spec   sandbox.Spec
	limits sandbox.Limits
	bwrap  string      // the bwrap binary
	exe    string      // Talon's binary, the helper
	etc    string      // Talon's /etc files
	pids   *pidsParent // root only: where command cgroups go
	args   []string    // bwrap's arguments up to the helper
	helper helperConfig
	procs  sandbox.Procs
}

// Start runs cmd in new namespaces. It is killed, with everything it
// started, when it times out (cmd.Timeout, else the spec's), when ctx is
// done or on Kill.
func (s *Sandbox) Start(ctx context.Context, cmd sandbox.Command) (sandbox.Process, error) {
	p, err := s.start(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("starting a command in bwrap sandbox %s: %w", s.spec.ID, err)
	}
	return p, nil
}

func (s *Sandbox) start(ctx context.Context, cmd sandbox.Command) (*process, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return nil, errors.New("no program given")
	}
	for _, a := range cmd.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("argument %q contains a NUL byte", a)
		}
	}
	// bwrap passes its own environment on, and nothing else: the
	// command's variables never appear on a command line.
	env := []string{"PATH=" + Path, "HOME=" + sandbox.Workdir, "LANG=C.UTF-8"}
	for _, kv := range cmd.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
		env = append(env, kv)
	}
	dir := cmd.Dir
	if strings.IndexByte(dir, 0) >= 0 {
		return nil, fmt.Errorf("working directory %q contains a NUL byte", dir)
	}
	if !path.IsAbs(dir) {
		dir = path.Join(sandbox.Workdir, dir)
	}
	timeout := s.limits.Timeout
	if cmd.Timeout > 0 {
		timeout = cmd.Timeout
	}
	h := s.helper
	h.dir, h.argv = path.Clean(dir), cmd.Argv
	args := append(s.args[:len(s.args):len(s.args)], helperArgs(h)...)

	p := &process{killed: make(chan struct{}), done: make(chan struct{}), status: make(chan []byte, 1)}
	c := exec.Command(s.bwrap, args...)
	if s.pids != nil {
		cg, err := s.pids.create(s.limits.Processes)
		if err != nil {
			return nil, err
		}
		p.cgroup = cg
		c = exec.Command(s.exe, append([]string{joinArg, cg.procs(), s.bwrap}, args...)...)
	}
	c.Env, c.Dir, c.WaitDelay = env, "/", waitDelay
	if err := p.plumb(c, cmd); err != nil {
		p.cleanup()
		return nil, err
	}

	if s.procs.Closed() {
		p.cleanup()
		return nil, errSandboxClosed
	}
	if err := c.Start(); err != nil {
		p.cleanup()
		return nil, fmt.Errorf("running bwrap: %w", err)
	}
	p.cmd = c
	p.afterStart()
	added := s.procs.Add(p)
	go p.supervise(ctx, timeout, func() { s.procs.Remove(p) })
	if !added {
		p.Kill()
		p.Wait()
		return nil, errSandboxClosed
	}
	return p, nil
}

var errSandboxClosed = errors.New("the sandbox is closed")

// Close kills the commands still running and removes the sandbox's files.
// Commands cannot start after it.
func (s *Sandbox) Close() error {
	if !s.procs.Close() {
		return nil
	}
	if err := os.RemoveAll(s.etc); err != nil {
		return fmt.Errorf("closing bwrap sandbox %s: %w", s.spec.ID, err)
	}
	return nil
}

// process is a command started in a bwrap sandbox.
type process struct {
	cmd    *exec.Cmd
	cgroup *pidsCgroup

	statusR, statusW *os.File    // the helper's status pipe
	status           chan []byte // what the helper wrote to it
	stderr           *headWriter // the start of stderr, for bwrap's complaints
	stdinW           *os.File    // the write end of a copied stdin
	stdinR           *os.File
	stdinCopy        func()

	killOnce sync.Once
	killed   chan struct{} // closed by Kill

	done chan struct{} // closed when exit and err are set
	exit sandbox.Exit
	err  error
}

// plumb connects cmd's streams and the status pipe to c.
func (p *process) plumb(c *exec.Cmd, cmd sandbox.Command) error {
	var err error
	if p.statusR, p.statusW, err = os.Pipe(); err != nil {
		return fmt.Errorf("creating the status pipe: %w", err)
	}
	c.ExtraFiles = []*os.File{p.statusW} // fd 3: statusFD
	switch in := cmd.Stdin.(type) {
	case nil:
	case *os.File:
		c.Stdin = in
	default:
		// exec.Cmd would make Wait wait for the caller's reader to end;
		// with a pipe of our own it waits for the command only.
		if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
			return fmt.Errorf("creating the stdin pipe: %w", err)
		}
		c.Stdin = p.stdinR
		w := p.stdinW
		p.stdinCopy = func() {
			io.Copy(w, in)
			w.Close()
		}
	}
	// Stdout and stderr as exec.Cmd does them (one pipe when they are the
	// same writer), with the start of stderr kept: when bwrap fails, its
	// message is there.
	p.stderr = &headWriter{w: cmd.Stderr}
	if cmd.Stderr == nil {
		p.stderr.w = io.Discard
	}
	c.Stderr = p.stderr
	if cmd.Stdout != nil {
		c.Stdout = cmd.Stdout
		if sameWriter(cmd.Stdout, cmd.Stderr) {
			c.Stdout = p.stderr
		}
	}
	return nil
}

// afterStart closes the child's ends of the pipes and starts reading the
// status and copying stdin.
func (p *process) afterStart() {
	p.statusW.Close()
	if p.stdinR != nil {
		p.stdinR.Close()
	}
	if p.stdinCopy != nil {
		go p.stdinCopy()
	}
	go func() {
		b, _ := io.ReadAll(io.LimitReader(p.statusR, 4096))
		p.statusR.Close()
		p.status <- b
	}()
}

// cleanup releases what a start that failed took.
func (p *process) cleanup() {
	for _, f := range []*os.File{p.statusR, p.statusW, p.stdinR, p.stdinW} {
		if f != nil {
			f.Close()
		}
	}
	if p.cgroup != nil {
		p.cgroup.remove()
	}
}

// supervise kills bwrap on timeout, ctx or Kill, waits for it, and works
// out how the command ended. Killing bwrap is enough: the init of the
// command's PID namespace dies with it (--die-with-parent), and the kernel
// kills everything else in the namespace.
//
// bwrap's own --die-with-parent (PR_SET_PDEATHSIG) fires when the thread
// that started it ends; the Go runtime ends threads only for goroutines
// that exit locked to one, which Talon does not do.
func (p *process) supervise(ctx context.Context, timeout time.Duration, forget func()) {
	defer forget()
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var werr error
	timedOut, killed := false, false
	select {
	case werr = <-waited:
	case <-timer.C:
		timedOut, killed = true, true
	case <-ctx.Done():
		killed = true
	case <-p.killed:
		killed = true
	}
	if killed {
		// os.Process signals through a pidfd: never a stranger that
		// reused the pid.
		p.cmd.Process.Kill()
		werr = <-waited
	}
	if p.stdinW != nil {
		p.stdinW.Close()
	}
	var status []byte
	select {
	case status = <-p.status:
	case <-time.After(waitDelay):
		p.statusR.Close()
		status = <-p.status
	}
	p.exit, p.err = p.result(werr, status, timedOut, killed)
	if p.cgroup != nil {
		p.cgroup.remove()
	}
	close(p.done)
}

// result is how the command ended, from bwrap's wait status and what the
// helper reported.
func (p *process) result(werr error, status []byte, timedOut, killed bool) (sandbox.Exit, error) {
	if killed {
		return sandbox.Exit{Code: -1, Signal: "killed", TimedOut: timedOut}, nil
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return sandbox.Exit{Code: -1}, fmt.Errorf("waiting for bwrap: %w", werr)
	}
	ps := p.cmd.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// bwrap itself was killed, not by Talon: its command went with it.
		return sandbox.Exit{Code: -1, Signal: ws.Signal().String()}, nil
	}
	exit := sandbox.Exit{Code: ps.ExitCode()}
	switch {
	case len(status) > 0 && status[0] == statusReady:
		return exit, nil
	case len(status) > 0 && status[0] == statusFailed:
		return exit, fmt.Errorf("preparing the command: %s", status[1:])
	default:
		msg := strings.TrimSpace(string(p.stderr.head()))
		if msg == "" {
			msg = "no message"
		}
		return exit, fmt.Errorf("bwrap could not set up the sandbox (exit %d): %s", exit.Code, msg)
	}
}

// Wait waits for the command to end and its output to be written.
func (p *process) Wait() (sandbox.Exit, error) {
	<-p.done
	return p.exit, p.err
}

// Kill ends the command and everything it started. Killing a command that
// has ended does nothing.
func (p *process) Kill() error {
	p.killOnce.Do(func() { close(p.killed) })
	return nil
}

// headWriter writes to w and keeps the first bytes written.
type headWriter struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

const headSize = 2048

func (h *headWriter) Write(b []byte) (int, error) {
	h.mu.Lock()
	if n := min(len(b), headSize-len(h.buf)); n > 0 {
		h.buf = append(h.buf, b[:n]...)
	}
	h.mu.Unlock()
	return h.w.Write(b)
}

func (h *headWriter) head() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf
}

// sameWriter reports whether a and b are the same writer; writers that
// cannot be compared are different.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a != nil && a == b
}
