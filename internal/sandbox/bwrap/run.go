package bwrap

import (
	"context"
	"encoding/json"
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

	"golang.org/x/sys/unix"

	"talon/internal/sandbox"
)

// waitDelay bounds how long Wait waits for output after bwrap exits and
// the command's namespace is killed; its pipes close at once unless that
// failed.
const waitDelay = 2 * time.Second

// startTimeout bounds how long Start waits for bwrap to make the
// namespaces; it takes milliseconds.
const startTimeout = 30 * time.Second

// Sandbox is an open bwrap sandbox: the arguments its commands share and
// the commands running.
type Sandbox struct {
	spec    sandbox.Spec
	limits  sandbox.Limits
	bwrap   string         // the bwrap binary
	exe     string         // Talon's binary, the helper
	etc     string         // Talon's /etc files
	cgroups *cgroupParents // root only: where command cgroups go
	args    []string       // bwrap's arguments up to the helper
	helper  helperConfig
	procs   sandbox.Procs
	// binds are the root and the mount sources opened when the spec's
	// paths are Real, passed to every command from fd bindFD on.
	binds []*os.File
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

	p := &process{killed: make(chan struct{}), done: make(chan struct{}), status: make(chan []byte, 1), initFD: -1}
	if s.cgroups != nil {
		cg, err := s.cgroups.create(s.limits)
		if err != nil {
			return nil, err
		}
		p.cgroup = cg
	}
	// bwrap writes the pid of the namespace's first process to fd 4, and
	// that process waits, set up but having started nothing, until fd 5
	// gives it a byte: time to take a pidfd of it (see supervise) and,
	// as root, to put it into the cgroup, so that all it starts is
	// counted there.
	args = append([]string{"--info-fd", "4", "--block-fd", "5"}, args...)
	c := exec.Command(s.bwrap, args...)
	c.Env, c.Dir, c.WaitDelay = env, "/", waitDelay
	if err := p.plumb(c, cmd, s.binds); err != nil {
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
	if err := p.release(); err != nil {
		p.abort()
		if msg := strings.TrimSpace(string(p.stderr.head())); msg != "" {
			err = fmt.Errorf("%w (%s)", err, msg)
		}
		return nil, err
	}
	added := s.procs.Add(p)
	go p.supervise(ctx, timeout, func() { s.procs.Remove(p) })
	if !added {
		p.Kill()
		p.Wait()
		return nil, errSandboxClosed
	}
	return p, nil
}

// release takes a pidfd of the sandbox's init (the first process in its
// namespaces) while bwrap holds it, set up but with nothing started yet;
// moves it into the command's cgroup (as root); then lets it go on. On an
// error the init is still held: abort kills it before it lets it go (an
// EOF on the block pipe lets it go too).
func (p *process) release() error {
	p.infoW.Close()
	p.blockR.Close()
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	// bwrap writes the info as soon as it has made the namespaces. ctx
	// does not cut this short: the init may exist by then, and must be
	// known to be killed; supervise ends the command if ctx is done.
	p.infoR.SetReadDeadline(time.Now().Add(startTimeout))
	err := json.NewDecoder(p.infoR).Decode(&info)
	p.infoR.Close()
	if err != nil {
		// bwrap failed before it made the namespaces (abort reports its
		// complaint), or did not get there in time.
		return fmt.Errorf("reading bwrap's info: %w", err)
	}
	if info.ChildPID <= 0 {
		return errors.New("bwrap reported no child-pid")
	}
	p.initPID = info.ChildPID
	if p.initFD, err = unix.PidfdOpen(info.ChildPID, 0); err != nil {
		p.initFD = -1
		return fmt.Errorf("watching the sandbox's init: %w", err)
	}
	if p.cgroup != nil {
		if err := p.cgroup.add(info.ChildPID); err != nil {
			return err
		}
	}
	if _, err := p.blockW.Write([]byte{0}); err != nil {
		return fmt.Errorf("letting the sandbox start: %w", err)
	}
	p.blockW.Close()
	return nil
}

// abort ends a start that release could not finish: bwrap and the init it
// holds are killed, then the block pipe closed, and bwrap reaped.
func (p *process) abort() {
	p.killInit()
	if p.initFD < 0 && p.initPID > 0 {
		// No pidfd: the init is held, alive, so its pid is its own.
		syscall.Kill(p.initPID, syscall.SIGKILL)
	}
	p.cmd.Process.Kill()
	p.blockW.Close()
	p.cmd.Wait()
	if p.stdinW != nil {
		p.stdinW.Close()
	}
	if p.cgroup != nil {
		p.waitInit()
		p.cgroup.remove()
	}
	if p.initFD >= 0 {
		unix.Close(p.initFD)
	}
}

// waitInit waits, for a while at most, until the killed init is gone:
// the kernel has then ended every process of its namespace, and their
// cgroup is empty.
func (p *process) waitInit() {
	if p.initFD < 0 {
		return
	}
	deadline := time.Now().Add(waitDelay)
	fds := []unix.PollFd{{Fd: int32(p.initFD), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
		if err != unix.EINTR || time.Now().After(deadline) {
			return
		}
	}
}

// killInit kills the init of the command's PID namespace, and with it,
// by the kernel's hand, every process in the namespace.
func (p *process) killInit() {
	if p.initFD >= 0 {
		unix.PidfdSendSignal(p.initFD, unix.SIGKILL, nil, 0)
	}
}

var errSandboxClosed = errors.New("the sandbox is closed")

// Close kills the commands still running and removes the sandbox's files.
// Commands cannot start after it.
func (s *Sandbox) Close() error {
	if !s.procs.Close() {
		return nil
	}
	for _, f := range s.binds {
		f.Close()
	}
	if err := os.RemoveAll(s.etc); err != nil {
		return fmt.Errorf("closing bwrap sandbox %s: %w", s.spec.ID, err)
	}
	return nil
}

// process is a command started in a bwrap sandbox.
type process struct {
	cmd    *exec.Cmd
	cgroup *commandCgroup

	statusR, statusW *os.File    // the helper's status pipe
	status           chan []byte // what the helper wrote to it
	stderr           *headWriter // the start of stderr, for bwrap's complaints
	stdinW           *os.File    // the write end of a copied stdin
	stdinR           *os.File
	stdinCopy        func()

	infoR, infoW, blockR, blockW *os.File // bwrap's --info-fd and --block-fd
	initFD                       int      // a pidfd of the sandbox's init, -1 before release
	initPID                      int

	killOnce sync.Once
	killed   chan struct{} // closed by Kill

	done chan struct{} // closed when exit and err are set
	exit sandbox.Exit
	err  error
}

// plumb connects cmd's streams and the status pipe to c.
func (p *process) plumb(c *exec.Cmd, cmd sandbox.Command, binds []*os.File) error {
	var err error
	if p.statusR, p.statusW, err = os.Pipe(); err != nil {
		return fmt.Errorf("creating the status pipe: %w", err)
	}
	if p.infoR, p.infoW, err = os.Pipe(); err != nil {
		return fmt.Errorf("creating bwrap's info pipe: %w", err)
	}
	if p.blockR, p.blockW, err = os.Pipe(); err != nil {
		return fmt.Errorf("creating bwrap's block pipe: %w", err)
	}
	c.ExtraFiles = append([]*os.File{p.statusW, p.infoW, p.blockR}, binds...) // fds 3 (statusFD), 4, 5, then bindFD…
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
		if sandbox.SameWriter(cmd.Stdout, cmd.Stderr) {
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
	for _, f := range []*os.File{p.statusR, p.statusW, p.stdinR, p.stdinW, p.infoR, p.infoW, p.blockR, p.blockW} {
		if f != nil {
			f.Close()
		}
	}
	if p.cgroup != nil {
		p.cgroup.remove()
	}
}

// supervise kills bwrap on timeout, ctx or Kill, waits for it to exit,
// then kills the init of the command's namespace, so that nothing the
// command started outlives it, and works out how the command ended.
//
// bwrap's --die-with-parent would kill the init when bwrap dies, but bwrap
// sets that up only after it has made the init: a bwrap killed early
// would leave it running. The pidfd taken in release has no such gap, and
// cannot hit a process that reused the pid.
func (p *process) supervise(ctx context.Context, timeout time.Duration, forget func()) {
	defer forget()
	exited := make(chan struct{})
	go func() {
		// Wait for bwrap's exit without reaping it; cmd.Wait below reaps
		// it and waits for the output.
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, p.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		close(exited)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut, killed := false, false
	select {
	case <-exited:
	case <-timer.C:
		timedOut, killed = true, true
	case <-ctx.Done():
		killed = true
	case <-p.killed:
		killed = true
	}
	if killed {
		p.cmd.Process.Kill()
		<-exited
	}
	p.killInit()
	werr := p.cmd.Wait()
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
	close(p.done)
	// After Wait has its answer: the cgroup can go only once the kernel
	// has ended the namespace's processes, which takes it a moment.
	if p.cgroup != nil {
		p.waitInit()
		p.cgroup.remove()
	}
	unix.Close(p.initFD)
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
