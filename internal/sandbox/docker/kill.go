package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"talon/internal/sandbox"
)

// How a command is killed. The Engine API can start an exec but has no
// call to signal one, and killing the container would end every other
// command of the scope. So each command starts under a one-line /bin/sh
// wrapper that prints its PID (inside the container) on stdout and then
// execs the command in its place; the backend reads that first line off
// the stream before passing stdout on. runc makes every exec process the
// leader of a new session, so "the command and everything it started" is
// that session, and killing it is a shell loop over /proc (images need
// not have pkill) that first SIGSTOPs every process of the session until
// none runs, so that none can fork any more, then SIGKILLs them all.
//
// The loop runs in a killer: one exec per container, started with the
// container, that reads session IDs on stdin. It holds its process slot
// from the start, because a command that has used up the pids limit
// leaves none for a new exec (runc forks inside the container's cgroup).
// Commands run as the same user and can kill the killer; then a new exec
// runs the loop, and if even that cannot start, the container is killed
// with everything in it and started again by the next Start.
//
// A process that leaves the session (setsid) and is orphaned survives a
// Kill until the container stops; the pids limit bounds such processes.
const wrapper = `echo $$; exec "$@"`

// sweepSession signals every process of session $s with $sig until a
// scan of /proc finds none to signal (for STOP: none that still runs).
const sweepSession = `sweep() {
  found=
  for d in /proc/[0-9]*; do
    read -r l 2>/dev/null <"$d/stat" || continue
    set -- ${l##*") "}
    [ "$4" = "$s" ] || continue
    case $1 in Z|X) continue ;; T) [ "$sig" = STOP ] && continue ;; esac
    kill -$sig "${d#/proc/}" 2>/dev/null && found=1
  done
}
end() {
  for sig in STOP KILL; do
    n=0; sweep
    while [ -n "$found" ]; do
      n=$((n+1)); [ $n -gt 500 ] && return 1
      sweep
    done
  done
}
`

// killScript ends session $1 in an exec of its own.
const killScript = sweepSession + `s=$1; end`

// killerScript ends each session read on stdin and echoes it back.
const killerScript = sweepSession + `while read -r s; do end; echo "$s"; done`

// killer is a container's running killerScript.
type killer struct {
	mu    sync.Mutex
	p     *process
	in    io.WriteCloser
	lines *bufio.Scanner
}

// startKiller starts c's killer; a failure leaves c without one, which
// the exec fallback covers.
func startKiller(ctx context.Context, e *engine, c *container) *killer {
	pr, pw := io.Pipe()
	inR, inW := io.Pipe()
	p, err := startExec(ctx, e, c, sandbox.Command{
		Argv:   []string{"/bin/sh", "-c", killerScript},
		Stdin:  inR,
		Stdout: pw,
	}, 0, nil)
	if err != nil {
		return nil
	}
	go func() {
		_, _ = p.Wait()
		pw.CloseWithError(errors.New("killer ended"))
	}()
	return &killer{p: p, in: inW, lines: bufio.NewScanner(pr)}
}

// end kills session sid through the killer.
func (k *killer) end(sid int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := strconv.Itoa(sid)
	done := make(chan error, 1)
	go func() {
		if _, err := io.WriteString(k.in, id+"\n"); err != nil {
			done <- err
			return
		}
		for k.lines.Scan() {
			if strings.TrimSpace(k.lines.Text()) == id {
				done <- nil
				return
			}
		}
		done <- fmt.Errorf("killer ended: %v", k.lines.Err())
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		// A killer that does not answer is of no more use.
		_ = k.in.Close()
		return errors.New("killer did not answer")
	}
}

func (k *killer) close() {
	if k != nil {
		_ = k.in.Close()
	}
}

// endSession kills session sid in c: through the killer, else a new exec,
// else by killing the container.
func endSession(e *engine, c *container, sid int) error {
	c.mu.Lock()
	k := c.killer
	c.mu.Unlock()
	if k != nil {
		if k.end(sid) == nil {
			return nil
		}
		c.mu.Lock()
		if c.killer == k {
			c.killer = nil
		}
		c.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x, err := startExec(ctx, e, c, sandbox.Command{
		Argv: []string{"/bin/sh", "-c", killScript, "sh", strconv.Itoa(sid)},
	}, 0, nil)
	if err == nil {
		var ex sandbox.Exit
		ex, err = x.Wait()
		if err == nil && ex.Code != 0 {
			err = fmt.Errorf("the kill script exited %d", ex.Code)
		}
	}
	if err == nil {
		return nil
	}
	if kerr := e.call(ctx, "POST", "/containers/"+c.id+"/kill", nil, nil, nil); kerr != nil && !isStatus(kerr, 409) {
		return fmt.Errorf("%w; killing the container: %w", err, kerr)
	}
	return nil
}
