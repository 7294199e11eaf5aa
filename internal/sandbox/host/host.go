// Package host is the sandbox backend "host": no isolation at all. Commands
// run as Talon runs, with os/exec, in the real filesystem and network; it
// exists for sandbox mode off, where OpenClaw too runs commands on the
// gateway host. Isolated reports false, and the exec tool runs only what the
// exec approval policy of the gateway host allows there (an allowlist that
// asks an operator by default; tools.exec.security "full" runs anything).
//
// What it does provide is bookkeeping: every command runs in its own
// process group, and when the command ends, is killed, times out or its
// context is done, the whole group is killed, so a command leaves nothing
// running behind it (a process that moves to a new session or group with
// setsid escapes this; nothing here can stop it, as nothing isolates it).
// Paths are mapped: a working directory under sandbox.Workdir is the same
// path under Spec.Root, one under a Mount's Target is under its Source, and
// any other absolute path is the host path itself; whichever it is, it must
// resolve, symlinks included, inside Spec.Root or a Mount's Source, so that
// "/" or a link out of the workspace is refused (see Sandbox.Dir). The
// commands see real host paths ($PWD is the host directory), not /workspace. The environment
// is minimal (PATH, HOME = Spec.Root, LANG) plus Command.Env.
//
// Of the Limits only Timeout is enforced. The rlimits are not applied:
// RLIMIT_NPROC counts every process of Talon's user, so it would limit
// Talon itself, and the others would only make a command fail without
// protecting anything the command cannot reach anyway.
//
// A Backend and its Sandboxes are safe for concurrent use.
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"talon/internal/contain"
	"talon/internal/sandbox"
)

// Name is the value of sandbox.backend that selects this backend.
const Name = "host"

// Path is the PATH of the commands' environment.
const Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// drainTimeout bounds how long Wait waits, after the process group is
// dead, for output still held by a process that left the group.
const drainTimeout = 2 * time.Second

func init() {
	sandbox.Register(Name, func(settings map[string]any) (sandbox.Backend, error) {
		return New(settings)
	})
}

// Backend runs commands on the host.
type Backend struct{}

var (
	_ sandbox.Backend = (*Backend)(nil)
	_ sandbox.Sandbox = (*Sandbox)(nil)
	_ sandbox.Process = (*Process)(nil)
)

// New builds the host backend. It has no settings: any given is an error,
// so a misspelt key is not silently ignored.
func New(settings map[string]any) (*Backend, error) {
	for k := range settings {
		return nil, fmt.Errorf("host backend: unknown setting %q (it takes none)", k)
	}
	return &Backend{}, nil
}

// Name is "host".
func (*Backend) Name() string { return Name }

// Isolated is false: commands run as Talon runs.
func (*Backend) Isolated() bool { return false }

// Check always succeeds: running a process needs nothing but the host.
func (*Backend) Check(context.Context) error { return nil }

// Open checks spec and returns a sandbox running commands in spec.Root.
// Nothing is started until a command is.
func (*Backend) Open(_ context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("opening host sandbox: %w", err)
	}
	fi, err := os.Stat(spec.Root)
	if err != nil {
		return nil, fmt.Errorf("opening host sandbox %s: root: %w", spec.ID, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("opening host sandbox %s: root %s is not a directory", spec.ID, spec.Root)
	}
	return &Sandbox{spec: spec, limits: spec.Limits.WithDefaults()}, nil
}

// Sandbox is an open host sandbox: a root directory and the commands
// running in it.
type Sandbox struct {
	spec   sandbox.Spec
	limits sandbox.Limits
	procs  sandbox.Procs
}

// Isolated is false, as for the backend; tools that hold only a Sandbox
// can ask it.
func (*Sandbox) Isolated() bool { return false }

// Dir maps a working directory inside the sandbox to the host directory
// it stands for, and refuses one outside the sandbox's own directories:
// "" and sandbox.Workdir are Spec.Root, paths under Workdir are under
// Root, paths under a mount target are under its source, relative ones
// are relative to Workdir, and any other absolute path is the host path
// itself. The result is the real path, every symlink resolved, and it must
// be Root or a mount's source or inside one: the host backend isolates
// nothing, so the working directory is what keeps a command's relative
// paths, and the approval analysis's rules about reading outside the
// working directory, in the workspace. "/", "/root", ".." out of the
// workspace and a symlink that leads out are errors that say so.
//
// The directory is resolved when Dir is called; a command that replaces a
// directory on the path with a symlink between then and the chdir of the
// next command's start can still move that command out.
func (s *Sandbox) Dir(dir string) (string, error) {
	if strings.IndexByte(dir, 0) >= 0 {
		return "", fmt.Errorf("working directory %q contains a NUL byte", dir)
	}
	name := dir
	if name == "" {
		name = sandbox.Workdir
	}
	mapped, inside := s.hostDir(dir)
	if !inside {
		// Refused by its text first, so that the answer says nothing about
		// which host paths exist.
		return "", fmt.Errorf("working directory %q is outside the workspace; on the gateway host (sandbox backend %q) commands run only inside the workspace: give a path relative to it, or under %s", name, Name, sandbox.Workdir)
	}
	// Not contain.Resolved, whose answer is about one directory: here the
	// working directory must exist, and it may lead from one of the
	// sandbox's directories into another (a link in a mount to the root).
	real, err := filepath.EvalSymlinks(mapped)
	if err != nil {
		return "", dirError(name, err)
	}
	for _, base := range s.dirs() {
		if b, err := filepath.EvalSymlinks(base); err == nil {
			if _, ok := contain.Within(b, real); ok {
				if err := isDir(name, real); err != nil {
					return "", err
				}
				return real, nil
			}
		}
	}
	return "", fmt.Errorf("working directory %q leads out of the workspace through a symbolic link; on the gateway host (sandbox backend %q) commands run only inside the workspace", name, Name)
}

// hostDir maps dir to a host path as Dir describes, and reports whether
// that path is, by its text, inside Root or a mount's source.
func (s *Sandbox) hostDir(dir string) (string, bool) {
	if dir == "" {
		return s.spec.Root, true
	}
	if !path.IsAbs(dir) {
		dir = path.Join(sandbox.Workdir, dir)
	}
	dir = path.Clean(dir)
	if rest, ok := contain.Within(sandbox.Workdir, dir); ok {
		return filepath.Join(s.spec.Root, rest), true
	}
	for _, m := range s.spec.Mounts {
		if rest, ok := contain.Within(m.Target, dir); ok {
			return filepath.Join(m.Source, rest), true
		}
	}
	for _, base := range s.dirs() {
		if _, ok := contain.Within(base, dir); ok {
			return dir, true
		}
	}
	return dir, false
}

// dirs are the host directories commands may work in: Root and the
// mounts' sources.
func (s *Sandbox) dirs() []string {
	out := []string{s.spec.Root}
	for _, m := range s.spec.Mounts {
		out = append(out, m.Source)
	}
	return out
}

// dirError says why the working directory name cannot be used, without
// the host path the error names.
func dirError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("working directory %q does not exist", name)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("working directory %q: a part of it is not a directory", name)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("working directory %q: permission denied", name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("working directory %q cannot be resolved: %v", name, err)
}

// isDir reports an error when real, the working directory name resolved,
// is not a directory.
func isDir(name, real string) error {
	fi, err := os.Stat(real)
	if err != nil {
		return dirError(name, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("working directory %q is not a directory", name)
	}
	return nil
}

// Start runs cmd in its own process group. The group is killed when the
// command ends, when Kill is called, when ctx is done or when the timeout
// (cmd.Timeout, else the spec's) passes.
func (s *Sandbox) Start(ctx context.Context, cmd sandbox.Command) (sandbox.Process, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return nil, fmt.Errorf("starting a command in host sandbox %s: no program given", s.spec.ID)
	}
	for _, a := range cmd.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("starting a command in host sandbox %s: argument %q contains a NUL byte", s.spec.ID, a)
		}
	}
	env := []string{"PATH=" + Path, "HOME=" + s.spec.Root, "LANG=C.UTF-8"}
	for _, kv := range cmd.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("starting a command in host sandbox %s: environment entry %q is not KEY=VALUE", s.spec.ID, kv)
		}
		env = append(env, kv)
	}
	dir, err := s.Dir(cmd.Dir)
	if err != nil {
		return nil, fmt.Errorf("starting a command in host sandbox %s: %w", s.spec.ID, err)
	}
	timeout := s.limits.Timeout
	if cmd.Timeout > 0 {
		timeout = cmd.Timeout
	}

	c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
	c.Dir, c.Env = dir, env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Process{done: make(chan struct{})}
	// Streams that are not files get a pipe that p copies itself, so that
	// Wait waits for the process and its group, not for a reader or a
	// writer of the caller's.
	if err := p.plumb(c, cmd); err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("starting a command in host sandbox %s: %w", s.spec.ID, err)
	}

	errClosed := fmt.Errorf("starting a command in host sandbox %s: the sandbox is closed", s.spec.ID)
	if s.procs.Closed() {
		p.closeFiles()
		return nil, errClosed
	}
	if err := c.Start(); err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("starting %s in host sandbox %s: %w", cmd.Argv[0], s.spec.ID, err)
	}
	p.pid = c.Process.Pid
	for _, f := range p.childEnds {
		f.Close()
	}
	p.childEnds = nil
	p.startCopies()
	added := s.procs.Add(p) // before supervise, whose end removes it
	if !added {             // Close ran while it started
		p.Kill()
	}
	go p.supervise(ctx, c, timeout, func() { s.procs.Remove(p) })
	if !added {
		p.Wait()
		return nil, errClosed
	}
	return p, nil
}

// Close kills every command still running and waits for them to end.
// Commands cannot start after it.
func (s *Sandbox) Close() error {
	s.procs.Close()
	return nil
}

// Process is a command started by a host sandbox.
type Process struct {
	pid int

	// Set up by plumb, used by Start.
	childEnds []*os.File // pipe ends the child gets; closed once it has them
	readEnds  []*os.File // pipe ends p reads output from
	copies    []func()   // output copies, started after Start
	stdinCopy func()     // copies a non-file Stdin into the child's pipe
	stdinW    *os.File   // the write end of that pipe
	copyWG    sync.WaitGroup

	killOnce sync.Once
	killed   chan struct{} // closed by Kill
	mu       sync.Mutex
	timedOut bool

	done chan struct{} // closed when exit and err are set
	exit sandbox.Exit
	err  error
}

// plumb connects cmd's streams to c.
func (p *Process) plumb(c *exec.Cmd, cmd sandbox.Command) error {
	p.killed = make(chan struct{})
	switch in := cmd.Stdin.(type) {
	case nil:
	case *os.File:
		c.Stdin = in
	default:
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("creating the stdin pipe: %w", err)
		}
		c.Stdin, p.stdinW = r, w
		p.childEnds = append(p.childEnds, r)
		p.stdinCopy = func() {
			// The copy ends when the caller's reader does or the child
			// stops reading; Wait does not wait for it.
			io.Copy(w, in)
			w.Close()
		}
	}
	out, err := p.outPipe(cmd.Stdout)
	if err != nil {
		return err
	}
	if out != nil { // a nil *os.File in the interface would be used, and fail
		c.Stdout = out
	}
	errOut := out
	if !sandbox.SameWriter(cmd.Stdout, cmd.Stderr) {
		if errOut, err = p.outPipe(cmd.Stderr); err != nil {
			return err
		}
	}
	if errOut != nil {
		c.Stderr = errOut
	}
	return nil
}

// outPipe returns what the child writes to for w: nothing (/dev/null), w
// itself when it is a file, or a pipe copied to w.
func (p *Process) outPipe(w io.Writer) (*os.File, error) {
	switch w := w.(type) {
	case nil:
		return nil, nil
	case *os.File:
		return w, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating an output pipe: %w", err)
	}
	p.childEnds = append(p.childEnds, pw)
	p.readEnds = append(p.readEnds, r)
	p.copies = append(p.copies, func() {
		defer p.copyWG.Done()
		io.Copy(w, r)
	})
	return pw, nil
}

func (p *Process) startCopies() {
	p.copyWG.Add(len(p.copies))
	for _, f := range p.copies {
		go f()
	}
	if p.stdinCopy != nil {
		go p.stdinCopy()
	}
}

// closeFiles closes every pipe end p holds (after a failed start).
func (p *Process) closeFiles() {
	for _, f := range p.childEnds {
		f.Close()
	}
	for _, f := range p.readEnds {
		f.Close()
	}
	if p.stdinW != nil {
		p.stdinW.Close()
	}
}

// supervise kills the group on timeout, ctx or Kill, and when the leader
// exits; then reaps the leader and lets the output drain.
func (p *Process) supervise(ctx context.Context, c *exec.Cmd, timeout time.Duration, forget func()) {
	defer forget()
	exited := make(chan error, 1)
	go func() {
		// Wait for the leader without reaping it: while it is a zombie its
		// pid, and so the group id, cannot be reused, and killing the
		// group cannot hit a stranger.
		var info unix.Siginfo
		var err error
		for {
			err = unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		exited <- err
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var werr error
	select {
	case werr = <-exited:
	case <-timer.C:
		p.mu.Lock()
		p.timedOut = true
		p.mu.Unlock()
		p.killGroup()
		werr = <-exited
	case <-ctx.Done():
		p.killGroup()
		werr = <-exited
	case <-p.killed:
		p.killGroup()
		werr = <-exited
	}
	// Whatever the leader left behind in its group ends with it.
	p.killGroup()
	err := c.Wait()
	p.drain()
	p.mu.Lock()
	timedOut := p.timedOut
	p.mu.Unlock()
	p.exit = exitOf(c.ProcessState, timedOut)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.err = fmt.Errorf("waiting for process %d: %w", p.pid, err)
	} else if werr != nil {
		p.err = fmt.Errorf("watching process %d: %w", p.pid, werr)
	}
	if p.stdinW != nil {
		p.stdinW.Close()
	}
	close(p.done)
}

// drain waits for the output copies to finish; a process that left the
// group may still hold a pipe, so after drainTimeout the pipes are closed.
func (p *Process) drain() {
	copied := make(chan struct{})
	go func() {
		p.copyWG.Wait()
		close(copied)
	}()
	select {
	case <-copied:
	case <-time.After(drainTimeout):
		for _, f := range p.readEnds {
			f.Close()
		}
		<-copied
	}
	for _, f := range p.readEnds {
		f.Close()
	}
}

func (p *Process) killGroup() {
	// ESRCH: the group is gone already.
	syscall.Kill(-p.pid, syscall.SIGKILL)
}

func exitOf(ps *os.ProcessState, timedOut bool) sandbox.Exit {
	e := sandbox.Exit{Code: -1, TimedOut: timedOut}
	if ps == nil {
		return e
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal().String()
		return e
	}
	e.Code = ps.ExitCode()
	return e
}

// Wait waits for the command to end and its output to be written.
func (p *Process) Wait() (sandbox.Exit, error) {
	<-p.done
	return p.exit, p.err
}

// Kill ends the command and everything in its process group. Killing a
// command that has ended does nothing.
func (p *Process) Kill() error {
	p.killOnce.Do(func() { close(p.killed) })
	return nil
}

// Pid is the process id of the command, which is also its process group id.
func (p *Process) Pid() int { return p.pid }
