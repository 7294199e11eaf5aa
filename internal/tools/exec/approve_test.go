package exec

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/approval"
	"talon/internal/sandbox"
	"talon/internal/sandbox/host"
	"talon/internal/tools"
)

// approvals is a rig whose exec consults a real approvals service over
// its own state dir; the outcomes it posts arrive on events.
type approvals struct {
	*rig
	svc    *approval.Service
	events chan string
}

func newApprovals(t *testing.T, approvers int) *approvals {
	t.Helper()
	r := newRig(t, DefaultLimits())
	events := make(chan string, 1024)
	svc, err := approval.NewService(t.TempDir(), func(_ context.Context, agent, key, text string) error {
		if agent != "main" || key != "agent:main:main" {
			t.Errorf("event for %s %s: %s", agent, key, text)
		}
		events <- text
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	svc.Manager.Approvers = func(approval.Request) int { return approvers }
	t.Cleanup(svc.Close) // before the rig's cleanup closes the sandbox
	r.env.Approvals, r.env.ExecPolicy = svc, approval.PolicyInput{}
	return &approvals{rig: r, svc: svc, events: events}
}

// event waits for the next system event; the bound only keeps a broken
// build from hanging.
func (a *approvals) event() string {
	a.t.Helper()
	select {
	case e := <-a.events:
		return e
	case <-time.After(30 * time.Second):
		a.t.Fatal("no system event")
		return ""
	}
}

// save writes the approvals file.
func (a *approvals) save(f *approval.File) {
	a.t.Helper()
	snap := a.svc.Store.Load()
	if _, err := a.svc.Store.Save(context.Background(), f, snap.Hash); err != nil {
		a.t.Fatal(err)
	}
}

// program is the resolved path of a program on this host.
func program(t *testing.T, name string) string {
	t.Helper()
	p, err := osexec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: %v", name, err)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

func fileWith(agents map[string]*approval.Agent, defaults approval.Defaults) *approval.File {
	f := approval.Empty()
	f.Defaults = defaults
	for k, v := range agents {
		f.Agents[k] = v
	}
	return f
}

func allow(paths ...string) *approval.Agent {
	a := &approval.Agent{}
	for _, p := range paths {
		a.Allowlist = append(a.Allowlist, approval.Entry{Pattern: p})
	}
	return a
}

// TestDecisionThroughExec: the decision table, the layers and the file as
// the exec tool applies them on the gateway host, with nobody connected to
// approve.
func TestDecisionThroughExec(t *testing.T) {
	echo := program(t, "echo")
	sec := func(s string) approval.ExecSettings { return approval.ExecSettings{Security: s} }
	cases := []struct {
		name   string
		policy approval.PolicyInput
		file   *approval.File
		raw    string // the approvals file as bytes, when not file
		args   map[string]any
		ran    bool     // the command ran (touched "ran", or printed "ran")
		want   []string // in the result
	}{
		{"security full runs", approval.PolicyInput{Global: sec("full")}, nil, "",
			map[string]any{"command": "touch ran"}, true, []string{"[exit code 0"}},
		{"security deny refuses", approval.PolicyInput{Global: sec("deny")}, nil, "",
			map[string]any{"command": "touch ran"}, false, []string{"exec denied: host=gateway security=deny: touch ran", "security=deny (tools.exec)"}},
		{"defaults ask, nobody to ask: denied", approval.PolicyInput{}, nil, "",
			map[string]any{"command": "touch ran"}, false, []string{"Exec denied (gateway id=", "approval-timeout): touch ran",
				`askFallback "deny" denies it`, `exec: this session has no isolating sandbox (sandbox backend "host")`, `set tools.exec.security to "full"`}},
		{"allowlist hit runs", approval.PolicyInput{}, fileWith(map[string]*approval.Agent{"main": allow(echo)}, approval.Defaults{}), "",
			map[string]any{"command": "echo ran"}, true, []string{"ran\n[exit code 0"}},
		{"allowlist star entry applies", approval.PolicyInput{}, fileWith(map[string]*approval.Agent{"*": allow(filepath.Dir(echo) + "/*")}, approval.Defaults{}), "",
			map[string]any{"command": "echo ran"}, true, []string{"ran\n"}},
		{"another agent's allowlist does not", approval.PolicyInput{Global: approval.ExecSettings{Ask: "off"}}, fileWith(map[string]*approval.Agent{"ops": allow(echo)}, approval.Defaults{}), "",
			map[string]any{"command": "echo ran"}, false, []string{"exec denied: allowlist miss: echo ran", "not every program it runs is on the allowlist (" + echo + ")"}},
		{"ask off and a miss: refused", approval.PolicyInput{Global: approval.ExecSettings{Ask: "off"}}, fileWith(map[string]*approval.Agent{"main": allow(echo)}, approval.Defaults{}), "",
			map[string]any{"command": "touch ran"}, false, []string{"exec denied: allowlist miss: touch ran", "writes"}},
		{"ask always: fallback allowlist runs a hit", approval.PolicyInput{Global: approval.ExecSettings{Ask: "always"}},
			fileWith(map[string]*approval.Agent{"main": allow(echo)}, approval.Defaults{AskFallback: approval.SecurityAllowlist}), "",
			map[string]any{"command": "echo ran"}, true, []string{"ran\n[exit code 0", `[exec approval: it needed approval (ask=always) and no operator with operator.approvals is connected to approve it, so askFallback "allowlist" let it run]`}},
		{"ask always: fallback allowlist denies a miss", approval.PolicyInput{Global: approval.ExecSettings{Ask: "always"}},
			fileWith(nil, approval.Defaults{AskFallback: approval.SecurityAllowlist}), "",
			map[string]any{"command": "touch ran"}, false, []string{"approval-timeout (allowlist-miss)): touch ran"}},
		{"askFallback full runs", approval.PolicyInput{Global: approval.ExecSettings{Security: "full", Ask: "always"}},
			fileWith(nil, approval.Defaults{AskFallback: approval.SecurityFull}), "",
			map[string]any{"command": "touch ran"}, true, []string{`askFallback "full" let it run`}},
		{"a corrupt file denies whatever the config says", approval.PolicyInput{Global: sec("full")}, nil, "{oops",
			map[string]any{"command": "touch ran"}, false, []string{"exec denied: host=gateway security=deny", "is unusable, so exec is denied"}},
		{"the file tightens", approval.PolicyInput{Global: sec("full")}, fileWith(nil, approval.Defaults{Security: approval.SecurityDeny}), "",
			map[string]any{"command": "touch ran"}, false, []string{"security=deny (exec-approvals defaults)"}},
		{"the call's security tightens", approval.PolicyInput{Global: sec("full")}, nil, "",
			map[string]any{"command": "touch ran", "security": "deny"}, false, []string{"security=deny (exec argument)"}},
		{"the call's security cannot loosen", approval.PolicyInput{Global: sec("deny")}, nil, "",
			map[string]any{"command": "touch ran", "security": "full"}, false, []string{"security=deny (tools.exec)"}},
		{"the call's ask tightens", approval.PolicyInput{Global: sec("full")}, nil, "",
			map[string]any{"command": "touch ran", "ask": "always"}, false, []string{"ask=always (exec argument)"}},
		{"session over agent over global", approval.PolicyInput{Session: sec("full"), Agent: sec("deny"), Global: sec("deny")}, nil, "",
			map[string]any{"command": "touch ran"}, true, []string{"[exit code 0"}},
		{"agent over global", approval.PolicyInput{Agent: sec("deny"), Global: sec("full")}, nil, "",
			map[string]any{"command": "touch ran"}, false, []string{"security=deny (agent tools.exec)"}},
		{"the call's env turns a hit into a miss", approval.PolicyInput{Global: approval.ExecSettings{Ask: "off"}}, fileWith(map[string]*approval.Agent{"main": allow(echo)}, approval.Defaults{}), "",
			map[string]any{"command": "echo ran", "env": map[string]string{"LD_PRELOAD": "/x.so"}}, false, []string{"exec denied: allowlist miss", "the call's environment: setting LD_PRELOAD"}},
		{"the exact-command marker runs that command", approval.PolicyInput{},
			fileWith(map[string]*approval.Agent{"main": {Allowlist: []approval.Entry{{Pattern: approval.CommandMarker("touch ran")}}}}, approval.Defaults{}), "",
			map[string]any{"command": "touch ran"}, true, []string{"[exit code 0"}},
		{"an entry with an argPattern is not matched", approval.PolicyInput{Global: approval.ExecSettings{Ask: "off"}},
			fileWith(map[string]*approval.Agent{"main": {Allowlist: []approval.Entry{{Pattern: echo, ArgPattern: "^ran$"}}}}, approval.Defaults{}), "",
			map[string]any{"command": "echo ran"}, false, []string{"exec denied: allowlist miss"}},
	}
	// git runs what the workspace's .git/config says: an allowlist entry,
	// even with the exact-command marker, never runs it unasked.
	git := program(t, "git")
	gitWhy := "git is configured by .git/config, ~/.gitconfig and hooks"
	gitAllowed := func(d approval.Defaults, extra ...approval.Entry) *approval.File {
		return fileWith(map[string]*approval.Agent{"main": {Allowlist: append([]approval.Entry{{Pattern: git}}, extra...)}}, d)
	}
	cases = append(cases, []struct {
		name   string
		policy approval.PolicyInput
		file   *approval.File
		raw    string
		args   map[string]any
		ran    bool
		want   []string
	}{
		{"git allowlisted, ask off: denied, saying why", approval.PolicyInput{Global: approval.ExecSettings{Ask: "off"}}, gitAllowed(approval.Defaults{}), "",
			map[string]any{"command": "git --version"}, false, []string{"exec denied: " + gitWhy, "so an allowlist entry alone never allows it, and ask=off: git --version"}},
		{"git allowlisted, nobody to ask: denied, saying why", approval.PolicyInput{}, gitAllowed(approval.Defaults{}), "",
			map[string]any{"command": "git --version"}, false, []string{"Exec denied (gateway id=", "approval-timeout): git --version", "It needed approval (" + gitWhy}},
		{"git allowlisted, fallback allowlist: still a miss", approval.PolicyInput{}, gitAllowed(approval.Defaults{AskFallback: approval.SecurityAllowlist}), "",
			map[string]any{"command": "git --version"}, false, []string{"approval-timeout (allowlist-miss)): git --version"}},
		{"git with its exact-command marker: denied all the same", approval.PolicyInput{Global: approval.ExecSettings{Ask: "off"}},
			gitAllowed(approval.Defaults{}, approval.Entry{Pattern: approval.CommandMarker("git --version")}), "",
			map[string]any{"command": "git --version"}, false, []string{"exec denied: " + gitWhy}},
		{"git under security full runs", approval.PolicyInput{Global: sec("full")}, nil, "",
			map[string]any{"command": "git --version >/dev/null && echo ran"}, true, []string{"ran\n"}},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApprovals(t, 0)
			a.env.ExecPolicy = c.policy
			switch {
			case c.file != nil:
				a.save(c.file)
			case c.raw != "":
				if err := os.WriteFile(a.svc.Store.Path(), []byte(c.raw), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			res := a.run(a.exec, a.env, c.args)
			ran := a.file("ran") || strings.HasPrefix(res.Text, "ran\n")
			if ran != c.ran || res.IsError == c.ran {
				t.Errorf("ran = %v, error = %v; want ran = %v:\n%s", ran, res.IsError, c.ran, res.Text)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result lacks %q:\n%s", w, res.Text)
				}
			}
		})
	}
	t.Run("a node host is refused", func(t *testing.T) {
		a := newApprovals(t, 0)
		a.env.ExecPolicy = approval.PolicyInput{Session: approval.ExecSettings{Host: "node"}}
		res := a.run(a.exec, a.env, map[string]any{"command": "touch ran"})
		if !res.IsError || !strings.Contains(res.Text, `host "node" (from session) is not available`) || a.file("ran") {
			t.Errorf("result %+v", res)
		}
	})
}

// TestAllowlistUse: a hit stamps its entries in the file (lastUsedAt,
// lastUsedCommand, lastResolvedPath), which changes the file's hash.
func TestAllowlistUse(t *testing.T) {
	a := newApprovals(t, 0)
	echo, grep := program(t, "echo"), program(t, "grep")
	a.save(fileWith(map[string]*approval.Agent{"*": allow(grep), "main": allow(echo)}, approval.Defaults{}))
	before := a.svc.Store.Load().Hash
	start := time.Now().UnixMilli()
	if res := a.run(a.exec, a.env, map[string]any{"command": "echo hi | grep hi"}); res.IsError {
		t.Fatalf("result %+v", res)
	}
	snap := a.svc.Store.Load()
	if snap.Hash == before {
		t.Error("the hash did not change")
	}
	for agent, want := range map[string]string{"*": grep, "main": echo} {
		e := snap.File.Agents[agent].Allowlist[0]
		if e.LastUsedAt < start || e.LastUsedCommand != "echo hi | grep hi" || e.LastResolvedPath != want {
			t.Errorf("agents[%q] entry %+v", agent, e)
		}
	}
}

// pending parses an approval-pending result.
func pending(t *testing.T, res tools.Result) pendingDetails {
	t.Helper()
	if res.IsError || !strings.HasPrefix(res.Text, "Approval required (id ") {
		t.Fatalf("not approval-pending: %+v", res)
	}
	var d pendingDetails
	lines := strings.Split(res.Text, "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &d); err != nil {
		t.Fatalf("details: %v in %s", err, res.Text)
	}
	if d.Status != "approval-pending" || d.ApprovalSlug != d.ApprovalID[:8] || d.ExpiresAtMs == 0 {
		t.Fatalf("details %+v", d)
	}
	return d
}

// TestApprovalFlow: with an operator connected exec returns
// approval-pending at once; the operator's decision runs the command (or
// not) in the background and the outcome arrives as a system event.
func TestApprovalFlow(t *testing.T) {
	ctx := context.Background()
	t.Run("allow-once runs once", func(t *testing.T) {
		a := newApprovals(t, 1)
		d := pending(t, a.run(a.exec, a.env, map[string]any{"command": "touch ran && echo done; exit 3"}))
		if d.Host != approval.HostGateway || d.Command != "touch ran && echo done; exit 3" || d.Cwd != a.dir {
			t.Errorf("details %+v", d)
		}
		if a.file("ran") {
			t.Fatal("ran before approval")
		}
		if list := a.svc.Pending(); len(list) != 1 || list[0].ID != d.ApprovalID || list[0].Request.SessionKey != "agent:main:main" {
			t.Fatalf("pending %+v", list)
		}
		if err := a.svc.Resolve(ctx, d.ApprovalSlug, approval.DecisionAllowOnce, "op"); err != nil {
			t.Fatal(err)
		}
		want := "Exec finished (gateway id=" + d.ApprovalID + ", session=agent:main:main, code 3)\ndone"
		if e := a.event(); e != want {
			t.Errorf("event %q, want %q", e, want)
		}
		if !a.file("ran") {
			t.Error("the approved command did not run")
		}
		if err := a.svc.Resolve(ctx, d.ApprovalID, approval.DecisionAllowOnce, "op"); err == nil {
			t.Error("a second resolve succeeded")
		}
		// Once means once: the same command asks again.
		pending(t, a.run(a.exec, a.env, map[string]any{"command": "touch ran && echo done; exit 3"}))
	})
	t.Run("deny runs nothing", func(t *testing.T) {
		a := newApprovals(t, 1)
		d := pending(t, a.run(a.exec, a.env, map[string]any{"command": "touch ran"}))
		if err := a.svc.Resolve(ctx, d.ApprovalID, approval.DecisionDeny, "op"); err != nil {
			t.Fatal(err)
		}
		if e, want := a.event(), "Exec denied (gateway id="+d.ApprovalID+", user-denied): touch ran"; e != want {
			t.Errorf("event %q, want %q", e, want)
		}
		if a.file("ran") {
			t.Error("the denied command ran")
		}
	})
	t.Run("timeout applies askFallback", func(t *testing.T) {
		a := newApprovals(t, 1)
		a.env.ApprovalTimeout = time.Millisecond
		res := a.run(a.exec, a.env, map[string]any{"command": "touch ran"})
		// The approval may expire before exec looks: then the refusal
		// comes at once rather than as an event. Both say the same.
		text := res.Text
		if !res.IsError {
			pending(t, res)
			text = a.event()
		}
		if !strings.HasPrefix(text, "Exec denied (gateway id=") || !strings.Contains(text, ", approval-timeout): touch ran") {
			t.Errorf("outcome %q", text)
		}
		if a.file("ran") {
			t.Error("ran after the timeout with askFallback deny")
		}
	})
	t.Run("allow-always persists and the next identical call runs without asking", func(t *testing.T) {
		a := newApprovals(t, 1)
		d := pending(t, a.run(a.exec, a.env, map[string]any{"command": "echo always"}))
		if err := a.svc.Resolve(ctx, d.ApprovalID, approval.DecisionAllowAlways, "op"); err != nil {
			t.Fatal(err)
		}
		if e := a.event(); !strings.HasSuffix(e, "code 0)\nalways") {
			t.Errorf("event %q", e)
		}
		al := a.svc.Store.Load().File.Agents["main"].Allowlist
		if len(al) != 2 || al[0].Pattern != program(t, "echo") || al[1].Pattern != approval.CommandMarker("echo always") {
			t.Fatalf("allowlist %+v", al)
		}
		for _, cmd := range []string{"echo always", "echo other"} { // the program is allowed now
			if res := a.run(a.exec, a.env, map[string]any{"command": cmd}); res.IsError || !strings.HasPrefix(res.Text, strings.TrimPrefix(cmd, "echo ")+"\n") {
				t.Errorf("%s: %+v", cmd, res)
			}
		}
		// A shell is never allowed by path: only the exact command is.
		d = pending(t, a.run(a.exec, a.env, map[string]any{"command": "sh -c 'echo inner'"}))
		a.svc.Resolve(ctx, d.ApprovalID, approval.DecisionAllowAlways, "op")
		a.event()
		if res := a.run(a.exec, a.env, map[string]any{"command": "sh -c 'echo inner'"}); res.IsError || !strings.HasPrefix(res.Text, "inner\n") {
			t.Errorf("the exact command again: %+v", res)
		}
		pending(t, a.run(a.exec, a.env, map[string]any{"command": "sh -c 'touch ran'"}))
		if a.file("ran") {
			t.Error("another shell command ran without asking")
		}
	})
	t.Run("git asks every time: allow-always is not offered", func(t *testing.T) {
		a := newApprovals(t, 1)
		a.save(fileWith(map[string]*approval.Agent{"main": allow(program(t, "git"))}, approval.Defaults{}))
		res := a.run(a.exec, a.env, map[string]any{"command": "git --version"})
		d := pending(t, res)
		if !strings.Contains(res.Text, "(talon approvals resolve "+d.ApprovalSlug+" allow-once|deny, ") || !strings.Contains(res.Text, "git is configured by .git/config") {
			t.Errorf("the pending text offers allow-always or does not say why: %s", res.Text)
		}
		if list := a.svc.Pending(); len(list) != 1 || len(list[0].Request.UnavailableDecisions) != 1 {
			t.Fatalf("pending %+v", list)
		}
		err := a.svc.Resolve(ctx, d.ApprovalID, approval.DecisionAllowAlways, "op")
		if err == nil || !strings.Contains(err.Error(), "allow-always is not offered for this command (git is configured by") {
			t.Fatalf("allow-always: %v", err)
		}
		if err := a.svc.Resolve(ctx, d.ApprovalID, approval.DecisionAllowOnce, "op"); err != nil {
			t.Fatal(err)
		}
		if e := a.event(); !strings.Contains(e, "code 0)\ngit version ") {
			t.Errorf("event %q", e)
		}
		pending(t, a.run(a.exec, a.env, map[string]any{"command": "git --version"})) // and asks again
	})
	t.Run("shutdown ends what waits and kills what runs", func(t *testing.T) {
		a := newApprovals(t, 1)
		waiting := pending(t, a.run(a.exec, a.env, map[string]any{"command": "touch ran"}))
		running := pending(t, a.run(a.exec, a.env, map[string]any{"command": "sleep 300; touch late"}))
		if err := a.svc.Resolve(ctx, running.ApprovalID, approval.DecisionAllowOnce, "op"); err != nil {
			t.Fatal(err)
		}
		a.svc.Close()
		got := map[string]string{}
		for range 2 {
			e := a.event()
			for _, d := range []pendingDetails{waiting, running} {
				if strings.Contains(e, "id="+d.ApprovalID) {
					got[d.ApprovalID] = e
				}
			}
		}
		if e := got[waiting.ApprovalID]; e != "Exec denied (gateway id="+waiting.ApprovalID+", gateway-shutdown): touch ran" {
			t.Errorf("waiting: %q", e)
		}
		// Killed, or never started if the shutdown came first.
		if e := got[running.ApprovalID]; !strings.Contains(e, "killed: the gateway is shutting down") && !strings.HasPrefix(e, "Exec failed (") {
			t.Errorf("running: %q", e)
		}
		if a.file("ran") || a.file("late") {
			t.Error("a command ran to its end through the shutdown")
		}
		if res := a.run(a.exec, a.env, map[string]any{"command": "touch ran"}); !res.IsError || !strings.Contains(res.Text, "shutting down") {
			t.Errorf("after shutdown: %+v", res)
		}
	})
}

// BenchmarkGate is what the approval policy adds to one exec call on the
// gateway host: reading the approvals file, resolving the policy,
// analysing the command and deciding (an allowlist hit; the stamp it
// writes is not included).
func BenchmarkGate(b *testing.B) {
	hb, err := host.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	sb, err := hb.Open(context.Background(), sandbox.Spec{ID: "bench", Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	svc, err := approval.NewService(b.TempDir(), func(context.Context, string, string, string) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	f := approval.Empty()
	f.Agents["main"] = allow("/usr/bin/*", "/bin/*")
	if _, err := svc.Store.Save(context.Background(), f, ""); err != nil {
		b.Fatal(err)
	}
	env := &tools.Env{AgentID: "main", SessionKey: "agent:main:main", Sandbox: sb, Approvals: svc}
	x, err := parseExec(json.RawMessage(`{"command":"git log --oneline | head -n 5 && ls -la src"}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		g, err := gate(context.Background(), env, x)
		if err != nil || g.decision.Outcome != approval.OutcomeRun {
			b.Fatalf("%v %+v", err, g.decision)
		}
	}
}
