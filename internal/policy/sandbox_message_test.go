package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
)

func TestSandboxBlockedMessage(t *testing.T) {
	mode := func(m string) *config.Config {
		c := &config.Config{}
		c.Agents.Defaults.Sandbox.Mode = m
		return c
	}
	withLists := mode("all")
	withLists.Tools.Sandbox.Tools = config.ToolPolicy{Allow: config.List{"read"}, Deny: config.List{"browser"}}
	cases := []struct {
		name string
		cfg  *config.Config
		key  string
		tool string
		want string
	}{
		{"not sandboxed", mode("off"), "agent:main:main", "browser", ""},
		{"allowed", mode("all"), "agent:main:main", "read", ""},
		{"default deny", mode("all"), "agent:main:main", "browser",
			"Tool \"browser\" blocked by sandbox tool policy (mode=all).\nSession: agent:main:main\nReason: deny list + allow list\nFix:\n" +
				"- agents.defaults.sandbox.mode=off (disable sandbox)\n- Remove \"browser\" from tools.sandbox.tools.deny.\n" +
				"- Add \"browser\" to tools.sandbox.tools.allow (or set it to [] to allow all).\n- See: talon tools explain --session-key agent:main:main"},
		{"allow list only", withLists, "agent:main:main", "exec",
			"Tool \"exec\" blocked by sandbox tool policy (mode=all).\nSession: agent:main:main\nReason: allow list\nFix:\n" +
				"- agents.defaults.sandbox.mode=off (disable sandbox)\n- Add \"exec\" to tools.sandbox.tools.allow (or set it to [] to allow all).\n" +
				"- See: talon tools explain --session-key agent:main:main"},
		{"non-main names the main key", mode("non-main"), "agent:main:whatsapp:group:1", "message",
			"Tool \"message\" blocked by sandbox tool policy (mode=non-main).\nSession: agent:main:whatsapp:group:1\nReason: allow list\nFix:\n" +
				"- agents.defaults.sandbox.mode=off (disable sandbox)\n- Add \"message\" to tools.sandbox.tools.allow (or set it to [] to allow all).\n" +
				"- Use main session key (direct): agent:main:main\n- See: talon tools explain --session-key agent:main:whatsapp:group:1"},
		{"non-main main session", mode("non-main"), "agent:main:main", "message", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, SandboxBlockedMessage(c.cfg, c.key, c.tool)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
