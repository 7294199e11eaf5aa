package approval

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	fileWith := func(defaults Defaults, agents map[string]*Agent) *File {
		f := Empty()
		f.Defaults = defaults
		for k, v := range agents {
			f.Agents[k] = v
		}
		return f
	}
	type want struct {
		host     Host
		security Security
		ask      Ask
		fallback Security
		bypass   bool
		sources  map[string]string // only the keys listed are checked
	}
	cases := []struct {
		name string
		in   PolicyInput
		want want
	}{
		{"built-in defaults in the sandbox", PolicyInput{File: Empty()},
			want{HostSandbox, SecurityFull, AskOnMiss, SecurityDeny, false, map[string]string{"host": "default", "security": "default", "ask": "default", "askFallback": "default"}}},
		{"built-in security on the gateway is allowlist", PolicyInput{Global: ExecSettings{Host: "gateway"}, File: Empty()},
			want{HostGateway, SecurityAllowlist, AskOnMiss, SecurityDeny, false, nil}},
		{"global over defaults", PolicyInput{Global: ExecSettings{Host: "gateway", Security: "full", Ask: "off"}, File: Empty()},
			want{HostGateway, SecurityFull, AskOff, SecurityDeny, false, map[string]string{"security": "tools.exec"}}},
		{"agent over global", PolicyInput{Agent: ExecSettings{Security: "allowlist", Ask: "always"}, Global: ExecSettings{Security: "full", Ask: "off"}, File: Empty()},
			want{HostSandbox, SecurityAllowlist, AskAlways, SecurityDeny, false, map[string]string{"security": "agent tools.exec", "ask": "agent tools.exec"}}},
		{"session over agent, loosening too", PolicyInput{Session: ExecSettings{Host: "GATEWAY", Security: "full", Ask: "off"}, Agent: ExecSettings{Host: "sandbox", Security: "deny", Ask: "always"}, File: Empty()},
			want{HostGateway, SecurityFull, AskOff, SecurityDeny, false, map[string]string{"host": "session", "security": "session"}}},
		{"per-call security tightens", PolicyInput{Global: ExecSettings{Security: "full"}, CallSecurity: "allowlist", File: Empty()},
			want{HostSandbox, SecurityAllowlist, AskOnMiss, SecurityDeny, false, map[string]string{"security": "exec argument"}}},
		{"per-call security cannot loosen", PolicyInput{Global: ExecSettings{Security: "deny"}, CallSecurity: "full", File: Empty()},
			want{HostSandbox, SecurityDeny, AskOnMiss, SecurityDeny, false, map[string]string{"security": "tools.exec"}}},
		{"per-call ask tightens", PolicyInput{Global: ExecSettings{Ask: "off"}, CallAsk: "always", File: Empty()},
			want{HostSandbox, SecurityFull, AskAlways, SecurityDeny, false, map[string]string{"ask": "exec argument"}}},
		{"per-call ask cannot loosen", PolicyInput{Global: ExecSettings{Ask: "always"}, CallAsk: "off", File: Empty()},
			want{HostSandbox, SecurityFull, AskAlways, SecurityDeny, false, nil}},
		{"file defaults tighten security and ask", PolicyInput{Global: ExecSettings{Security: "full", Ask: "off"}, File: fileWith(Defaults{Security: SecurityAllowlist, Ask: AskOnMiss}, nil)},
			want{HostSandbox, SecurityAllowlist, AskOnMiss, SecurityDeny, false, map[string]string{"security": "exec-approvals defaults", "ask": "exec-approvals defaults"}}},
		{"file cannot loosen security or ask", PolicyInput{Global: ExecSettings{Security: "allowlist", Ask: "always"}, File: fileWith(Defaults{Security: SecurityFull, Ask: AskOff, AskFallback: SecurityFull}, nil)},
			want{HostSandbox, SecurityAllowlist, AskAlways, SecurityAllowlist, false, map[string]string{"security": "tools.exec", "askFallback": "effective security"}}},
		{"file agent entry over star over defaults", PolicyInput{AgentID: "Dev", Global: ExecSettings{Security: "full", Ask: "off"}, File: fileWith(
			Defaults{Security: SecurityDeny, Ask: AskAlways, AskFallback: SecurityDeny},
			map[string]*Agent{"*": {Security: SecurityDeny, Ask: AskAlways, AskFallback: SecurityFull}, "dev": {Security: SecurityAllowlist, Ask: AskOnMiss}})},
			want{HostSandbox, SecurityAllowlist, AskOnMiss, SecurityAllowlist, false, map[string]string{"security": "exec-approvals agents.dev", "ask": "exec-approvals agents.dev", "askFallback": "effective security"}}},
		{"file star over defaults", PolicyInput{AgentID: "ops", Global: ExecSettings{Security: "full", Ask: "off"}, File: fileWith(
			Defaults{Security: SecurityDeny}, map[string]*Agent{"*": {Security: SecurityAllowlist, AskFallback: SecurityAllowlist}})},
			want{HostSandbox, SecurityAllowlist, AskOff, SecurityAllowlist, false, map[string]string{"security": `exec-approvals agents["*"]`, "askFallback": `exec-approvals agents["*"]`}}},
		{"another agent's entry does not apply", PolicyInput{AgentID: "ops", Global: ExecSettings{Security: "full", Ask: "off"}, File: fileWith(Defaults{}, map[string]*Agent{"dev": {Security: SecurityDeny}})},
			want{HostSandbox, SecurityFull, AskOff, SecurityDeny, false, nil}},
		{"askFallback capped by effective security", PolicyInput{Global: ExecSettings{Security: "allowlist"}, File: fileWith(Defaults{AskFallback: SecurityFull}, nil)},
			want{HostSandbox, SecurityAllowlist, AskOnMiss, SecurityAllowlist, false, nil}},
		{"askFallback from the file when tighter", PolicyInput{Global: ExecSettings{Security: "full"}, File: fileWith(Defaults{AskFallback: SecurityAllowlist}, nil)},
			want{HostSandbox, SecurityFull, AskOnMiss, SecurityAllowlist, false, map[string]string{"askFallback": "exec-approvals defaults"}}},
		{"fail-closed file denies whatever config requests", PolicyInput{Session: ExecSettings{Security: "full", Ask: "off"}, File: FailClosed()},
			want{HostSandbox, SecurityDeny, AskOff, SecurityDeny, false, map[string]string{"security": "exec-approvals defaults"}}},
		{"runs on the gateway: its default security, whatever host was asked", PolicyInput{RunsOn: HostGateway, File: Empty()},
			want{HostGateway, SecurityAllowlist, AskOnMiss, SecurityDeny, false, map[string]string{"host": "where the command runs", "security": "default"}}},
		{"runs in the sandbox though the gateway was asked", PolicyInput{RunsOn: HostSandbox, Global: ExecSettings{Host: "gateway"}, File: Empty()},
			want{HostSandbox, SecurityFull, AskOnMiss, SecurityDeny, false, map[string]string{"host": "where the command runs"}}},
		{"runs where it was asked", PolicyInput{RunsOn: HostGateway, Agent: ExecSettings{Host: "gateway", Security: "full"}, File: Empty()},
			want{HostGateway, SecurityFull, AskOnMiss, SecurityDeny, false, map[string]string{"host": "agent tools.exec"}}},
		{"elevated full bypasses", PolicyInput{Elevated: true, Global: ExecSettings{Security: "deny", Ask: "always"}, File: FailClosed()},
			want{HostSandbox, SecurityFull, AskOff, SecurityFull, true, map[string]string{"security": "elevated full"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eff, err := Resolve(c.in)
			if err != nil {
				t.Fatal(err)
			}
			got := want{eff.Host, eff.Security, eff.Ask, eff.AskFallback, eff.Bypass, nil}
			if c.in.RunsOn == "" && eff.RequestedHost != eff.Host {
				t.Errorf("requested host %s differs from host %s with no RunsOn", eff.RequestedHost, eff.Host)
			}
			if d := cmp.Diff(c.want, got, cmp.AllowUnexported(want{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".sources" }, cmp.Ignore())); d != "" {
				t.Errorf("effective (-want +got):\n%s", d)
			}
			for k, v := range c.want.sources {
				if eff.Sources[k] != v {
					t.Errorf("source of %s = %q, want %q (all: %v)", k, eff.Sources[k], v, eff.Sources)
				}
			}
		})
	}
}

func TestResolveAllowlist(t *testing.T) {
	f := Empty()
	f.Agents["*"] = &Agent{Allowlist: []Entry{{ID: "1", Pattern: "/usr/bin/git"}}}
	f.Agents["dev"] = &Agent{Allowlist: []Entry{{ID: "2", Pattern: "/usr/bin/rg"}}, AutoAllowSkills: new(true)}
	f.Agents["ops"] = &Agent{Allowlist: []Entry{{ID: "3", Pattern: "/bin/rm"}}}
	eff, err := Resolve(PolicyInput{AgentID: "dev", File: f})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Entry{{ID: "1", Pattern: "/usr/bin/git"}, {ID: "2", Pattern: "/usr/bin/rg"}}, eff.Allowlist); d != "" {
		t.Errorf("allowlist (-want +got):\n%s", d)
	}
	if !eff.AutoAllowSkills {
		t.Error("autoAllowSkills from the agent entry not applied")
	}
}

func TestResolveRejectsBadValues(t *testing.T) {
	cases := []struct {
		name string
		in   PolicyInput
		want string
	}{
		{"session host", PolicyInput{Session: ExecSettings{Host: "cloud"}}, `session: invalid execHost (use "sandbox"|"gateway"|"node") (got "cloud")`},
		{"agent security", PolicyInput{Agent: ExecSettings{Security: "yolo"}}, `agent tools.exec: invalid execSecurity (use "deny"|"allowlist"|"full") (got "yolo")`},
		{"global ask", PolicyInput{Global: ExecSettings{Ask: "never"}}, `tools.exec: invalid execAsk (use "off"|"on-miss"|"always") (got "never")`},
		{"call security", PolicyInput{CallSecurity: "all"}, `exec argument security: invalid execSecurity`},
		{"call ask", PolicyInput{CallAsk: "maybe"}, `exec argument ask: invalid execAsk`},
		{"no file", PolicyInput{}, "no approvals file"},
		{"where it runs", PolicyInput{RunsOn: "cloud"}, `unknown host "cloud"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.want != "no approvals file" && c.in.File == nil {
				c.in.File = Empty()
			}
			_, err := Resolve(c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestValidateSettingsMessages(t *testing.T) {
	for _, c := range []struct {
		s    ExecSettings
		want string
	}{
		{ExecSettings{Host: "cloud"}, `invalid execHost (use "sandbox"|"gateway"|"node")`},
		{ExecSettings{Security: "yolo"}, `invalid execSecurity (use "deny"|"allowlist"|"full")`},
		{ExecSettings{Ask: "never"}, `invalid execAsk (use "off"|"on-miss"|"always")`},
	} {
		if err := ValidateSettings(c.s); err == nil || err.Error() != c.want {
			t.Errorf("ValidateSettings(%+v) = %v, want %q", c.s, err, c.want)
		}
	}
	if err := ValidateSettings(ExecSettings{Host: "Gateway", Security: "FULL", Ask: "on-miss"}); err != nil {
		t.Errorf("valid settings (any case): %v", err)
	}
}
