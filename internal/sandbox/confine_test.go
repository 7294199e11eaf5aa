package sandbox_test

import (
	"strings"
	"testing"

	"talon/internal/sandbox"
)

// TestLooser: which target sessions confine less than the caller, with
// plans resolved from real configs. Agent "main" is the caller; the
// targets are its own sessions or another agent's, whose sandbox settings
// differ one at a time.
func TestLooser(t *testing.T) {
	cases := []struct {
		name, cfg     string
		caller        string // session of agent main
		target        string // agent:<id>:<rest>
		want          string // "" when the target is no looser, else a part of the reason
		wantInReason2 string // a second part, such as the config key
	}{
		{name: "unsandboxed caller drives anything", cfg: `{agents: {defaults: {sandbox: {mode: "non-main"}}}}`,
			caller: "agent:main:main", target: "agent:main:openai-user:bob"},
		{name: "unsandboxed to unsandboxed", cfg: `{}`, caller: "agent:main:a", target: "agent:main:main"},
		{name: "non-main: sandboxed to main", cfg: `{agents: {defaults: {sandbox: {mode: "non-main"}}}}`,
			caller: "agent:main:openai-user:bob", target: "agent:main:main",
			want: "it is not sandboxed", wantInReason2: `leaves unsandboxed`},
		{name: "non-main: sandboxed to sandboxed sibling", cfg: `{agents: {defaults: {sandbox: {mode: "non-main"}}}}`,
			caller: "agent:main:openai-user:bob", target: "agent:main:subagent:x"},
		{name: "all: main is sandboxed too", cfg: `{agents: {defaults: {sandbox: {mode: "all"}}}}`,
			caller: "agent:main:openai-user:bob", target: "agent:main:main"},
		{name: "session scope is not looser", cfg: `{agents: {defaults: {sandbox: {mode: "all", scope: "session"}}}}`,
			caller: "agent:main:a", target: "agent:main:b"},
		{name: "other agent unsandboxed", cfg: `{agents: {defaults: {sandbox: {mode: "all"}}, list: [{id: "main"}, {id: "ops", sandbox: {mode: "off"}}]}}`,
			caller: "agent:main:a", target: "agent:ops:a", want: "it is not sandboxed", wantInReason2: `mode "off" (agents.list[1].sandbox.mode)`},
		{name: "other agent, wider access", cfg: `{agents: {defaults: {sandbox: {mode: "all"}}, list: [{id: "main"}, {id: "ops", sandbox: {workspaceAccess: "rw"}}]}}`,
			caller: "agent:main:a", target: "agent:ops:a", want: `its workspaceAccess is "rw" (agents.list[1].sandbox.workspaceAccess), wider than this session's "none"`},
		{name: "other agent, narrower access", cfg: `{agents: {defaults: {sandbox: {mode: "all", workspaceAccess: "ro"}}, list: [{id: "main"}, {id: "ops", sandbox: {workspaceAccess: "none"}}]}}`,
			caller: "agent:main:a", target: "agent:ops:a"},
		{name: "other agent, ro below rw", cfg: `{agents: {defaults: {sandbox: {mode: "all", workspaceAccess: "ro"}}, list: [{id: "main", sandbox: {workspaceAccess: "rw"}}, {id: "ops"}]}}`,
			caller: "agent:main:a", target: "agent:ops:a"},
		{name: "other agent, network", cfg: `{agents: {defaults: {sandbox: {mode: "all"}}, list: [{id: "main"}, {id: "ops", sandbox: {docker: {network: "bridge"}}}]}}`,
			caller: "agent:main:a", target: "agent:ops:a", want: `its sandbox has network "bridge" (agents.list[1].sandbox.docker.network), this session's "none"`},
		{name: "same network", cfg: `{agents: {defaults: {sandbox: {mode: "all", docker: {network: "bridge"}}}, list: [{id: "main"}, {id: "ops"}]}}`,
			caller: "agent:main:a", target: "agent:ops:a"},
		{name: "no network below a network", cfg: `{agents: {defaults: {sandbox: {mode: "all"}}, list: [{id: "main", sandbox: {docker: {network: "bridge"}}}, {id: "ops"}]}}`,
			caller: "agent:main:a", target: "agent:ops:a"},
		{name: "other network", cfg: `{agents: {defaults: {sandbox: {mode: "all", docker: {network: "bridge"}}}, list: [{id: "main"}, {id: "ops", sandbox: {docker: {network: "host"}}}]}}`,
			caller: "agent:main:a", target: "agent:ops:a", want: `its sandbox has network "host"`},
		{name: "other backend", cfg: `{agents: {defaults: {sandbox: {mode: "all"}}, list: [{id: "main", sandbox: {backend: "bwrap"}}, {id: "ops", sandbox: {backend: "docker"}}]}}`,
			caller: "agent:main:a", target: "agent:ops:a", want: `its sandbox backend is "docker" (agents.list[1].sandbox.backend), not this session's "bwrap"`},
		{name: "docker, other docker block", cfg: `{agents: {defaults: {sandbox: {mode: "all", backend: "docker"}}, list: [{id: "main"}, {id: "ops", sandbox: {docker: {binds: ["/srv:/srv"]}}}]}}`,
			caller: "agent:main:a", target: "agent:ops:a", want: "its docker settings (sandbox.docker) are not this session's"},
		{name: "docker, same docker block", cfg: `{agents: {defaults: {sandbox: {mode: "all", backend: "docker", docker: {image: "x"}}}, list: [{id: "main"}, {id: "ops"}]}}`,
			caller: "agent:main:a", target: "agent:ops:a"},
		{name: "limits are not compared", cfg: `{agents: {defaults: {sandbox: {mode: "all"}}, list: [{id: "main"}, {id: "ops", sandbox: {limits: {memoryMb: 4096}}}]}}`,
			caller: "agent:main:a", target: "agent:ops:a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, state := mustConfig(t, c.cfg), t.TempDir()
			caller := resolve(t, cfg, state, "main", c.caller)
			agent, _, _ := strings.Cut(strings.TrimPrefix(c.target, "agent:"), ":")
			target := resolve(t, cfg, state, agent, c.target)
			got := sandbox.Looser(&caller, &target)
			switch {
			case c.want == "" && got != "":
				t.Errorf("Looser = %q, want the target no looser", got)
			case c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, c.wantInReason2)):
				t.Errorf("Looser = %q, want it to contain %q and %q", got, c.want, c.wantInReason2)
			}
		})
	}
}
