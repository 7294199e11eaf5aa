package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	f, err := Parse("test.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f.Config
}

// The rule is OpenClaw's normalizeAgentId (spec/tool-policy.md §4.2):
// trim; empty → main; a valid id (^[a-z0-9][a-z0-9_-]{0,63}$, any case) is
// lower-cased; otherwise lower-case, replace runs of other characters with
// "-", strip leading and trailing "-", cut to 64, fall back to main.
func TestNormalizeAgentID(t *testing.T) {
	a := strings.Repeat
	cases := []struct{ name, in, want string }{
		{"plain", "main", "main"},
		{"upper valid id lower-cased", "Main", "main"},
		{"trimmed", "  Work ", "work"},
		{"valid with _ and -", "a_B-9", "a_b-9"},
		{"empty", "", "main"},
		{"blank", "   ", "main"},
		{"space collapses to dash", "My Agent", "my-agent"},
		{"runs collapse to one dash", "a..!!b", "a-b"},
		{"trailing invalid stripped", "My Agent!", "my-agent"},
		{"leading and trailing dashes stripped", "--x--", "x"},
		{"leading underscore is kept (only dashes are stripped)", "_x", "_x"},
		{"colon", "agent:main", "agent-main"},
		{"non-ascii letters are invalid", "Ägent Ö", "gent"},
		{"only invalid characters", "!!!", "main"},
		{"64-char valid id kept", a("a", 64), a("a", 64)},
		{"64-char valid id lower-cased", a("A", 64), a("a", 64)},
		{"65 chars cut to 64", a("a", 65), a("a", 64)},
		{"long with invalid chars cut to 64", a("b", 70) + "!", a("b", 64)},
		// The cut comes after stripping dashes, so a dash that lands at
		// position 64 stays: the spec does not strip again after the cut.
		{"dash at the cut stays", a("a", 63) + " bbb", a("a", 63) + "-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NormalizeAgentID(c.in); got != c.want {
				t.Errorf("NormalizeAgentID(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	if got := NormalizeAccountID(" "); got != "default" {
		t.Errorf(`NormalizeAccountID(" ") = %q, want "default"`, got)
	}
}

func TestAgent(t *testing.T) {
	cfg := mustParse(t, `{agents: {list: [{id: "main"}, {id: "Ops", name: "first"}, {id: "My Agent"}, {id: "my-agent!", name: "second"}]}}`)
	cases := []struct {
		name, id string
		index    int // -1: no entry
	}{
		{"exact", "main", 0},
		{"case", "OPS", 1},
		{"whitespace", "  ops\t", 1},
		{"entry id normalised", "my-agent", 2},
		{"asked id normalised", "My  Agent", 2},
		{"two entries normalise alike: the first", "MY-AGENT", 2},
		{"unknown", "ghost", -1},
		{"empty is main", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, i := cfg.Agent(c.id)
			if i != c.index {
				t.Fatalf("Agent(%q) index = %d, want %d", c.id, i, c.index)
			}
			if (a == nil) != (c.index < 0) || a != nil && a != &cfg.Agents.List[i] {
				t.Errorf("Agent(%q) = %p, want the entry at %d", c.id, a, c.index)
			}
		})
	}
	t.Run("empty list", func(t *testing.T) {
		cfg := mustParse(t, `{}`)
		if a, i := cfg.Agent("main"); a != nil || i != -1 {
			t.Errorf("Agent(main) of an empty list = %v, %d; want nil, -1 (the implicit default agent has no entry)", a, i)
		}
		if !cfg.HasAgent("main") || !cfg.HasAgent(" MAIN ") || cfg.HasAgent("ops") {
			t.Error("HasAgent: an empty list has main only")
		}
	})
	t.Run("nil config", func(t *testing.T) {
		var cfg *Config
		if a, i := cfg.Agent("main"); a != nil || i != -1 {
			t.Errorf("Agent = %v, %d; want nil, -1", a, i)
		}
		if got := cfg.DefaultAgentID(); got != MainAgentID {
			t.Errorf("DefaultAgentID = %q", got)
		}
		if got := cfg.AgentIDs(); !slices.Equal(got, []string{MainAgentID}) {
			t.Errorf("AgentIDs = %q", got)
		}
	})
}

func TestAgentIDs(t *testing.T) {
	cases := []struct {
		name, cfg    string
		want, listed []string
	}{
		{"empty list", `{}`, []string{"main"}, []string{"main"}},
		{"default first", `{agents: {list: [{id: "a"}, {id: "B", default: true}, {id: "c"}]}}`, []string{"b", "a", "c"}, []string{"a", "b", "c"}},
		{"each once", `{agents: {list: [{id: "x y"}, {id: "main"}, {id: "x-y!"}]}}`, []string{"x-y", "main"}, []string{"x-y", "main"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustParse(t, c.cfg)
			if got := cfg.AgentIDs(); !slices.Equal(got, c.want) {
				t.Errorf("AgentIDs = %q, want %q", got, c.want)
			}
			if got := cfg.ListedAgentIDs(); !slices.Equal(got, c.listed) {
				t.Errorf("ListedAgentIDs = %q, want %q", got, c.listed)
			}
			for _, id := range c.want {
				if !cfg.HasAgent(strings.ToUpper(id)) {
					t.Errorf("HasAgent(%q) = false", strings.ToUpper(id))
				}
			}
		})
	}
}

func TestAgentModel(t *testing.T) {
	cases := []struct {
		name, cfg, agent string
		want             string   // AgentModel
		refs             []string // ModelRefs of AgentModelSetting
	}{
		{"nothing set", `{}`, "main", "inspect", nil},
		{"defaults string", `{agents: {defaults: {model: "openai/gpt-5.2"}}}`, "main", "openai/gpt-5.2", []string{"openai/gpt-5.2"}},
		{"defaults primary", `{agents: {defaults: {model: {primary: " anthropic/claude ", fallbacks: ["openai/gpt-5"]}}}}`, "main",
			"anthropic/claude", []string{"anthropic/claude", "openai/gpt-5"}},
		{"agent string over defaults", `{agents: {defaults: {model: "a/b"}, list: [{id: "ops", model: "c/d"}]}}`, "ops", "c/d", []string{"c/d"}},
		{"agent primary over defaults", `{agents: {defaults: {model: "a/b"}, list: [{id: "ops", model: {primary: "e/f"}}]}}`, "ops", "e/f", []string{"e/f"}},
		{"agent looked up normalised", `{agents: {list: [{id: "main"}, {id: "Ops", model: "c/d"}]}}`, " OPS ", "c/d", []string{"c/d"}},
		{"other agent gets the defaults", `{agents: {defaults: {model: "a/b"}, list: [{id: "ops", model: "c/d"}]}}`, "main", "a/b", []string{"a/b"}},
		{"agent without primary passes to the defaults", `{agents: {defaults: {model: "a/b"}, list: [{id: "ops", model: {fallbacks: ["c/d"]}}]}}`, "ops", "a/b", []string{"a/b"}},
		{"blank agent model passes to the defaults", `{agents: {defaults: {model: "a/b"}, list: [{id: "ops", model: " "}]}}`, "ops", "a/b", []string{"a/b"}},
		{"defaults without primary", `{agents: {defaults: {model: {fallbacks: ["openai/gpt-5"]}}}}`, "main", "inspect", nil},
		// A run needs its primary only, as in OpenClaw: a malformed
		// fallbacks list does not take it away (the listing, which shows
		// fallbacks, has nothing to show).
		{"bad fallbacks keep the primary", `{agents: {list: [{id: "ops", model: {primary: "c/d", fallbacks: "x"}}]}}`, "ops", "c/d", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustParse(t, c.cfg)
			if got := cfg.AgentModel(c.agent); got != c.want {
				t.Errorf("AgentModel = %q, want %q", got, c.want)
			}
			refs, _ := ModelRefs(cfg.AgentModelSetting(c.agent))
			if !slices.Equal(refs, c.refs) {
				t.Errorf("ModelRefs(AgentModelSetting) = %q, want %q", refs, c.refs)
			}
		})
	}
}

func TestAgentWorkspace(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, cfg, agent, want string
	}{
		{"default agent", `{}`, "main", "/state/workspace"},
		{"other agent", `{agents: {list: [{id: "main"}, {id: "ops"}]}}`, "ops", "/state/workspace-ops"},
		{"first listed is default", `{agents: {list: [{id: "somi"}]}}`, "somi", "/state/workspace"},
		{"explicit", `{agents: {list: [{id: "ops", workspace: "/srv/ops"}]}}`, "ops", "/srv/ops"},
		{"explicit, id normalised", `{agents: {list: [{id: "Ops", workspace: "/srv/ops"}]}}`, " OPS", "/srv/ops"},
		{"relative to state", `{agents: {list: [{id: "ops", workspace: "ws/ops"}]}}`, "ops", "/state/ws/ops"},
		{"cleaned", `{agents: {list: [{id: "ops", workspace: " ws/../ops/ "}]}}`, "ops", "/state/ops"},
		{"home", `{agents: {list: [{id: "ops", workspace: "~/clawd"}]}}`, "ops", filepath.Join(home, "clawd")},
		{"defaults workspace", `{agents: {defaults: {workspace: "/w"}, list: [{id: "main"}, {id: "ops"}]}}`, "ops", "/w-ops"},
		{"defaults workspace, default agent", `{agents: {defaults: {workspace: "/w"}}}`, "main", "/w"},
		{"relative defaults workspace", `{agents: {defaults: {workspace: "ws"}, list: [{id: "a"}, {id: "b"}]}}`, "a", "/state/ws"},
		{"unknown agent", `{agents: {list: [{id: "a"}]}}`, "ghost", "/state/workspace-ghost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustParse(t, c.cfg).AgentWorkspace("/state", c.agent); got != c.want {
				t.Errorf("AgentWorkspace = %s, want %s", got, c.want)
			}
		})
	}
}

func TestAgentIndex(t *testing.T) {
	tree, err := ParseJSON5([]byte(`{list: [{id: "main"}, {name: "no id"}, 3, {id: 4}, {id: " Ops "}]}`))
	if err != nil {
		t.Fatal(err)
	}
	list := tree.Get("list")
	for _, c := range []struct {
		id   string
		want int
	}{{"main", 0}, {"OPS", 4}, {"ghost", -1}} {
		if got := AgentIndex(list, c.id); got != c.want {
			t.Errorf("AgentIndex(%q) = %d, want %d", c.id, got, c.want)
		}
	}
	if got := AgentIndex(tree, "main"); got != -1 {
		t.Errorf("AgentIndex of an object = %d, want -1", got)
	}
	if got := AgentIndex(nil, "main"); got != -1 {
		t.Errorf("AgentIndex(nil) = %d, want -1", got)
	}
}
