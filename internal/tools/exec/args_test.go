package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/approval"
	"talon/internal/config"
	"talon/internal/session"
	"talon/internal/tools"
)

func TestSchemas(t *testing.T) {
	for _, tool := range All() {
		if err := tools.LintSchema(tool.Schema()); err != nil {
			t.Errorf("%s: %v", tool.Name(), err)
		}
	}
}

func TestParseExec(t *testing.T) {
	long := strings.Repeat("x", MaxCommandBytes+1)
	many := map[string]string{}
	for i := range MaxEnvVars + 1 {
		many[fmt.Sprintf("V%d", i)] = "1"
	}
	cases := []struct {
		name string
		args any
		want execArgs
		err  string
	}{
		{"defaults", map[string]any{"command": "ls"},
			execArgs{command: "ls", env: []string{"OPENCLAW_SHELL=exec"}, yield: DefaultYieldMs * time.Millisecond}, ""},
		{"everything", map[string]any{"command": "make", "workdir": "src/../lib", "env": map[string]string{"B": "2", "A": "1 2"},
			"timeout": 5, "background": true, "yieldMs": 250},
			execArgs{command: "make", workdir: "/workspace/lib", env: []string{"OPENCLAW_SHELL=exec", "A=1 2", "B=2"},
				timeout: 5 * time.Second, background: true, yield: 250 * time.Millisecond, yieldSet: true}, ""},
		{"absolute workdir", map[string]any{"command": "ls", "workdir": "/tmp/x/"},
			execArgs{command: "ls", workdir: "/tmp/x", env: []string{"OPENCLAW_SHELL=exec"}, yield: DefaultYieldMs * time.Millisecond}, ""},
		{"timeout as string", map[string]any{"command": "ls", "timeout": "7"},
			execArgs{command: "ls", env: []string{"OPENCLAW_SHELL=exec"}, timeout: 7 * time.Second, yield: DefaultYieldMs * time.Millisecond}, ""},
		{"missing command", map[string]any{}, execArgs{}, `missing required argument "command"`},
		{"empty command", map[string]any{"command": "  \n"}, execArgs{}, `argument "command" must not be empty`},
		{"command not a string", map[string]any{"command": []string{"ls"}}, execArgs{}, `argument "command" must be a string`},
		{"command too long", map[string]any{"command": long}, execArgs{}, `the limit is 64 KiB`},
		{"NUL in command", map[string]any{"command": "ls\x00"}, execArgs{}, `contains a NUL byte`},
		{"NUL in workdir", map[string]any{"command": "ls", "workdir": "a\x00"}, execArgs{}, `argument "workdir" contains a NUL byte`},
		{"env not an object", map[string]any{"command": "ls", "env": []string{"A=1"}}, execArgs{}, `argument "env" must be an object whose values are strings`},
		{"env value not a string", map[string]any{"command": "ls", "env": map[string]any{"A": 1}}, execArgs{}, `the value of "A" must be a string`},
		{"env bad name", map[string]any{"command": "ls", "env": map[string]string{"1A": "x"}}, execArgs{}, `"1A" is not a variable name`},
		{"env name with =", map[string]any{"command": "ls", "env": map[string]string{"A=B": "x"}}, execArgs{}, `"A=B" is not a variable name`},
		{"env NUL value", map[string]any{"command": "ls", "env": map[string]string{"A": "x\x00"}}, execArgs{}, `the value of A contains a NUL byte`},
		{"env too many", map[string]any{"command": "ls", "env": many}, execArgs{}, `has 101 variables; the limit is 100`},
		{"env too big", map[string]any{"command": "ls", "env": map[string]string{"A": strings.Repeat("v", MaxEnvBytes)}}, execArgs{}, `the limit is 64 KiB`},
		{"timeout zero", map[string]any{"command": "ls", "timeout": 0}, execArgs{}, `argument "timeout" must be an integer from 1 to 7200`},
		{"timeout too long", map[string]any{"command": "ls", "timeout": MaxTimeout + 1}, execArgs{}, `argument "timeout" must be an integer from 1 to 7200`},
		{"timeout fraction", map[string]any{"command": "ls", "timeout": 1.5}, execArgs{}, `argument "timeout" must be an integer`},
		{"yield zero", map[string]any{"command": "ls", "yieldMs": 0}, execArgs{}, `argument "yieldMs" must be an integer from 1 to 7200000`},
		{"background not bool", map[string]any{"command": "ls", "background": "yes"}, execArgs{}, `argument "background" must be true or false`},
		{"pty not implemented", map[string]any{"command": "ls", "pty": true}, execArgs{}, `unknown argument "pty"`},
		{"not an object", []string{"ls"}, execArgs{}, `arguments must be a JSON object`},
		{"security and ask", map[string]any{"command": "ls", "security": "allowlist", "ask": "always"},
			execArgs{command: "ls", env: []string{"OPENCLAW_SHELL=exec"}, yield: DefaultYieldMs * time.Millisecond, security: "allowlist", ask: "always"}, ""},
		{"bad security", map[string]any{"command": "ls", "security": "yolo"}, execArgs{}, `argument "security" must be one of "deny", "allowlist", "full"`},
		{"bad ask", map[string]any{"command": "ls", "ask": "never"}, execArgs{}, `argument "ask" must be one of "off", "on-miss", "always"`},
		{"host not implemented", map[string]any{"command": "ls", "host": "gateway"}, execArgs{}, `unknown argument "host"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := json.Marshal(c.args)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseExec(raw)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(execArgs{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	r := newRig(t, DefaultLimits())
	cases := []struct {
		name string
		env  *tools.Env
		want error
	}{
		{"no env", nil, ErrNoSandbox},
		{"no sandbox", &tools.Env{ExecPolicy: hostFull, Isolated: true}, ErrNoSandbox},
		{"host", &tools.Env{Sandbox: r.sb}, nil},
		{"isolated", &tools.Env{Sandbox: r.sb, Isolated: true}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Check(c.env); !errors.Is(err, c.want) {
				t.Errorf("Check = %v, want %v", err, c.want)
			}
		})
	}
}

// TestRefusedRunsNothing: exec without a usable sandbox, or on the host
// with the default policy and nobody to approve, reports why and starts
// no command.
func TestRefusedRunsNothing(t *testing.T) {
	r := newRig(t, DefaultLimits())
	for _, c := range []struct {
		env  *tools.Env
		want string
	}{
		{&tools.Env{AgentID: "main", SessionKey: "k", Sandbox: r.sb, Background: true}, "Exec denied (gateway id="},
		{&tools.Env{AgentID: "main", SessionKey: "k"}, "exec: no sandbox"},
	} {
		res := r.run(r.exec, c.env, map[string]any{"command": "touch ran"})
		if !res.IsError || !strings.HasPrefix(res.Text, c.want) {
			t.Errorf("result %+v, want a refusal starting %q", res, c.want)
		}
		if r.file("ran") {
			t.Fatal("the refused command ran")
		}
	}
}

func TestPolicy(t *testing.T) {
	sec := func(s string) approval.ExecSettings { return approval.ExecSettings{Security: s} }
	cases := []struct {
		name, cfg, agent string
		entry            session.Entry
		want             approval.PolicyInput
		timeout          time.Duration
	}{
		{"nothing", `{}`, "main", session.Entry{}, approval.PolicyInput{AgentID: "main"}, 0},
		{"global", `{tools: {exec: {host: "gateway", security: "full", ask: "off", approvalTimeoutMs: 5000}}}`, "main", session.Entry{},
			approval.PolicyInput{AgentID: "main", Global: approval.ExecSettings{Host: "gateway", Security: "full", Ask: "off"}}, 5 * time.Second},
		{"agent and global", `{tools: {exec: {security: "deny", approvalTimeoutMs: 5000}}, agents: {list: [{id: "Dev", tools: {exec: {security: "full", approvalTimeoutMs: 7000}}}]}}`, "dev", session.Entry{},
			approval.PolicyInput{AgentID: "dev", Agent: sec("full"), Global: sec("deny")}, 7 * time.Second},
		{"agent without a timeout uses the global one", `{tools: {exec: {approvalTimeoutMs: 5000}}, agents: {list: [{id: "dev", tools: {exec: {host: "sandbox"}}}]}}`, "dev", session.Entry{},
			approval.PolicyInput{AgentID: "dev", Agent: approval.ExecSettings{Host: "sandbox"}}, 5 * time.Second},
		{"other agent's settings", `{agents: {list: [{id: "dev", tools: {exec: {security: "full"}}}, {id: "ops"}]}}`, "ops", session.Entry{},
			approval.PolicyInput{AgentID: "ops"}, 0},
		{"session entry", `{tools: {exec: {security: "deny"}}}`, "main", session.Entry{ExecHost: "gateway", ExecSecurity: "allowlist", ExecAsk: "always", ElevatedLevel: "full"},
			approval.PolicyInput{AgentID: "main", Session: approval.ExecSettings{Host: "gateway", Security: "allowlist", Ask: "always"}, Global: sec("deny")}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := config.Parse("test.json5", []byte(c.cfg))
			if err != nil {
				t.Fatal(err)
			}
			got, timeout := Policy(f.Config, c.agent, c.entry)
			if diff := cmp.Diff(c.want, got); diff != "" || timeout != c.timeout {
				t.Errorf("Policy (-want +got):\n%s\ntimeout %v, want %v", diff, timeout, c.timeout)
			}
		})
	}
	if got, _ := Policy(nil, "main", session.Entry{}); got.Global != (approval.ExecSettings{}) {
		t.Errorf("Policy(nil config) = %+v", got)
	}
}

func TestProcessArgs(t *testing.T) {
	r := newRig(t, DefaultLimits())
	id := r.start(r.env, "echo hi")
	r.waitEnd(r.env, id)
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"no action", map[string]any{}, `missing required argument "action"`},
		{"unknown action", map[string]any{"action": "clear"}, `argument "action" must be one of "list", "poll", "log", "write", "kill", "remove"`},
		{"unknown argument", map[string]any{"action": "list", "keys": []string{"a"}}, `unknown argument "keys"`},
		{"list takes nothing", map[string]any{"action": "list", "sessionId": id}, `argument "sessionId" does not apply to action "list" (it takes no other arguments)`},
		{"poll without id", map[string]any{"action": "poll"}, `missing required argument "sessionId"`},
		{"unknown id", map[string]any{"action": "poll", "sessionId": "00000000"}, `no such job "00000000" in this session`},
		{"data on poll", map[string]any{"action": "poll", "sessionId": id, "data": "x"}, `argument "data" does not apply to action "poll" (it takes sessionId, timeout)`},
		{"poll wait too long", map[string]any{"action": "poll", "sessionId": id, "timeout": MaxPollWaitMs + 1}, `argument "timeout" must be an integer from 0 to 30000`},
		{"log offset zero", map[string]any{"action": "log", "sessionId": id, "offset": 0}, `argument "offset" must be an integer of at least 1`},
		{"log limit too big", map[string]any{"action": "log", "sessionId": id, "limit": MaxLogLines + 1}, `argument "limit" must be an integer from 1 to 2000`},
		{"log past the end", map[string]any{"action": "log", "sessionId": id, "offset": 5}, `offset 5 is past the end of the log, which has 1 lines`},
		{"write nothing", map[string]any{"action": "write", "sessionId": id}, `action "write" needs data, or eof true`},
		{"write too much", map[string]any{"action": "write", "sessionId": id, "data": strings.Repeat("x", MaxWriteBytes+1)}, `the limit is 64 KiB`},
		{"write to an ended job", map[string]any{"action": "write", "sessionId": id, "data": "x"}, `has ended (exited with code 0`},
		{"eof not bool", map[string]any{"action": "write", "sessionId": id, "eof": 1}, `argument "eof" must be true or false`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.run(r.process, r.env, c.args)
			if !res.IsError || !strings.Contains(res.Text, c.want) {
				t.Errorf("result %+v, want an error containing %q", res, c.want)
			}
		})
	}
}
