package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"talon/internal/approval"
	"talon/internal/sandbox"
	"talon/internal/tools"
)

// Limits of exec's arguments and results.
const (
	// DefaultTimeout is the sandbox limit a command gets without a timeout
	// argument unless the config sets limits.timeoutSeconds (OpenClaw's
	// default, 1800 s; sandbox.DefaultLimits); MaxTimeout bounds the
	// argument, which the config's limit bounds too.
	DefaultTimeout = 1800
	MaxTimeout     = 7200
	// DefaultYieldMs is how long a command runs in the foreground before
	// it continues in the background (OpenClaw's default, 10 s).
	DefaultYieldMs = 10000
	// MaxCommandBytes bounds the command text.
	MaxCommandBytes = 64 << 10
	// MaxEnvVars and MaxEnvBytes bound the env argument.
	MaxEnvVars  = 100
	MaxEnvBytes = 64 << 10
	// ResultHead and ResultTail are how much output one result shows: the
	// first and the last bytes, with what is between marked as truncated.
	ResultHead = 16 << 10
	ResultTail = 48 << 10
	// shownHead and shownTail bound the output a backgrounded command's
	// result shows; process log has the rest.
	shownHead = 2 << 10
	shownTail = 6 << 10
)

// Shell runs the command text; every backend's sandbox has it.
const Shell = "/bin/sh"

// All returns exec and process sharing a new job table with the default
// limits: build it once per gateway process.
func All() []tools.Tool {
	return New(NewJobs(DefaultLimits()))
}

// New returns exec and process using jobs.
func New(jobs *Jobs) []tools.Tool {
	return []tools.Tool{&execTool{jobs: jobs}, &processTool{jobs: jobs}}
}

// ErrNoSandbox is Check's answer for a run with nothing to run commands
// in.
var ErrNoSandbox = errors.New("exec: no sandbox for this session")

// Check reports why exec cannot run commands for env: it has no sandbox.
// Where commands may run, and which, is the approval policy's question,
// asked for each command.
func Check(env *tools.Env) error {
	if env == nil || env.Sandbox == nil {
		return ErrNoSandbox
	}
	return nil
}

type execTool struct{ jobs *Jobs }

var (
	_ tools.Tool      = (*execTool)(nil)
	_ tools.Forgetter = (*execTool)(nil)
)

// Forget drops the background jobs of workspaces under dir; process
// shares the table, so exec alone answers for it.
func (t *execTool) Forget(dir string) { t.jobs.Forget(dir) }

// Holds says a background job of a workspace under dir still runs.
func (t *execTool) Holds(dir string) bool { return t.jobs.Running(dir) }

var execSchema = tools.Object(
	tools.Prop{Name: "command", Type: tools.TypeString, Required: true,
		Description: "Shell command, run with /bin/sh -c."},
	tools.Prop{Name: "workdir", Type: tools.TypeString,
		Description: "Working directory, relative to the workspace or absolute in the sandbox. Default: the workspace."},
	tools.Prop{Name: "env", Type: tools.TypeObject,
		Description: "Environment variables to add, NAME: value."},
	tools.Prop{Name: "timeout", Type: tools.TypeInteger,
		Description: fmt.Sprintf("Seconds before the command and all it started are killed, 1 to %d, at most the sandbox's limit (default %d).", MaxTimeout, DefaultTimeout)},
	tools.Prop{Name: "background", Type: tools.TypeBoolean,
		Description: "Run in the background at once."},
	tools.Prop{Name: "yieldMs", Type: tools.TypeInteger,
		Description: fmt.Sprintf("Milliseconds to wait before the command continues in the background. Default %d.", DefaultYieldMs)},
	tools.Prop{Name: "security", Type: tools.TypeString, Enum: []string{"deny", "allowlist", "full"},
		Description: "Tighten the approval policy for this call."},
	tools.Prop{Name: "ask", Type: tools.TypeString, Enum: []string{"off", "on-miss", "always"},
		Description: "Ask for approval more often for this call."},
)

func (*execTool) Name() string { return "exec" }

func (*execTool) Description() string {
	return "Run a shell command in the session's sandbox, in the workspace. Returns stdout and stderr (the first " + kib(ResultHead) +
		" and last " + kib(ResultTail) + "; the rest marked truncated), the exit code and duration. " +
		"A command still running after yieldMs continues in the background: follow it with the process tool and the returned sessionId. " +
		"A command needing approval returns approval-pending; its outcome arrives later as a system event."
}

func kib(n int) string { return fmt.Sprintf("%d KiB", n>>10) }

func (*execTool) Schema() json.RawMessage { return execSchema }

// execArgs are exec's checked arguments.
type execArgs struct {
	command    string
	workdir    string
	env        []string
	timeout    time.Duration // 0: the sandbox's own limit
	background bool
	yield      time.Duration
	yieldSet   bool
	security   string // "" or a tighter exec approval security
	ask        string // "" or a stricter ask
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func parseExec(raw json.RawMessage) (execArgs, error) {
	var x execArgs
	a, err := tools.ParseArgsFor(raw, execSchema)
	if err != nil {
		return x, err
	}
	if x.command, err = a.String("command", true); err != nil {
		return x, err
	}
	switch {
	case strings.TrimSpace(x.command) == "":
		return x, errors.New(`argument "command" must not be empty`)
	case len(x.command) > MaxCommandBytes:
		return x, fmt.Errorf(`argument "command" is %d bytes; the limit is %d KiB (write a script with the write tool and run it)`, len(x.command), MaxCommandBytes>>10)
	case strings.IndexByte(x.command, 0) >= 0:
		return x, errors.New(`argument "command" contains a NUL byte`)
	}
	if x.workdir, err = a.String("workdir", false); err != nil {
		return x, err
	}
	if x.workdir != "" {
		if strings.IndexByte(x.workdir, 0) >= 0 {
			return x, errors.New(`argument "workdir" contains a NUL byte`)
		}
		if !path.IsAbs(x.workdir) {
			x.workdir = path.Join(sandbox.Workdir, x.workdir)
		}
		x.workdir = path.Clean(x.workdir)
	}
	env, err := a.StringMap("env", false)
	if err != nil {
		return x, err
	}
	if x.env, err = envList(env); err != nil {
		return x, err
	}
	if a.Has("timeout") {
		secs, err := a.Int("timeout", false, 1, MaxTimeout)
		if err != nil {
			return x, err
		}
		x.timeout = time.Duration(secs) * time.Second
	}
	if x.background, err = a.Bool("background", false); err != nil {
		return x, err
	}
	ms := DefaultYieldMs
	if x.yieldSet = a.Has("yieldMs"); x.yieldSet {
		if ms, err = a.Int("yieldMs", false, 1, MaxTimeout*1000); err != nil {
			return x, err
		}
	}
	x.yield = time.Duration(ms) * time.Millisecond
	if x.security, err = a.StringEnum("security", false, "deny", "allowlist", "full"); err != nil {
		return x, err
	}
	if x.ask, err = a.StringEnum("ask", false, "off", "on-miss", "always"); err != nil {
		return x, err
	}
	return x, nil
}

// envList checks the model's variables and returns them as KEY=VALUE,
// sorted, after OPENCLAW_SHELL=exec, which OpenClaw sets for commands so
// that shell profiles can tell them apart.
func envList(env map[string]string) ([]string, error) {
	if len(env) > MaxEnvVars {
		return nil, fmt.Errorf(`argument "env" has %d variables; the limit is %d`, len(env), MaxEnvVars)
	}
	out := []string{"OPENCLAW_SHELL=exec"}
	size := 0
	for k, v := range env {
		if !envName.MatchString(k) {
			return nil, fmt.Errorf(`argument "env": %q is not a variable name (letters, digits and '_', not starting with a digit)`, k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf(`argument "env": the value of %s contains a NUL byte`, k)
		}
		size += len(k) + len(v) + 1
		out = append(out, k+"="+v)
	}
	if size > MaxEnvBytes {
		return nil, fmt.Errorf(`argument "env" is %d bytes; the limit is %d KiB`, size, MaxEnvBytes>>10)
	}
	slices.Sort(out[1:])
	return out, nil
}

func (t *execTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	if err := Check(env); err != nil {
		return tools.ErrorResult(err), nil
	}
	x, err := parseExec(raw)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	cmd := sandbox.Command{Argv: []string{Shell, "-c", x.command}, Dir: x.workdir, Env: x.env, Timeout: x.timeout}
	if lim := limitOf(env.Sandbox); lim > 0 && cmd.Timeout > lim {
		cmd.Timeout = lim // the config's limit is a ceiling the model cannot raise
	}
	g, err := gate(ctx, env, x)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	note := ""
	switch g.decision.Outcome {
	case approval.OutcomeDeny:
		return g.refusal(), nil
	case approval.OutcomePrompt:
		res, run, err := t.ask(ctx, env, g, cmd)
		if !run || err != nil {
			return res, err
		}
		note = res.Text // decided at once, and it may run
	case approval.OutcomeRun:
		if len(g.uses) > 0 && env.Approvals != nil {
			// Failing to stamp the entries is logged by RecordUse; it does
			// not stop a command the allowlist allows.
			_ = env.Approvals.RecordUse(ctx, g.uses, time.Now())
		}
	}
	return t.run(ctx, env, cmd, x, note)
}

// run runs an allowed command as exec always has: to its end, or as a job
// when the process tool is offered. note is added to the result.
func (t *execTool) run(ctx context.Context, env *tools.Env, cmd sandbox.Command, x execArgs, note string) (tools.Result, error) {
	if !env.Background {
		if x.background || x.yieldSet {
			note = joinNotes(note, "[background and yieldMs do not apply: the process tool is not available in this run, so the command ran to its end]")
		}
		return foreground(ctx, env, cmd, note)
	}
	res, err := t.runJob(ctx, env, cmd, x)
	if note != "" && err == nil {
		res.Text = joinNotes(res.Text, note)
	}
	return res, err
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// foreground runs cmd to its end with the call's context: an aborted run
// kills it.
func foreground(ctx context.Context, env *tools.Env, cmd sandbox.Command, note string) (tools.Result, error) {
	out := newOutBuf(ResultHead, ResultTail)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	p, err := env.Sandbox.Start(ctx, cmd)
	if err != nil {
		return tools.Errorf("exec: starting the command: %v", err), nil
	}
	exit, err := p.Wait()
	if err != nil {
		return tools.Errorf("exec: the command's end could not be observed: %v", err), nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return tools.Result{}, cerr
	}
	return ended(out, exit, time.Since(start), note), nil
}

// ended is the result of a command that has ended.
func ended(out *outBuf, exit sandbox.Exit, took time.Duration, note string) tools.Result {
	text, _ := out.Render(0, ResultHead, ResultTail)
	var b strings.Builder
	writeOutput(&b, text, "(no output)")
	b.WriteString(status(exit, took))
	if note != "" {
		b.WriteString("\n" + note)
	}
	return tools.Result{Text: b.String(), IsError: exit.Code != 0 || exit.TimedOut || exit.Signal != ""}
}

// writeOutput writes output text as whole lines, or empty when there is
// none, for a status line to follow.
func writeOutput(b *strings.Builder, text, empty string) {
	if text == "" {
		text = empty
	}
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
}

// status is the last line of an ended command's result.
func status(exit sandbox.Exit, took time.Duration) string {
	d := took.Round(time.Millisecond)
	switch {
	case exit.TimedOut:
		return fmt.Sprintf("[timed out: killed with everything it started · ran %s]", d)
	case exit.Signal != "":
		return fmt.Sprintf("[ended by signal: %s · ran %s]", exit.Signal, d)
	}
	return fmt.Sprintf("[exit code %d · ran %s]", exit.Code, d)
}

// limitOf is the wall-clock limit of sb's commands (the config's
// limits.timeoutSeconds) when sb is a session of the sandbox manager, which
// knows it; 0 otherwise.
func limitOf(sb sandbox.Sandbox) time.Duration {
	if s, ok := sb.(*sandbox.Session); ok {
		return s.Plan().Spec.Limits.WithDefaults().Timeout
	}
	return 0
}

// runJob runs cmd as a job: in the foreground until it ends or yieldMs
// passes (at once with background), then in the background.
func (t *execTool) runJob(ctx context.Context, env *tools.Env, cmd sandbox.Command, x execArgs) (tools.Result, error) {
	j, err := t.jobs.start(ctx, env, cmd, x.command)
	if err != nil {
		return tools.Errorf("exec: starting the command: %v", err), nil
	}
	abort := func() (tools.Result, error) {
		j.kill()
		<-j.done
		return tools.Result{}, ctx.Err()
	}
	if x.background {
		if err := t.jobs.adopt(j); err != nil {
			j.kill()
			<-j.done
			return tools.Errorf("exec: %v", err), nil
		}
		return backgrounded(j, "Started in the background"), nil
	}
	timer := time.NewTimer(x.yield)
	defer timer.Stop()
	select {
	case <-j.done:
		return t.jobEnded(j, "")
	case <-ctx.Done():
		return abort()
	case <-timer.C:
	}
	err = t.jobs.adopt(j)
	if err == nil {
		return backgrounded(j, fmt.Sprintf("Still running after %s, so it continues in the background", x.yield)), nil
	}
	// No room in the table: the command stays in the foreground.
	select {
	case <-j.done:
		return t.jobEnded(j, fmt.Sprintf("[the command could not go to the background after %s: %v]", x.yield, err))
	case <-ctx.Done():
		return abort()
	}
}

func (t *execTool) jobEnded(j *job, note string) (tools.Result, error) {
	if j.err != nil {
		return tools.Errorf("exec: the command's end could not be observed: %v", j.err), nil
	}
	return ended(j.out, j.exit, j.ended.Sub(j.started), note), nil
}

// backgrounded is the result of a command that went to the background.
func backgrounded(j *job, what string) tools.Result {
	text, end := j.out.Render(0, shownHead, shownTail)
	j.pollMu.Lock()
	j.polled = end
	j.pollMu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s as job %s (sessionId %q). Use the process tool with this sessionId: action \"poll\" for new output and whether it ended, \"log\" for all its output, \"write\" to send stdin, \"kill\" to stop it.\n", what, j.id, j.id)
	if text == "" {
		b.WriteString("No output yet.")
	} else {
		b.WriteString("Output so far:\n" + text)
	}
	return tools.Result{Text: strings.TrimSuffix(b.String(), "\n")}
}
