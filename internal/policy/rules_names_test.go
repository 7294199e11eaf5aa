package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// §3.1 Name normalisation: trim, lower-case, then map the aliases
// bash → exec and apply-patch → apply_patch.
func TestRulesNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"read", "read"},
		{" READ ", "read"},
		{"\tExec\n", "exec"},
		{"bash", "exec"},
		{"BASH", "exec"},
		{" Bash ", "exec"},
		{"apply-patch", "apply_patch"},
		{"Apply-Patch", "apply_patch"},
		{"apply_patch", "apply_patch"},
		{"bash2", "bash2"},                 // aliases are whole names only
		{"bash*", "bash*"},                 // no alias inside a glob
		{"apply-patch-x", "apply-patch-x"}, // no alias on a prefix
		{"GROUP:FS", "group:fs"},
		{"Web_*", "web_*"},
		{"", ""},
		{"   ", ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			if got := Normalize(c.in); got != c.want {
				t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// §1.2 group table and §3.2 group expansion: core groups are replaced by
// their members (one level), other entries are kept, empty entries are
// dropped, and duplicates are removed keeping the first occurrence.
func TestRulesExpandGroups(t *testing.T) {
	openclaw := []string{
		"web_search", "web_fetch", "memory_search", "memory_get", "sessions_list", "sessions_history",
		"sessions_send", "sessions_spawn", "sessions_yield", "subagents", "session_status", "browser",
		"canvas", "message", "cron", "gateway", "nodes", "agents_list", "image", "tts",
	}
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{"group:openclaw exact order", []string{"group:openclaw"}, openclaw},
		{"group:fs", []string{"group:fs"}, []string{"read", "write", "edit", "apply_patch"}},
		{"group:runtime", []string{"group:runtime"}, []string{"exec", "process"}},
		{"group:web", []string{"group:web"}, []string{"web_search", "web_fetch"}},
		{"group:memory", []string{"group:memory"}, []string{"memory_search", "memory_get"}},
		{"group:sessions", []string{"group:sessions"}, []string{"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "sessions_yield", "subagents", "session_status"}},
		{"group:ui", []string{"group:ui"}, []string{"browser", "canvas"}},
		{"group:messaging", []string{"group:messaging"}, []string{"message"}},
		{"group:automation", []string{"group:automation"}, []string{"cron", "gateway"}},
		{"group:nodes", []string{"group:nodes"}, []string{"nodes"}},
		{"group:agents", []string{"group:agents"}, []string{"agents_list"}},
		{"group:media", []string{"group:media"}, []string{"image", "tts"}},
		{"group name normalised", []string{" GROUP:Runtime "}, []string{"exec", "process"}},
		{"unknown group kept literally", []string{"group:xyz", "read"}, []string{"group:xyz", "read"}},
		{"group:plugins is not a core group", []string{"group:plugins"}, []string{"group:plugins"}},
		{"plain names normalised and aliased", []string{"BASH", "apply-patch", "Read"}, []string{"exec", "apply_patch", "read"}},
		{"dedupe keeps first: name before group", []string{"process", "group:runtime"}, []string{"process", "exec"}},
		{"dedupe keeps first: group before name", []string{"group:runtime", "bash", "exec"}, []string{"exec", "process"}},
		{"dedupe across groups", []string{"group:web", "group:openclaw"}, openclaw},
		{"dedupe of overlapping groups keeps first group's order", []string{"group:media", "group:openclaw"},
			append([]string{"image", "tts"}, minus(openclaw, "image", "tts")...)},
		{"empty entries dropped", []string{"", "  ", "read", "\t"}, []string{"read"}},
		{"nil", nil, []string{}},
		{"globs kept", []string{"web_*", "*"}, []string{"web_*", "*"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ExpandGroups(c.in)
			if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ExpandGroups(%q) (-want +got):\n%s", c.in, diff)
			}
		})
	}
	// One level only: expanding every group never yields a group name.
	t.Run("one level", func(t *testing.T) {
		all := []string{"group:openclaw", "group:fs", "group:runtime", "group:web", "group:memory", "group:sessions",
			"group:ui", "group:messaging", "group:automation", "group:nodes", "group:agents", "group:media"}
		for _, e := range ExpandGroups(all) {
			if strings.HasPrefix(e, "group:") {
				t.Errorf("expansion contains group name %q", e)
			}
		}
	})
}

// §4.2 Agent id parsed from a session key of the shape agent:<id>:<rest>
// (lower-cased).
func TestRulesAgentFromSessionKey(t *testing.T) {
	cases := []struct {
		key    string
		want   string
		wantOK bool
	}{
		{"agent:main:main", "main", true},
		{"agent:Work:main", "work", true},
		{"AGENT:Ops:whatsapp:group:1", "ops", true},
		{"  agent:ops:x  ", "ops", true},
		{"agent:ops:subagent:abc", "ops", true},
		{"agent:My Agent:main", "my-agent", true},
		{"main", "", false},
		{"agent:main", "", false},
		{"agent:main:", "", false},
		{"subagent:abc", "", false},
		{"whatsapp:group:1", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			got, ok := AgentFromSessionKey(c.key)
			if got != c.want || ok != c.wantOK {
				t.Errorf("AgentFromSessionKey(%q) = %q, %v; want %q, %v", c.key, got, ok, c.want, c.wantOK)
			}
		})
	}
}
