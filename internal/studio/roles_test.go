package studio

import (
	"encoding/json"
	"testing"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := object(json.RawMessage(s), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestApplyRoleTools(t *testing.T) {
	cons, _ := roleByID("conservative")
	collab, _ := roleByID("collaborative")
	cases := []struct {
		name    string
		entry   string
		role    Role
		want    string
		changed bool
	}{
		{"grant on a bare entry", `{"id":"a"}`, collab, `{"id":"a","tools":{"alsoAllow":["group:runtime"]}}`, true},
		{"grant lifts the deny, keeps the rest", `{"id":"a","tools":{"deny":["browser","group:runtime"]}}`, collab,
			`{"id":"a","tools":{"alsoAllow":["group:runtime"],"deny":["browser"]}}`, true},
		{"grant into an allow list, not beside it", `{"id":"a","tools":{"allow":["read"]}}`, collab,
			`{"id":"a","tools":{"allow":["read","group:runtime"]}}`, true},
		{"grant twice changes nothing", `{"id":"a","tools":{"alsoAllow":["group:runtime"]}}`, collab,
			`{"id":"a","tools":{"alsoAllow":["group:runtime"]}}`, false},
		{"deny", `{"id":"a","tools":{"alsoAllow":["web_fetch","group:runtime"]}}`, cons,
			`{"id":"a","tools":{"alsoAllow":["web_fetch"],"deny":["group:runtime"]}}`, true},
		{"deny keeps numbers as written", `{"id":"a","tools":{"exec":{"timeoutSec":1800}}}`, cons,
			`{"id":"a","tools":{"deny":["group:runtime"],"exec":{"timeoutSec":1800}}}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := decode(t, c.entry)
			if got := applyRoleTools(e, c.role); got != c.changed {
				t.Errorf("changed = %v", got)
			}
			b, _ := json.Marshal(e)
			if string(b) != c.want {
				t.Errorf("got  %s\nwant %s", b, c.want)
			}
		})
	}
}

// The config patches of a role name one entry and only the keys that
// change; a dropped key is deleted with null (the gateway merges
// agents.list by id, so an absent key would be kept).
func TestRolePatches(t *testing.T) {
	cases := []struct {
		name, before, after, patch string
	}{
		{"deny emptied", `{"deny":["group:runtime"]}`, `{"alsoAllow":["group:runtime"]}`, `{"alsoAllow":["group:runtime"],"deny":null}`},
		{"unchanged keys left out", `{"deny":["browser"],"exec":{"ask":"off"}}`, `{"deny":["browser","group:runtime"],"exec":{"ask":"off"}}`, `{"deny":["browser","group:runtime"]}`},
		{"from nothing", `{}`, `{"deny":["group:runtime"]}`, `{"deny":["group:runtime"]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := json.Marshal(diffKeys(decode(t, c.before), decode(t, c.after)))
			if string(b) != c.patch {
				t.Errorf("got %s, want %s", b, c.patch)
			}
		})
	}
	if got := entryPatch("a", "tools", map[string]any{"deny": nil}); got != `{"agents":{"list":[{"id":"a","tools":{"deny":null}}]}}` {
		t.Errorf("entryPatch = %s", got)
	}
}

func TestCurrentRole(t *testing.T) {
	cases := []struct {
		st     roleState
		role   string
		custom bool
	}{
		{roleState{Security: "deny", Ask: "off", RuntimeDenied: true}, "conservative", false},
		{roleState{Security: "allowlist", Ask: "on-miss", RuntimeGranted: true}, "collaborative", false},
		{roleState{Security: "full", Ask: "off", RuntimeGranted: true}, "autonomous", false},
		// The approvals say autonomous but exec is denied: custom, and
		// the page says what differs.
		{roleState{Security: "full", Ask: "off", RuntimeDenied: true}, "", true},
		{roleState{}, "", true},
	}
	for _, c := range cases {
		id, detail := currentRole(c.st)
		if id != c.role || (detail != "") != c.custom {
			t.Errorf("%+v: %q %q", c.st, id, detail)
		}
	}
}

func TestSandboxRepairs(t *testing.T) {
	cases := []struct {
		name, cfg string
		want      []string
	}{
		{"agent's own mode", `{"agents":{"list":[{"id":"a","sandbox":{"mode":"all"},"tools":{"sandbox":{"tools":{"allow":[]}}}}]}}`, []string{"a"}},
		{"defaults' mode", `{"agents":{"defaults":{"sandbox":{"mode":"ALL"}},"list":[{"id":"a","tools":{"sandbox":{"tools":{"allow":[]}}}}]}}`, []string{"a"}},
		{"non-main is not always sandboxed", `{"agents":{"list":[{"id":"a","sandbox":{"mode":"non-main"},"tools":{"sandbox":{"tools":{"allow":[]}}}}]}}`, nil},
		{"a list with items", `{"agents":{"list":[{"id":"a","sandbox":{"mode":"all"},"tools":{"sandbox":{"tools":{"allow":["exec"]}}}}]}}`, nil},
		{"absent list", `{"agents":{"list":[{"id":"a","sandbox":{"mode":"all"}}]}}`, nil},
		{"no agents", `{}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids := sandboxRepairs(decode(t, c.cfg))
			if len(ids) != len(c.want) || (len(ids) > 0 && ids[0] != c.want[0]) {
				t.Fatalf("ids %v, want %v", ids, c.want)
			}
		})
	}
}

func TestSessionFor(t *testing.T) {
	cases := []struct {
		key, want string
		ok        bool
	}{
		{"", "agent:a:main", true},
		{"agent:a:main", "agent:a:main", true},
		{"agent:a:studio:x", "agent:a:studio:x", true},
		{"agent:a:", "", false},
		{"agent:b:main", "", false},
		{"global", "", false},
		{"agent:a:x y", "", false},
	}
	for _, c := range cases {
		got, err := sessionFor(c.key, "a", "agent:a:main")
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("%q: %q %v", c.key, got, err)
		}
	}
	if got, err := sessionFor("global", "a", "global"); got != "global" || err != nil {
		t.Errorf("global scope: %q %v", got, err)
	}
}

// Every page and fragment parses (they are parsed at the first request).
func TestTemplatesParse(t *testing.T) {
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"page", "messages", "approval", "approval-answered"} {
		if pages["agent"].Lookup(name) == nil {
			t.Errorf("no template %q", name)
		}
	}
	for _, p := range []string{"agent", "agents", "chat", "error", "sessions", "signin", "tenants"} {
		if pages[p] == nil || pages[p].Lookup("content") == nil {
			t.Errorf("page %q has no content", p)
		}
	}
}
