package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"talon/internal/sandbox"
)

// box is an open Sandbox: one reference to a container.
type box struct {
	b      *Backend
	c      *container
	limits sandbox.Limits
	procs  sandbox.Procs
}

var _ sandbox.Sandbox = (*box)(nil)

// Start runs cmd in the container with exec.
func (x *box) Start(ctx context.Context, cmd sandbox.Command) (sandbox.Process, error) {
	if err := checkCommand(&cmd); err != nil {
		return nil, fmt.Errorf("docker sandbox %s: %w", x.c.sid, err)
	}
	closed := x.procs.Closed()
	x.b.mu.Lock()
	replaced := x.c.replaced
	x.b.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("docker sandbox %s: closed", x.c.sid)
	case replaced:
		return nil, fmt.Errorf("docker sandbox %s: its container was replaced for a changed configuration; open the sandbox again", x.c.sid)
	}
	timeout := x.limits.Timeout
	if cmd.Timeout > 0 {
		timeout = cmd.Timeout
	}
	p, down, err := x.startOnce(ctx, cmd, timeout)
	if down {
		// Its processes were all killed (by a command, or by a Kill that
		// had to kill the container): start it again, with the same
		// workspace and a fresh /tmp.
		if err = x.restart(ctx); err == nil {
			p, _, err = x.startOnce(ctx, cmd, timeout)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("starting %q in docker sandbox %s: %w", cmd.Argv[0], x.c.sid, err)
	}
	if !x.procs.Add(p) {
		_ = p.Kill()
		return nil, fmt.Errorf("docker sandbox %s: closed", x.c.sid)
	}
	select {
	case <-p.done:
		x.procs.Remove(p) // ended before it was added: forget ran first
	default:
	}
	return p, nil
}

// startOnce starts cmd and waits until it runs, or has failed to. down
// reports a container that no longer runs.
func (x *box) startOnce(ctx context.Context, cmd sandbox.Command, timeout time.Duration) (p *process, down bool, err error) {
	x.c.ensureKiller(ctx, x.b.engine)
	p, err = startExec(ctx, x.b.engine, x.c, cmd, timeout, x.forget)
	if err != nil {
		var ae *apiError
		return nil, errors.As(err, &ae) && strings.Contains(ae.message, "is not running"), err
	}
	<-p.pidKnown
	if p.pid != 0 {
		return p, false, nil
	}
	// The wrapper did not start: the engine said why instead of a PID.
	<-p.done
	if p.gone || p.exit.Code == 126 && x.stopped(ctx, p.startMsg) {
		return nil, true, errors.New(strings.TrimSpace(p.startMsg))
	}
	if p.startMsg != "" && cmd.Stderr != nil {
		_, _ = io.WriteString(cmd.Stderr, p.startMsg)
	}
	return p, false, nil
}

// stopped reports whether an exec that runc could not start failed for
// its container having stopped, or stopping, under it. The engine's words
// for that vary with the moment (not running, stopped, task not found, a
// broken pipe to runc's init); a command's own mistakes (a missing working
// directory or program) are told apart by theirs. Anything else waits up
// to 2 s for the container to stop.
func (x *box) stopped(ctx context.Context, msg string) bool {
	for _, s := range []string{"not running", "stopped", "task", "No such container"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	for _, s := range []string{"chdir", "no such file", "not found", "permission denied"} {
		if strings.Contains(msg, s) {
			return false
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	q := url.Values{"condition": {"not-running"}}
	return x.b.engine.call(wctx, "POST", "/containers/"+x.c.id+"/wait", q, nil, nil) == nil
}

// restart starts the stopped container again, once it has stopped.
func (x *box) restart(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	q := url.Values{"condition": {"not-running"}}
	if err := x.b.engine.call(wctx, "POST", "/containers/"+x.c.id+"/wait", q, nil, nil); err != nil {
		return fmt.Errorf("waiting for the stopped container: %w", err)
	}
	if err := x.b.engine.call(ctx, "POST", "/containers/"+x.c.id+"/start", nil, nil, nil); err != nil {
		return fmt.Errorf("starting the stopped container again: %w", err)
	}
	return nil
}

func (x *box) forget(p *process) { x.procs.Remove(p) }

// Close kills the commands started through this Sandbox, waits for them
// to end and, when it was the last Sandbox open on its container, removes
// the container.
func (x *box) Close() error {
	if !x.procs.Close() {
		return nil
	}
	return x.b.release(x.c)
}

func checkCommand(cmd *sandbox.Command) error {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return errors.New("empty command")
	}
	for _, a := range cmd.Argv {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("argument %q contains a NUL byte", a)
		}
	}
	for _, e := range cmd.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || !validEnvName(k) || strings.ContainsRune(e, 0) {
			return fmt.Errorf("environment entry %q: want NAME=value", e)
		}
	}
	switch {
	case cmd.Dir == "":
		cmd.Dir = sandbox.Workdir
	case strings.ContainsRune(cmd.Dir, 0):
		return fmt.Errorf("working directory %q contains a NUL byte", cmd.Dir)
	case !path.IsAbs(cmd.Dir):
		cmd.Dir = path.Join(sandbox.Workdir, cmd.Dir)
	default:
		cmd.Dir = path.Clean(cmd.Dir)
	}
	return nil
}

// process is one exec.
type process struct {
	e      *engine
	c      *container
	execID string
	conn   *net.UnixConn
	forget func(*process)

	pidOnce  sync.Once
	pidKnown chan struct{} // closed when pid is set, or the stream ended without it
	pid      int           // inside the container; 0 when unknown
	startMsg string        // the engine's message when the wrapper did not start
	gone     bool          // the exec vanished: its container stopped
	stdin    io.Reader

	done chan struct{} // closed when exit and err are final
	exit sandbox.Exit
	err  error

	mu       sync.Mutex
	killed   bool
	timedOut bool
	stop     func() // ends watch
}

var _ sandbox.Process = (*process)(nil)

type execConfig struct {
	AttachStdin  bool
	AttachStdout bool
	AttachStderr bool
	Tty          bool
	Cmd          []string
	Env          []string `json:",omitempty"`
	WorkingDir   string
}

// startExec starts cmd (already checked) in c. A command with a timeout
// is wrapped so that it can be killed, and is killed when ctx ends or
// the timeout passes; without one it is the kill script itself. forget,
// when not nil, is called once the command has ended.
func startExec(ctx context.Context, e *engine, c *container, cmd sandbox.Command, timeout time.Duration, forget func(*process)) (*process, error) {
	argv := cmd.Argv
	wrapped := timeout > 0
	if wrapped {
		argv = append([]string{"/bin/sh", "-c", wrapper, "sh"}, argv...)
	}
	if cmd.Dir == "" {
		cmd.Dir = sandbox.Workdir
	}
	var created struct {
		ID string `json:"Id"`
	}
	err := e.call(ctx, "POST", "/containers/"+c.id+"/exec", nil, execConfig{
		AttachStdin:  cmd.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          argv,
		Env:          cmd.Env,
		WorkingDir:   cmd.Dir,
	}, &created)
	if err != nil {
		return nil, fmt.Errorf("creating the exec: %w", err)
	}
	conn, br, err := e.hijack(ctx, "/exec/"+created.ID+"/start", map[string]bool{"Detach": false, "Tty": false})
	if err != nil {
		return nil, fmt.Errorf("starting the exec: %w", err)
	}
	p := &process{
		e: e, c: c, execID: created.ID, conn: conn, forget: forget,
		pidKnown: make(chan struct{}),
		done:     make(chan struct{}),
		stop:     func() {},
	}
	if !wrapped {
		p.pidOnce.Do(func() { close(p.pidKnown) })
	}
	p.stdin = cmd.Stdin
	if !wrapped {
		p.feedStdin()
	}
	stdout, stderr := orDiscard(cmd.Stdout), orDiscard(cmd.Stderr)
	if wrapped {
		stdout = &pidReader{p: p, out: stdout}
		p.watch(ctx, timeout)
	}
	go p.run(br, stdout, stderr)
	return p, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// feedStdin copies Stdin to the command. A wrapped command gets it once
// the wrapper runs, so that an exec that never started (and is tried
// again) has not read any of it. Wait does not wait for this copy: a
// Stdin that never ends (a pipe kept for later writes) must not hold up
// a finished command; the copy ends at its first write after the exec.
func (p *process) feedStdin() {
	if p.stdin == nil {
		return
	}
	go func() {
		_, _ = io.Copy(p.conn, p.stdin)
		_ = p.conn.CloseWrite()
	}()
}

// run copies the stream to the command's writers until it ends, then
// learns the exit code.
func (p *process) run(br *bufio.Reader, stdout, stderr io.Writer) {
	werr := demux(br, stdout, stderr)
	p.conn.Close()
	p.pidOnce.Do(func() { close(p.pidKnown) })
	code, err := p.waitExit()
	p.mu.Lock()
	p.stop()
	killed, timedOut := p.killed, p.timedOut
	p.mu.Unlock()
	switch {
	case killed:
		// Killed, or ended on its own while being killed: its children
		// die first, and a shell waiting for them may exit 0.
		p.exit = sandbox.Exit{Code: -1, Signal: "killed", TimedOut: timedOut}
	case isStatus(err, 404):
		// The exec is gone with its container's processes: the container
		// stopped (a command killed them all) and took the command along.
		p.exit = sandbox.Exit{Code: -1, Signal: "killed"}
		p.gone = true
	case err != nil:
		p.exit = sandbox.Exit{Code: -1}
		p.err = err
	default:
		p.exit = sandbox.Exit{Code: code}
		if werr != nil {
			p.err = fmt.Errorf("writing the command's output: %w", werr)
		}
	}
	if p.forget != nil {
		p.forget(p)
	}
	close(p.done)
}

// waitExit polls the exec until it no longer runs. The stream ending is
// not enough: a command may close its stdout and stderr and go on.
func (p *process) waitExit() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
	defer cancel()
	delay := 2 * time.Millisecond
	for {
		var st struct {
			Running  bool
			ExitCode *int // null until the engine has recorded the exit
		}
		err := p.e.call(ctx, "GET", "/exec/"+p.execID+"/json", nil, nil, &st)
		if err != nil {
			return 0, fmt.Errorf("reading the exit code of exec %s: %w", p.execID, err)
		}
		if !st.Running && st.ExitCode != nil {
			return *st.ExitCode, nil
		}
		time.Sleep(delay)
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// demux copies Docker's multiplexed stream: frames of an 8-byte header
// (stream 1 stdout or 2 stderr, 3 zero bytes, a big-endian uint32 length)
// and that many bytes. A writer that fails is dropped, and the stream
// still drained, so the command is not blocked on its output; the first
// write error is returned.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	var werr error
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return werr
		}
		n := int64(binary.BigEndian.Uint32(hdr[4:]))
		var w io.Writer
		switch hdr[0] {
		case 1:
			w = stdout
		case 2:
			w = stderr
		default:
			w = io.Discard
		}
		for n > 0 {
			m, err := io.ReadFull(r, buf[:min(n, int64(len(buf)))])
			if m > 0 && w != io.Discard {
				if _, e := w.Write(buf[:m]); e != nil {
					if werr == nil {
						werr = e
					}
					if w == stdout {
						stdout = io.Discard
					} else {
						stderr = io.Discard
					}
					w = io.Discard
				}
			}
			if err != nil {
				return werr
			}
			n -= int64(m)
		}
	}
}

// pidReader takes the wrapper's first stdout line, the command's PID, and
// passes the rest on. Anything else in its place is the engine saying
// why the exec could not start: it is kept in startMsg.
type pidReader struct {
	p      *process
	out    io.Writer
	line   []byte
	passed bool
}

func (r *pidReader) Write(b []byte) (int, error) {
	if r.passed {
		return r.out.Write(b)
	}
	n := len(b)
	i := bytes.IndexByte(b, '\n')
	if i < 0 && len(r.line)+len(b) < 32 {
		r.line = append(r.line, b...)
		return n, nil
	}
	r.passed = true
	if i >= 0 {
		line := append(r.line, b[:i]...)
		if pid, err := strconv.Atoi(string(line)); err == nil && pid > 0 {
			r.p.pid = pid
			r.p.pidOnce.Do(func() { close(r.p.pidKnown) })
			r.p.feedStdin()
			if _, err := r.out.Write(b[i+1:]); err != nil {
				return n, err
			}
			return n, nil
		}
	}
	// Start passes it on, or tries again when the container was down.
	r.p.startMsg = string(append(r.line, b...))
	return n, nil
}

// watch kills the process when ctx ends or the timeout passes. It is
// armed before the stream is read, so run always disarms it.
func (p *process) watch(ctx context.Context, timeout time.Duration) {
	t := time.AfterFunc(timeout, func() { _ = p.kill(true) })
	stopCtx := context.AfterFunc(ctx, func() { _ = p.kill(false) })
	p.stop = func() { t.Stop(); stopCtx() }
}

// Wait waits for the command to end and its output to be written.
func (p *process) Wait() (sandbox.Exit, error) {
	<-p.done
	return p.exit, p.err
}

// Kill kills the command's session.
func (p *process) Kill() error { return p.kill(false) }

func (p *process) kill(timedOut bool) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.mu.Lock()
	if !p.killed {
		p.timedOut = timedOut
	}
	p.killed = true
	p.mu.Unlock()
	select {
	case <-p.pidKnown:
	case <-p.done:
		return nil
	}
	if p.pid == 0 {
		return nil // the command never started
	}
	if err := endSession(p.e, p.c, p.pid); err != nil {
		select {
		case <-p.done:
			return nil // it ended anyway
		default:
		}
		return fmt.Errorf("killing %d in docker sandbox %s: %w", p.pid, p.c.sid, err)
	}
	return nil
}
