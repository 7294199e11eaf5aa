package approval

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseNormalises(t *testing.T) {
	raw := `{
	  "version": 1,
	  "socket": {"path": "~/.openclaw/exec-approvals.sock", "token": "tok"},
	  "defaults": {"security": "allowlist", "ask": "sometimes", "askFallback": "deny", "autoAllowSkills": false},
	  "agents": {
	    "*": {"allowlist": ["/usr/bin/git", {"pattern": "  "}, {"pattern": "/bin/ls", "id": "keep"}]},
	    "default": {"security": "full", "allowlist": [{"pattern": "/usr/bin/rg"}]},
	    "main": {"security": "deny", "ask": "always", "allowlist": [{"pattern": "~/bin/x", "argPattern": "-n", "source": "allow-always", "lastUsedAt": 5}]}
	  },
	  "extra": true
	}`
	f, warns, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	want := &File{
		Version:  1,
		Socket:   &Socket{Path: "~/.openclaw/exec-approvals.sock", Token: "tok"},
		Defaults: Defaults{Security: SecurityAllowlist, AskFallback: SecurityDeny, AutoAllowSkills: &no},
		Agents: map[string]*Agent{
			"*": {Allowlist: []Entry{{Pattern: "/usr/bin/git"}, {ID: "keep", Pattern: "/bin/ls"}}},
			"main": {Security: SecurityDeny, Ask: AskAlways, Allowlist: []Entry{
				{Pattern: "~/bin/x", ArgPattern: "-n", Source: "allow-always", LastUsedAt: 5},
				{Pattern: "/usr/bin/rg"},
			}},
		},
	}
	if d := cmp.Diff(want, f, cmpopts.IgnoreFields(Entry{}, "ID")); d != "" {
		t.Errorf("normalised file (-want +got):\n%s", d)
	}
	for _, a := range f.Agents {
		for _, e := range a.Allowlist {
			if len(e.ID) != 36 && e.ID != "keep" {
				t.Errorf("entry %q got id %q, want a generated UUID", e.Pattern, e.ID)
			}
		}
	}
	all := strings.Join(warns, "\n")
	for _, w := range []string{`defaults.ask: unknown value "sometimes"`, "extra: unknown key", "empty pattern dropped", "agents.default: legacy entry merged"} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":        `{"version": 1,`,
		"array":           `[]`,
		"null":            `null`,
		"version 2":       `{"version": 2}`,
		"version missing": `{"agents": {}}`,
		"version string":  `{"version": "1"}`,
		"trailing data":   `{"version": 1} {}`,
		"agents array":    `{"version": 1, "agents": []}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Parse([]byte(raw)); err == nil || !strings.HasPrefix(err.Error(), "parsing exec approvals") {
				t.Fatalf("err = %v, want a parsing exec approvals error", err)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	f, _, err := Parse([]byte(`{"version":1,"agents":{"main":{"security":"allowlist","allowlist":[{"id":"a","pattern":"/bin/ls"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, warns, err := Parse(b)
	if err != nil || len(warns) != 0 {
		t.Fatalf("reparse: %v %v", err, warns)
	}
	if d := cmp.Diff(f, g); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if r := (&File{Version: 1, Socket: &Socket{Path: "p", Token: "secret"}}).Redacted(); r.Socket.Token != "" || r.Socket.Path != "p" {
		t.Errorf("Redacted socket = %+v", r.Socket)
	}
}
