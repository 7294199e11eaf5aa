package policy

import (
	"testing"
)

// §3.3 Glob patterns: exactly "*" matches everything; an entry containing
// "*" is an anchored whole-string match where each "*" matches any run of
// characters (possibly empty) and every other character is literal;
// anything else is exact equality. Entries and names are normalised first.
func TestRulesGlobPatterns(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "read", true},
		{"*", "some_plugin_tool", true},
		{"**", "anything", true},
		// prefix
		{"web_*", "web_search", true},
		{"web_*", "web_fetch", true},
		{"web_*", "web_", true}, // the star matches the empty run
		{"web_*", "web", false},
		{"web_*", "my_web_search", false}, // anchored at the start
		{"web_*", "WEB_SEARCH", true},     // the tool name is normalised
		{" WEB_* ", "web_fetch", true},    // so is the entry
		// suffix
		{"*_get", "memory_get", true},
		{"*_get", "memory_get_all", false}, // anchored at the end
		{"*search", "web_search", true},
		{"*search", "memory_search", true},
		// middle
		{"mem*_search", "memory_search", true},
		{"mem*_search", "mem_search", true},
		{"mem*_search", "xmemory_search", false},
		{"mem*_search", "memory_search_x", false},
		// several stars
		{"s*s*s", "sessions", true},
		{"s*s*s", "sss", true},
		{"s*s*s", "ss", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "acb", false},
		{"a*b*c", "abcb", false},
		{"*e*", "exec", true},
		{"*e*", "list", false},
		{"a*a", "a", false}, // prefix and suffix may not overlap
		{"a*a", "aa", true},
		// no other character is special
		{"web.search", "web_search", false},
		{"web.search", "web.search", true},
		{"web.*", "web_search", false},
		{"web.*", "web.fetch", true},
		{"web?search", "web_search", false},
		{"web?search", "web?search", true},
		{"read+", "readd", false},
		{"[a-z]*", "read", false},
		{"[a-z]*", "[a-z]ead", true},
		{"^read*", "read", false},
		{"(re|ex)*", "read", false},
		// aliases apply to whole entries only, never inside a glob
		{"bash*", "exec", false},
		{"bash*", "bashful", true},
		// exact entries
		{"read", "read", true},
		{"read", "reader", false},
		{"read", "READ", true},
	}
	for _, c := range cases {
		t.Run(c.pattern+"~"+c.name, func(t *testing.T) {
			r := NewRules([]string{c.pattern}, nil)
			v, _ := r.Check(c.name)
			if got := v == Allowed; got != c.want {
				t.Errorf("allow %q, tool %q: allowed = %v, want %v", c.pattern, c.name, got, c.want)
			}
			// The same compiled pattern in a deny list.
			d := NewRules(nil, []string{c.pattern})
			dv, _ := d.Check(c.name)
			if got := dv == Denied; got != c.want {
				t.Errorf("deny %q, tool %q: denied = %v, want %v", c.pattern, c.name, got, c.want)
			}
		})
	}
}

// §3.4 The policy matcher: deny wins (also over "*"); no allow patterns
// (missing, empty, only blank entries) allows; an allow match allows;
// apply_patch is allowed wherever the allow patterns match exec; otherwise
// blocked. Aliases apply to entries and to the tool name.
func TestRulesMatcher(t *testing.T) {
	cases := []struct {
		name        string
		allow, deny []string
		tool        string
		want        Verdict
		entry       string // matching entry, when want is Denied
	}{
		{"zero policy allows", nil, nil, "read", Allowed, ""},
		{"deny * beats allow *", []string{"*"}, []string{"*"}, "read", Denied, "*"},
		{"deny name beats allow *", []string{"*"}, []string{"read"}, "read", Denied, "read"},
		{"deny glob beats exact allow", []string{"web_search"}, []string{"web_*"}, "web_search", Denied, "web_*"},
		{"deny group entry reported", []string{"*"}, []string{"group:fs"}, "edit", Denied, "group:fs"},
		{"allow [] is no restriction", []string{}, nil, "anything", Allowed, ""},
		{"allow [] with deny", []string{}, []string{"exec"}, "read", Allowed, ""},
		{"blank-only allow is no restriction", []string{"", "   "}, nil, "read", Allowed, ""},
		{"blank entries dropped, rest restricts", []string{"  ", "exec"}, nil, "read", NotAllowed, ""},
		{"allow match", []string{"read"}, nil, "read", Allowed, ""},
		{"allow miss", []string{"read"}, nil, "write", NotAllowed, ""},
		{"apply_patch via exec allow", []string{"exec"}, nil, "apply_patch", Allowed, ""},
		{"apply_patch via bash alias in allow", []string{"bash"}, nil, "apply_patch", Allowed, ""},
		{"apply_patch via group:runtime", []string{"group:runtime"}, nil, "apply_patch", Allowed, ""},
		{"apply_patch via glob matching exec", []string{"ex*"}, nil, "apply_patch", Allowed, ""},
		{"apply_patch via apply-patch alias", []string{"apply-patch"}, nil, "apply_patch", Allowed, ""},
		{"tool apply-patch is apply_patch", []string{"exec"}, nil, "Apply-Patch", Allowed, ""},
		{"apply_patch not via process", []string{"process"}, nil, "apply_patch", NotAllowed, ""},
		{"apply_patch allow does not allow exec", []string{"apply_patch"}, nil, "exec", NotAllowed, ""},
		{"deny apply_patch beats exec allow", []string{"exec"}, []string{"apply_patch"}, "apply_patch", Denied, "apply_patch"},
		{"deny exec does not remove apply_patch", nil, []string{"exec"}, "apply_patch", Allowed, ""},
		{"deny exec with allow * keeps apply_patch", []string{"*"}, []string{"exec"}, "apply_patch", Allowed, ""},
		{"deny exec removes exec", nil, []string{"exec"}, "exec", Denied, "exec"},
		{"deny exec removes a tool named bash", nil, []string{"exec"}, "bash", Denied, "exec"},
		{"deny exec removes a tool named Bash", nil, []string{"exec"}, "Bash", Denied, "exec"},
		{"deny bash alias removes exec", nil, []string{" BASH "}, "exec", Denied, "exec"},
		{"tool Bash matched as exec by allow", []string{"exec"}, nil, "Bash", Allowed, ""},
		{"tool Bash not matched by read allow", []string{"read"}, nil, "Bash", NotAllowed, ""},
		{"allow entries normalised", []string{" ReAd "}, nil, "READ", Allowed, ""},
		{"unknown group matches nothing", []string{"group:xyz"}, nil, "read", NotAllowed, ""},
		{"unknown group in deny removes nothing", nil, []string{"group:xyz"}, "group:xyz2", Allowed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRules(c.allow, c.deny)
			v, entry := r.Check(c.tool)
			if v != c.want {
				t.Fatalf("allow %q deny %q tool %q: verdict %v, want %v", c.allow, c.deny, c.tool, v, c.want)
			}
			if c.want == Denied && entry != c.entry {
				t.Errorf("deny entry = %q, want %q", entry, c.entry)
			}
		})
	}
	t.Run("zero Rules value", func(t *testing.T) {
		var r Rules
		if v, _ := r.Check("anything"); v != Allowed {
			t.Errorf("zero Rules: verdict %v, want Allowed", v)
		}
	})
}

// MatchGlob is one entry's match, exported for lists of other names
// (tools.agentToAgent.allow): no folding, no group expansion.
func TestMatchGlob(t *testing.T) {
	cases := []struct {
		entry, name string
		want        bool
	}{
		{"*", "anything", true},
		{"ops", "ops", true},
		{"ops", "OPS", false},
		{"group:fs", "read", false},
		{"o*", "ops", true},
		{"*s", "ops", true},
		{"o*s", "os", true},
		{"o*x*s", "ops", false},
		{"o*p*s", "ops", true},
		{"ops*", "op", false},
	}
	for _, c := range cases {
		if got := MatchGlob(c.entry, c.name); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.entry, c.name, got, c.want)
		}
	}
}
