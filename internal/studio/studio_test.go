package studio

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/authlimit"
)

func TestSignIn(t *testing.T) {
	e := newEnv(t, "")
	cases := []struct {
		name          string
		token, tenant string
		status        int
		says          string
	}{
		{"no token", "", "", http.StatusBadRequest, "Enter a token"},
		{"token too long", strings.Repeat("x", maxTokenLen+1), "", http.StatusBadRequest, "too long"},
		{"bad tenant id", "whatever", "../etc", http.StatusBadRequest, "tenant id"},
		{"wrong token", "nope", "", http.StatusUnauthorized, "does not sign in to the default tenant"},
		{"unknown tenant", acmeToken, "ghost", http.StatusUnauthorized, "does not sign in to tenant ghost"},
		{"a tenant's token for another", acmeToken, "", http.StatusUnauthorized, "does not sign in"},
		{"admin token with a tenant", adminToken, "acme", http.StatusUnauthorized, "does not sign in to tenant acme"},
		{"admin", adminToken, "", http.StatusSeeOther, ""},
		{"tenant", acmeToken, "acme", http.StatusSeeOther, ""},
		{"default tenant", defaultTok, "", http.StatusSeeOther, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &browser{e: e, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
			res, body := b.postRaw("/signin", url.Values{"token": {c.token}, "tenant": {c.tenant}}, "")
			if res.StatusCode != c.status || !strings.Contains(body, c.says) {
				t.Fatalf("status %d, want %d with %q:\n%s", res.StatusCode, c.status, c.says, body)
			}
			cookie := res.Header.Get("Set-Cookie")
			if (c.status == http.StatusSeeOther) != strings.Contains(cookie, cookieName+"=") {
				t.Fatalf("Set-Cookie %q", cookie)
			}
			if cookie != "" && (!strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict")) {
				t.Errorf("cookie %q is not HttpOnly and SameSite=Strict", cookie)
			}
		})
	}

	// Signed out, a page sends the person to sign in and back; a
	// post-sign-in target off the site is dropped.
	anon := &browser{e: e, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if res, _ := anon.get("/agents/main"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?next=%2Fagents%2Fmain" {
		t.Errorf("signed out: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := anon.postRaw("/signin", url.Values{"token": {adminToken}, "next": {"//evil.example/"}}, ""); res.Header.Get("Location") != "/" {
		t.Errorf("next off the site: redirected to %q", res.Header.Get("Location"))
	}
	if res, _ := anon.postRaw("/agents", url.Values{"name": {"x"}}, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("signed-out POST: %d", res.StatusCode)
	}
}

// Who may see what: a tenant's token shows that tenant only, the admin
// token everything, and a form without the session's CSRF token does
// nothing.
func TestAccess(t *testing.T) {
	e := newEnv(t, "")
	acme := e.signIn(acmeToken, "acme")
	admin := e.signIn(adminToken, "")
	cases := []struct {
		name   string
		b      *browser
		path   string
		status int
	}{
		{"tenant sees its agents", acme, "/t/acme/agents", http.StatusOK},
		{"tenant not the default one", acme, "/agents", http.StatusForbidden},
		{"tenant not the platform", acme, "/tenants", http.StatusForbidden},
		{"admin sees the default tenant", admin, "/agents", http.StatusOK},
		{"admin sees acme", admin, "/t/acme/agents", http.StatusOK},
		{"admin sees the platform", admin, "/tenants", http.StatusOK},
		{"a bad tenant id", admin, "/t/..%2f/agents", http.StatusNotFound},
		{"an unknown agent", admin, "/agents/ghost", http.StatusNotFound},
		{"no such page", admin, "/nothing", http.StatusNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if res, body := c.b.get(c.path); res.StatusCode != c.status {
				t.Fatalf("GET %s: %d, want %d\n%s", c.path, res.StatusCode, c.status, body)
			}
		})
	}
	before := e.fileOf("talon.json")
	res, body := admin.postRaw("/agents", url.Values{"name": {"Sneaky"}, "csrf": {strings.Repeat("0", 64)}}, "")
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "another site") {
		t.Errorf("bad CSRF token: %d\n%s", res.StatusCode, body)
	}
	if e.fileOf("talon.json") != before {
		t.Error("a form with a bad CSRF token changed the config")
	}
	res, _ = admin.post("/signout", nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("sign out: %d", res.StatusCode)
	}
	if res, _ := admin.get("/agents"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("after sign-out: %d, want the sign-in redirect", res.StatusCode)
	}
}

// Creating an agent: every bad input is refused with its reason on the
// page and nothing written; a good one follows seed 002's workspace rule.
func TestCreateAgent(t *testing.T) {
	e := newEnv(t, "")
	b := e.signIn(adminToken, "")
	cases := []struct {
		name, agent, seed string
		status            int
		says              string
	}{
		{"no name", "  ", "", http.StatusBadRequest, "Give the agent a name"},
		{"control character", "Ada\nLovelace", "", http.StatusBadRequest, "control character"},
		{"too long", strings.Repeat("a", maxAgentName+1), "", http.StatusBadRequest, "at most 100"},
		{"no letter or digit", "!!!", "", http.StatusBadRequest, "at least one letter or digit"},
		{"main is reserved", "Main", "", http.StatusBadRequest, "default agent"},
		{"bad seed", "Ada", "no spaces!", http.StatusBadRequest, "avatar seed"},
		{"long seed", "Ada", strings.Repeat("s", 65), http.StatusBadRequest, "avatar seed"},
	}
	before := e.fileOf("talon.json")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, body := b.post("/agents", url.Values{"name": {c.agent}, "avatarSeed": {c.seed}})
			if res.StatusCode != c.status || !strings.Contains(body, c.says) {
				t.Fatalf("%d, want %d with %q:\n%s", res.StatusCode, c.status, c.says, body)
			}
			// The form keeps what was typed.
			if c.name == "bad seed" && !strings.Contains(body, `value="Ada"`) {
				t.Errorf("the form lost the name")
			}
			if e.fileOf("talon.json") != before {
				t.Fatal("a refused form changed the config")
			}
		})
	}

	res, _ := b.post("/agents", url.Values{"name": {"Ada Lovelace"}, "avatarSeed": {"a1b2"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/agents/ada-lovelace?created=1" {
		t.Fatalf("create: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if !strings.Contains(e.fileOf("talon.json"), `"workspace": "`+e.state+`/workspace-ada-lovelace"`) {
		t.Errorf("workspace is not <state>/workspace-<id>:\n%s", e.fileOf("talon.json"))
	}
	if id := e.fileOf("workspace-ada-lovelace/IDENTITY.md"); !strings.Contains(id, "Name: Ada Lovelace") || !strings.Contains(id, "Avatar: seed:a1b2") {
		t.Errorf("IDENTITY.md:\n%s", id)
	}
	_, body := b.get("/agents/ada-lovelace?created=1")
	if !strings.Contains(body, "Agent ada-lovelace created") || !strings.Contains(body, `data-tool="exec"`) {
		t.Errorf("agent page:\n%s", body)
	}
	// A second agent of the same name: the gateway's refusal, shown.
	before = e.fileOf("talon.json")
	res, body = b.post("/agents", url.Values{"name": {"Ada Lovelace"}})
	if res.StatusCode != http.StatusConflict || !strings.Contains(body, "already exists") {
		t.Errorf("duplicate: %d\n%s", res.StatusCode, body)
	}
	if e.fileOf("talon.json") != before {
		t.Error("a refused duplicate changed the config")
	}
}

// Execution roles: each writes the approvals policy, the runtime group
// and the main session's exec settings, and the tool table follows.
func TestRoles(t *testing.T) {
	e := newEnv(t, `{"agents":{"list":[{"id":"main"},{"id":"worker","tools":{"deny":["browser"]}}]}}`)
	b := e.signIn(adminToken, "")
	before := e.fileOf("talon.json")
	for _, bad := range []string{"", "root", "CONSERVATIVE"} {
		res, body := b.post("/agents/worker/role", url.Values{"role": {bad}})
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is not an execution role") {
			t.Errorf("role %q: %d\n%s", bad, res.StatusCode, body)
		}
	}
	if e.fileOf("talon.json") != before || e.fileOf("exec-approvals.json") != "" {
		t.Fatal("a refused role wrote something")
	}
	if res, _ := b.post("/agents/ghost/role", url.Values{"role": {"autonomous"}}); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown agent: %d", res.StatusCode)
	}

	type approvals struct {
		Agents map[string]struct{ Security, Ask string } `json:"agents"`
	}
	for _, c := range []struct {
		role, security, ask, execRow string
		denied                       bool
	}{
		{"conservative", "deny", "off", `class="removed" data-tool="exec"`, true},
		{"collaborative", "allowlist", "on-miss", `class="ok" data-tool="exec"`, false},
		{"autonomous", "full", "off", `class="ok" data-tool="exec"`, false},
	} {
		res, body := b.post("/agents/worker/role", url.Values{"role": {c.role}})
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "Execution role applied") || !strings.Contains(body, c.execRow) {
			t.Fatalf("%s: %d\n%s", c.role, res.StatusCode, body)
		}
		if !strings.Contains(body, `id="role-`+c.role+`" name="role" value="`+c.role+`" checked`) {
			t.Errorf("%s: the page does not show it as the current role", c.role)
		}
		var ap approvals
		if err := json.Unmarshal([]byte(e.fileOf("exec-approvals.json")), &ap); err != nil {
			t.Fatal(err)
		}
		if got := ap.Agents["worker"]; got.Security != c.security || got.Ask != c.ask {
			t.Errorf("%s: approvals %+v", c.role, got)
		}
		cfg := e.fileOf("talon.json")
		if strings.Contains(cfg, `"group:runtime"`) != true || !strings.Contains(cfg, `"browser"`) {
			t.Errorf("%s: config\n%s", c.role, cfg)
		}
		if denied := strings.Contains(cfg, `"deny": [
            "browser",
            "group:runtime"`); denied != c.denied {
			t.Errorf("%s: group:runtime denied = %v\n%s", c.role, denied, cfg)
		}
		if !strings.Contains(body, "execSecurity "+c.security) || !strings.Contains(body, "execHost gateway") {
			t.Errorf("%s: the main session's exec settings are not shown:\n%s", c.role, body)
		}
	}
	// Applying the same role again changes only what differs: nothing in
	// the files.
	cfg, ap := e.fileOf("talon.json"), e.fileOf("exec-approvals.json")
	if res, _ := b.post("/agents/worker/role", url.Values{"role": {"autonomous"}}); res.StatusCode != http.StatusOK {
		t.Fatal(res.StatusCode)
	}
	if e.fileOf("talon.json") != cfg || e.fileOf("exec-approvals.json") != ap {
		t.Error("re-applying the role rewrote the files")
	}
	// The implicit default agent, whose deny list the round trip
	// empties: the key goes (the gateway merges agents.list by id, so
	// only a null deletes it), and exec comes back.
	for _, role := range []string{"conservative", "collaborative"} {
		if res, body := b.post("/agents/main/role", url.Values{"role": {role}}); res.StatusCode != http.StatusOK || !strings.Contains(body, "Execution role applied") {
			t.Fatalf("main %s: %d\n%s", role, res.StatusCode, body)
		}
	}
	_, body := b.get("/agents/main")
	if !strings.Contains(body, `class="ok" data-tool="exec"`) || !strings.Contains(body, `value="collaborative" checked`) {
		t.Errorf("main after conservative then collaborative:\n%s", body)
	}
	if strings.Contains(e.fileOf("talon.json"), `"deny": [
            "group:runtime"`) {
		t.Errorf("group:runtime still denied:\n%s", e.fileOf("talon.json"))
	}
}

// The one-shot repair of an always-sandboxed agent's empty sandbox allow
// list, with its notice.
func TestSandboxRepair(t *testing.T) {
	e := newEnv(t, `{"agents":{"defaults":{"sandbox":{"mode":"all"}},"list":[{"id":"main"},`+
		`{"id":"boxed","tools":{"sandbox":{"tools":{"allow":[]}}}},`+
		`{"id":"loose","sandbox":{"mode":"off"},"tools":{"sandbox":{"tools":{"allow":[]}}}}]}}`)
	b := e.signIn(adminToken, "")
	_, body := b.get("/agents")
	if !strings.Contains(body, `Studio repaired agent &#34;boxed&#34;`) || strings.Contains(body, `agent &#34;loose&#34;`) {
		t.Fatalf("notice:\n%s", body)
	}
	cfg := e.fileOf("talon.json")
	var got struct {
		Agents struct {
			List []struct {
				ID    string
				Tools struct {
					Sandbox struct{ Tools struct{ Allow []string } }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(cfg), &got); err != nil {
		t.Fatal(err)
	}
	allow := map[string][]string{}
	for _, a := range got.Agents.List {
		allow[a.ID] = a.Tools.Sandbox.Tools.Allow
	}
	if strings.Join(allow["boxed"], ",") != "*" || allow["loose"] == nil || len(allow["loose"]) != 0 {
		t.Fatalf("config after the repair:\n%s", cfg)
	}
	// Once: the notice stays, the file is not written again.
	_, body = b.get("/agents/boxed")
	if !strings.Contains(body, "Studio repaired agent") || !strings.Contains(body, `[&#34;*&#34;]: every tool`) {
		t.Errorf("agent page:\n%s", body)
	}
	if e.fileOf("talon.json") != cfg {
		t.Error("the repair ran twice")
	}
}

// A role whose config write fails leaves nothing written: the approvals
// written before it are put back.
func TestRoleAllOrNothing(t *testing.T) {
	e := newEnv(t, `{"agents":{"list":[{"id":"main"},{"id":"worker"}]}}`)
	q := &req{w: httptest.NewRecorder(), r: httptest.NewRequest(http.MethodPost, "/agents/worker/role", nil), sess: &session{admin: true}}
	role, _ := roleByID("autonomous")
	plan, err := e.s.planRole(q, "worker", role)
	if err != nil {
		t.Fatal(err)
	}
	cfg, before := e.fileOf("talon.json"), approvalsOf(t, e)
	// Someone else changes the config between the read and the write.
	plan.configHash = strings.Repeat("0", 64)
	_, err = e.s.applyRole(q, plan)
	if err == nil || !strings.Contains(err.Error(), "Nothing changed") || !strings.Contains(err.Error(), "config") {
		t.Fatalf("applyRole: %v", err)
	}
	// The approvals were written (the file exists now) and put back.
	if e.fileOf("exec-approvals.json") == "" {
		t.Fatal("the approvals were never written, so nothing was put back")
	}
	if after := approvalsOf(t, e); after != before {
		t.Errorf("approvals for worker %q, were %q", after, before)
	}
	if e.fileOf("talon.json") != cfg {
		t.Error("the config changed")
	}
}

// approvalsOf is worker's entry in the approvals file, as JSON.
func approvalsOf(t *testing.T, e *env) string {
	t.Helper()
	raw := e.fileOf("exec-approvals.json")
	if raw == "" {
		return ""
	}
	var f struct {
		Agents map[string]json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		t.Fatal(err)
	}
	return string(f.Agents["worker"])
}

// Guessing tokens is slowed: after authlimit.PerAddress failures in a
// minute an address is refused, even with the right token, until the
// window moves; after authlimit.PerScope failures on one tenant's token,
// from any addresses, so is every sign-in to that tenant.
func TestSignInThrottle(t *testing.T) {
	e := newEnv(t, "")
	now := time.Now()
	e.s.limit.Now = func() time.Time { return now }
	b := &browser{e: e, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	for i := range authlimit.PerAddress {
		if res, _ := b.postRaw("/signin", url.Values{"token": {"guess"}}, ""); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, res.StatusCode)
		}
	}
	res, body := b.postRaw("/signin", url.Values{"token": {adminToken}}, "")
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "60" || !strings.Contains(body, "Too many failed sign-ins") {
		t.Fatalf("after %d failures: %d %q\n%s", authlimit.PerAddress, res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	// The window is the rule, not the count alone.
	now = now.Add(authlimit.Window)
	if res, _ := b.postRaw("/signin", url.Values{"token": {adminToken}}, ""); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a minute later with the admin token: %d, want 303", res.StatusCode)
	}
	// A tenant guessed at from many addresses: its own token waits too,
	// from an address that never failed; another tenant does not.
	for i := range authlimit.PerScope {
		e.s.limit.Fail("192.0.2."+strconv.Itoa(i), authlimit.Tenant("acme"))
	}
	res, body = b.postRaw("/signin", url.Values{"token": {acmeToken}, "tenant": {"acme"}}, "")
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("acme after %d failures elsewhere: %d\n%s", authlimit.PerScope, res.StatusCode, body)
	}
	if res, _ := b.postRaw("/signin", url.Values{"token": {adminToken}}, ""); res.StatusCode != http.StatusSeeOther {
		t.Errorf("the admin token while acme is throttled: %d, want 303", res.StatusCode)
	}
}
