package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"talon/internal/tools"
)

// Limits of the process tool.
const (
	// MaxPollWaitMs bounds how long poll waits for output (OpenClaw's
	// bound, 30 s).
	MaxPollWaitMs = 30000
	// DefaultLogLines is how many of the last lines log shows without
	// offset and limit; MaxLogLines bounds limit.
	DefaultLogLines = 200
	MaxLogLines     = 2000
	// MaxLogBytes bounds the text one log call returns.
	MaxLogBytes = 64 << 10
	// MaxWriteBytes bounds the data of one write.
	MaxWriteBytes = 64 << 10
	// writeWait is how long write waits for a command that does not read
	// its stdin.
	writeWait = 5 * time.Second
	// killWait is how long kill and remove wait for a killed job to end.
	killWait = 10 * time.Second
)

// The process tool's actions.
var actions = []string{"list", "poll", "log", "write", "kill", "remove"}

// actionArgs are the arguments besides action that each action takes.
var actionArgs = map[string][]string{
	"list":   nil,
	"poll":   {"sessionId", "timeout"},
	"log":    {"sessionId", "offset", "limit"},
	"write":  {"sessionId", "data", "eof"},
	"kill":   {"sessionId"},
	"remove": {"sessionId"},
}

type processTool struct{ jobs *Jobs }

var _ tools.Tool = (*processTool)(nil)

var processSchema = tools.Object(
	tools.Prop{Name: "action", Type: tools.TypeString, Required: true, Enum: actions,
		Description: "list: this session's jobs. poll: new output since the last poll, and whether the job ended. " +
			"log: all output kept, by lines. write: send stdin. kill: stop the job and what it started. remove: kill, then forget it."},
	tools.Prop{Name: "sessionId", Type: tools.TypeString,
		Description: "Job id from exec; needed by every action but list."},
	tools.Prop{Name: "timeout", Type: tools.TypeInteger,
		Description: fmt.Sprintf("poll: wait up to this many ms for output or the end, 0 to %d.", MaxPollWaitMs)},
	tools.Prop{Name: "offset", Type: tools.TypeInteger,
		Description: fmt.Sprintf("log: first line, from 1. Default: the last %d lines.", DefaultLogLines)},
	tools.Prop{Name: "limit", Type: tools.TypeInteger,
		Description: fmt.Sprintf("log: number of lines, 1 to %d.", MaxLogLines)},
	tools.Prop{Name: "data", Type: tools.TypeString,
		Description: fmt.Sprintf("write: text for stdin, at most %d KiB.", MaxWriteBytes>>10)},
	tools.Prop{Name: "eof", Type: tools.TypeBoolean,
		Description: "write: close stdin afterwards."},
)

func (*processTool) Name() string { return "process" }

func (*processTool) Description() string {
	return "Manage this session's background exec jobs: list, poll, log, write to stdin, kill, remove. Finished jobs are kept 30 minutes."
}

func (*processTool) Schema() json.RawMessage { return processSchema }

func (t *processTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	if env == nil {
		return tools.Result{}, errors.New("running process: no tool environment")
	}
	a, err := tools.ParseArgsFor(raw, processSchema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	action, err := a.StringEnum("action", true, actions...)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	for _, name := range tools.PropertyNames(processSchema) {
		if name != "action" && a.Has(name) && !slices.Contains(actionArgs[action], name) {
			takes := "no other arguments"
			if len(actionArgs[action]) > 0 {
				takes = strings.Join(actionArgs[action], ", ")
			}
			return tools.Errorf("argument %q does not apply to action %q (it takes %s)", name, action, takes), nil
		}
	}
	if action == "list" {
		return t.list(env), nil
	}
	id, err := a.String("sessionId", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	j, err := t.jobs.get(env, id)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	switch action {
	case "poll":
		wait, err := a.Int("timeout", false, 0, MaxPollWaitMs)
		if err != nil {
			return tools.ErrorResult(err), nil
		}
		return poll(ctx, j, time.Duration(wait)*time.Millisecond)
	case "log":
		return logOf(j, a)
	case "write":
		return write(j, a)
	case "kill":
		return kill(ctx, j)
	default: // remove
		res, err := kill(ctx, j)
		if err != nil || res.IsError {
			return res, err
		}
		t.jobs.remove(j)
		return tools.Result{Text: fmt.Sprintf("Removed job %s (%s).", j.id, state(j))}, nil
	}
}

func (t *processTool) list(env *tools.Env) tools.Result {
	jobs := t.jobs.list(env)
	if len(jobs) == 0 {
		return tools.Result{Text: "No background jobs in this session."}
	}
	var b strings.Builder
	for _, j := range jobs {
		cmd := j.command
		if len(cmd) > 120 {
			cmd = strings.ToValidUTF8(cmd[:117], "") + "..."
		}
		fmt.Fprintf(&b, "%s  %s  %s\n", j.id, state(j), strings.Join(strings.Fields(cmd), " "))
	}
	return tools.Result{Text: strings.TrimSuffix(b.String(), "\n")}
}

// state is a job's status in a few words.
func state(j *job) string {
	if !j.finished() {
		return fmt.Sprintf("running for %s", time.Since(j.started).Round(time.Second))
	}
	took := j.ended.Sub(j.started).Round(time.Millisecond)
	switch {
	case j.err != nil:
		return "ended (not observed: " + j.err.Error() + ")"
	case j.exit.TimedOut:
		return fmt.Sprintf("timed out after %s", took)
	case j.exit.Signal != "":
		return fmt.Sprintf("ended by signal %s after %s", j.exit.Signal, took)
	}
	return fmt.Sprintf("exited with code %d after %s", j.exit.Code, took)
}

// poll returns the output since the last poll, waiting up to wait for
// some when there is none and the job runs.
func poll(ctx context.Context, j *job, wait time.Duration) (tools.Result, error) {
	j.pollMu.Lock()
	defer j.pollMu.Unlock()
	if wait > 0 && !j.finished() && j.out.Total() == j.polled {
		changed := j.out.Changed()
		if j.out.Total() == j.polled { // no write between the two looks
			timer := time.NewTimer(wait)
			select {
			case <-changed:
			case <-j.done:
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return tools.Result{}, ctx.Err()
			}
			timer.Stop()
		}
	}
	done := j.finished() // before rendering, so nothing is missed after the end
	text, end := j.out.Render(j.polled, ResultHead, ResultTail)
	j.polled = end
	var b strings.Builder
	writeOutput(&b, text, "(no new output)")
	if !done {
		fmt.Fprintf(&b, "[job %s is running for %s]", j.id, time.Since(j.started).Round(time.Second))
		return tools.Result{Text: b.String()}, nil
	}
	b.WriteString("[job " + j.id + " " + state(j) + "]")
	return tools.Result{Text: b.String(), IsError: j.err != nil || j.exit.Code != 0 || j.exit.TimedOut || j.exit.Signal != ""}, nil
}

// logOf returns lines of all the output the job kept.
func logOf(j *job, a tools.Args) (tools.Result, error) {
	offset, err := a.Int("offset", false, 1, math.MaxInt)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	limit, err := a.Int("limit", false, 1, MaxLogLines)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	text, _ := j.out.Render(0, math.MaxInt32, math.MaxInt32)
	if text == "" {
		return tools.Result{Text: "(no output yet)\n[job " + j.id + " " + state(j) + "]"}, nil
	}
	lines := strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
	n := len(lines)
	// Lines [first, last): the last DefaultLogLines, or the last limit
	// lines, or from offset to the end, or limit lines from offset.
	first, last := max(n-DefaultLogLines, 0), n
	switch {
	case offset > n:
		return tools.Errorf("offset %d is past the end of the log, which has %d lines", offset, n), nil
	case offset > 0 && limit > 0:
		first, last = offset-1, min(n, offset-1+limit)
	case offset > 0:
		first = offset - 1
	case limit > 0:
		first = max(n-limit, 0)
	}
	var b strings.Builder
	shown := first
	for _, l := range lines[first:last] {
		if b.Len()+len(l) > MaxLogBytes && shown > first {
			break
		}
		b.WriteString(l)
		shown++
	}
	out := strings.TrimSuffix(b.String(), "\n") + "\n"
	switch {
	case shown < last:
		out += fmt.Sprintf("[lines %d-%d of %d shown (%d KiB limit); call log with offset=%d to continue]", first+1, shown, n, MaxLogBytes>>10, shown+1)
	case first > 0 || last < n:
		out += fmt.Sprintf("[lines %d-%d of %d shown]", first+1, last, n)
	default:
		out += fmt.Sprintf("[all %d lines]", n)
	}
	return tools.Result{Text: out + "\n[job " + j.id + " " + state(j) + "]"}, nil
}

// write sends data to the job's stdin, waiting at most writeWait for a
// command that does not read it.
func write(j *job, a tools.Args) (tools.Result, error) {
	data, err := a.String("data", false)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	eof, err := a.Bool("eof", false)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	switch {
	case !a.Has("data") && !eof:
		return tools.Errorf(`action "write" needs data, or eof true to close stdin`), nil
	case len(data) > MaxWriteBytes:
		return tools.Errorf(`argument "data" is %d bytes; the limit is %d KiB`, len(data), MaxWriteBytes>>10), nil
	}
	j.stdinMu.Lock()
	defer j.stdinMu.Unlock()
	if j.finished() {
		return tools.Errorf("job %s has ended (%s); its stdin is closed", j.id, state(j)), nil
	}
	if j.stdin == nil {
		return tools.Errorf("job %s's stdin was closed by an earlier write with eof", j.id), nil
	}
	n := 0
	if data != "" {
		j.stdin.SetWriteDeadline(time.Now().Add(writeWait))
		n, err = j.stdin.WriteString(data)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return tools.Errorf("wrote %d of %d bytes: job %s is not reading its stdin (waited %s)", n, len(data), j.id, writeWait), nil
			}
			return tools.Errorf("wrote %d of %d bytes to job %s: %v", n, len(data), j.id, err), nil
		}
	}
	msg := fmt.Sprintf("Wrote %d bytes to the stdin of job %s", n, j.id)
	if eof {
		j.stdin.Close()
		j.stdin = nil
		msg += " and closed it"
	}
	return tools.Result{Text: msg + "."}, nil
}

// kill ends a running job and waits for it; an ended job is left as it is.
func kill(ctx context.Context, j *job) (tools.Result, error) {
	if j.finished() {
		return tools.Result{Text: fmt.Sprintf("Job %s had already ended: %s.", j.id, state(j))}, nil
	}
	j.kill()
	timer := time.NewTimer(killWait)
	defer timer.Stop()
	select {
	case <-j.done:
	case <-timer.C:
		return tools.Errorf("job %s was sent a kill but has not ended after %s", j.id, killWait), nil
	case <-ctx.Done():
		return tools.Result{}, ctx.Err()
	}
	return tools.Result{Text: fmt.Sprintf("Killed job %s: %s.", j.id, state(j))}, nil
}
