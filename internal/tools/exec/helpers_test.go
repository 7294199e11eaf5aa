package exec

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"talon/internal/approval"
	"talon/internal/sandbox"
	"talon/internal/sandbox/host"
	"talon/internal/tools"
)

// hostFull is the policy that runs every command on the host, OpenClaw's
// tools.exec.security "full": the rig's commands are the tests' own.
var hostFull = approval.PolicyInput{Global: approval.ExecSettings{Security: "full"}}

// rig is a workspace with a host sandbox over it and the two tools
// sharing one job table.
type rig struct {
	t       *testing.T
	dir     string
	root    *os.Root
	sb      sandbox.Sandbox
	jobs    *Jobs
	exec    tools.Tool
	process tools.Tool
	env     *tools.Env // agent main, session agent:main:main
	// lastStart is the text of the result of the last start.
	lastStart string
}

func newRig(t *testing.T, lim Limits) *rig {
	t.Helper()
	b, err := host.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rigOn(t, b, lim)
}

// rigOn is a rig whose sandbox is one of backend b.
func rigOn(t *testing.T, b sandbox.Backend, lim Limits) *rig {
	t.Helper()
	dir := t.TempDir()
	sb, err := b.Open(context.Background(), sandbox.Spec{ID: "exec-test", Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	jobs := NewJobs(lim)
	ts := New(jobs)
	r := &rig{t: t, dir: dir, root: root, sb: sb, jobs: jobs, exec: ts[0], process: ts[1]}
	r.env = r.envFor("main", "agent:main:main")
	r.env.Isolated = b.Isolated()
	t.Cleanup(func() {
		jobs.Close()
		sb.Close()
		root.Close()
	})
	return r
}

// envFor is the environment of another session in the same workspace.
func (r *rig) envFor(agent, session string) *tools.Env {
	return &tools.Env{
		AgentID: agent, SessionKey: session, Workspace: r.root,
		Sandbox: r.sb, Isolated: false, Background: true, ExecPolicy: hostFull,
	}
}

// run calls a tool and fails the test on a Talon error.
func (r *rig) run(tool tools.Tool, env *tools.Env, args any) tools.Result {
	r.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		r.t.Fatal(err)
	}
	res, err := tool.Run(context.Background(), env, raw)
	if err != nil {
		r.t.Fatalf("%s %s: %v", tool.Name(), raw, err)
	}
	return res
}

var jobIDRE = regexp.MustCompile(`as job ([0-9a-f]{8}) `)

// start runs a command in the background and returns its job id.
func (r *rig) start(env *tools.Env, command string) string {
	r.t.Helper()
	res := r.run(r.exec, env, map[string]any{"command": command, "background": true})
	m := jobIDRE.FindStringSubmatch(res.Text)
	if res.IsError || m == nil {
		r.t.Fatalf("exec background: %+v", res)
	}
	r.lastStart = res.Text
	return m[1]
}

// hasEnded reports whether a poll result says the job has ended.
func hasEnded(text string) bool {
	return strings.Contains(text, " exited with code ") || strings.Contains(text, " ended by signal ") ||
		strings.Contains(text, " timed out after ")
}

// waitEnd polls the job until it ends and returns all the polled text
// and the last result. Each poll waits for output or the end, so this
// loops once per burst of output.
func (r *rig) waitEnd(env *tools.Env, id string) (string, tools.Result) {
	r.t.Helper()
	var all strings.Builder
	for range 1000 {
		res := r.run(r.process, env, map[string]any{"action": "poll", "sessionId": id, "timeout": MaxPollWaitMs})
		all.WriteString(res.Text + "\n")
		if hasEnded(res.Text) {
			return all.String(), res
		}
	}
	r.t.Fatalf("job %s did not end; polled:\n%s", id, all.String())
	return "", tools.Result{}
}

// file reports whether name exists in the workspace.
func (r *rig) file(name string) bool {
	_, err := os.Stat(filepath.Join(r.dir, name))
	return err == nil
}
