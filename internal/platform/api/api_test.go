package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/platform"
	"talon/internal/store"
	"talon/internal/store/catalog"
)

func TestRoutesHappyPath(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok})

	var lib struct {
		Library    []catalog.Entry `json:"library"`
		LoadErrors []string        `json:"loadErrors"`
	}
	e.ok(t, 200, "GET", "/api/library", "", &lib)
	if len(lib.Library) != 2 || lib.Library[0].Slug != "helper" || lib.Library[1].Slug != "memo" || len(lib.LoadErrors) != 0 {
		t.Fatalf("library = %+v", lib)
	}

	resp, data := e.do(t, "POST", "/api/tenants", adminTok, "", `{"id":"acme","name":"Acme Inc","env":{"FOO":"bar"}}`)
	if resp.StatusCode != 201 || resp.Header.Get("Location") != "/api/tenants/acme" {
		t.Fatalf("create: %d %v %s", resp.StatusCode, resp.Header, data)
	}
	if !strings.Contains(string(data), `"name":"Acme Inc"`) {
		t.Fatalf("create body %s", data)
	}
	if tok, _ := e.tenantToken("acme"); tok == "" || !strings.Contains(string(data), `"token":"`+tok+`"`) {
		t.Fatalf("the response does not carry the tenant's config token: %s", data)
	}

	var ts struct{ Tenants []catalog.Tenant }
	e.ok(t, 200, "GET", "/api/tenants", "", &ts)
	if len(ts.Tenants) != 1 || ts.Tenants[0].ID != "acme" || ts.Tenants[0].Created.IsZero() {
		t.Fatalf("tenants = %+v", ts)
	}

	var in catalog.Installation
	e.ok(t, 201, "POST", "/api/tenants/acme/installations", `{"slug":"helper"}`, &in)
	if in.TenantID != "acme" || in.Slug != "helper" || in.Status != catalog.StatusOK {
		t.Fatalf("installation = %+v", in)
	}
	var ins struct{ Installations []catalog.Installation }
	e.ok(t, 200, "GET", "/api/tenants/acme/installations", "", &ins)
	if len(ins.Installations) != 1 || ins.Installations[0].Slug != "helper" {
		t.Fatalf("installations = %+v", ins)
	}

	var sync struct {
		DryRun  bool
		Results []platform.SyncResult
	}
	e.ok(t, 200, "POST", "/api/library/sync", "", &sync)
	if sync.DryRun || len(sync.Results) != 1 || sync.Results[0].Tenant != "acme" || sync.Results[0].Error != "" {
		t.Fatalf("sync all = %+v", sync)
	}

	var gone struct{ Tenant, Slug, Message string }
	e.ok(t, 200, "DELETE", "/api/tenants/acme/installations/helper", "", &gone)
	if gone.Tenant != "acme" || gone.Slug != "helper" || !strings.Contains(gone.Message, "memory") || !strings.Contains(gone.Message, "every file it wrote") {
		t.Fatalf("uninstall says %+v; it must say plainly that the memory and files are deleted", gone)
	}
	e.ok(t, 200, "GET", "/api/tenants/acme/installations", "", &ins)
	if len(ins.Installations) != 0 {
		t.Fatalf("installations after uninstall = %+v", ins)
	}
	e.ok(t, 204, "DELETE", "/api/tenants/acme", "", nil)
	e.ok(t, 200, "GET", "/api/tenants", "", &ts)
	if len(ts.Tenants) != 0 {
		t.Fatalf("tenants after delete = %+v", ts)
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok, MaxBody: 4096})
	e.createTenant(t, "acme")
	e.ok(t, 201, "POST", "/api/tenants/acme/installations", `{"slug":"helper"}`, nil)
	e.createTenant(t, "locked")
	patchTenantConfig(t, e, "locked", `{"plugins":{"enabled":false}}`)

	cases := []struct {
		name, method, path, ct, body string
		status                       int
		code, inMsg                  string
	}{
		{"bad tenant id", "POST", "/api/tenants", "", `{"id":"../x"}`, 400, "invalid_id", "id:"},
		{"missing tenant id", "POST", "/api/tenants", "", `{"name":"x"}`, 400, "invalid_id", "required"},
		{"wrong type", "POST", "/api/tenants", "", `{"id":7}`, 400, "invalid_id", "a string"},
		{"bad env name", "POST", "/api/tenants", "", `{"id":"x","env":{"1A":"v"}}`, 400, "invalid_env", `"1A"`},
		{"two-line name", "POST", "/api/tenants", "", `{"id":"x","name":"a\nb"}`, 400, "invalid_name", "one line"},
		{"unknown field", "POST", "/api/tenants", "", `{"id":"x","colour":"red"}`, 400, "unknown_field", `"colour"`},
		{"not json", "POST", "/api/tenants", "", `{"id":`, 400, "invalid_body", "JSON"},
		{"empty body", "POST", "/api/tenants", "application/json", ``, 400, "invalid_body", "empty"},
		{"trailing data", "POST", "/api/tenants", "", `{"id":"x"} {}`, 400, "invalid_body", "nothing after"},
		{"missing slug", "POST", "/api/tenants/acme/installations", "", `{}`, 400, "invalid_slug", "required"},
		{"bad dryRun", "POST", "/api/library/sync/helper?dryRun=maybe", "", ``, 400, "invalid_dryRun", "maybe"},
		{"bad chat user", "POST", "/api/tenants/acme/employees/helper/chat", "", `{"user":"a b","message":"hi"}`, 400, "invalid_user", "no spaces"},
		{"empty chat message", "POST", "/api/tenants/acme/employees/helper/chat", "", `{"user":"u1","message":" "}`, 400, "invalid_message", "required"},
		{"unknown tenant", "GET", "/api/tenants/nobody/installations", "", ``, 404, "no_tenant", "nobody"},
		{"install for unknown tenant", "POST", "/api/tenants/nobody/installations", "", `{"slug":"helper"}`, 404, "no_tenant", "nobody"},
		{"unknown template", "POST", "/api/tenants/acme/installations", "", `{"slug":"ghost"}`, 404, "no_template", "ghost"},
		{"delete unknown tenant", "DELETE", "/api/tenants/nobody", "", ``, 404, "no_tenant", "nobody"},
		{"uninstall not installed", "DELETE", "/api/tenants/acme/installations/memo", "", ``, 404, "not_installed", "memo"},
		{"sync unknown template", "POST", "/api/library/sync/ghost", "", ``, 404, "no_template", "ghost"},
		{"chat not installed", "POST", "/api/tenants/acme/employees/memo/chat", "", `{"user":"u1","message":"hi"}`, 404, "not_installed", "memo"},
		{"unknown route", "GET", "/api/nothing", "", ``, 404, "no_route", "/api/nothing"},
		{"wrong method", "PUT", "/api/tenants", "", `{}`, 405, "method_not_allowed", "GET or POST"},
		{"tenant exists", "POST", "/api/tenants", "", `{"id":"acme"}`, 409, "exists", "acme"},
		{"installed twice", "POST", "/api/tenants/acme/installations", "", `{"slug":"helper"}`, 409, "installed", "helper"},
		{"body too large", "POST", "/api/tenants", "", `{"id":"x","name":"` + strings.Repeat("a", 5000) + `"}`, 413, "body_too_large", "4096"},
		{"not json content type", "POST", "/api/tenants", "text/plain", `{"id":"x"}`, 415, "unsupported_media_type", "text/plain"},
		{"required plugin off", "POST", "/api/tenants/locked/installations", "", `{"slug":"memo"}`, 422, "plugin_off", "plugins.enabled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, data := e.do(t, c.method, c.path, adminTok, c.ct, c.body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, data)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			code, msg := errorCode(t, data)
			if code != c.code || !strings.Contains(msg, c.inMsg) {
				t.Fatalf("error %s %q, want %s containing %q", code, msg, c.code, c.inMsg)
			}
			if c.status == 422 && !strings.Contains(string(data), `"fix":"set plugins.enabled to true`) {
				t.Fatalf("422 without its fix: %s", data)
			}
		})
	}
	// The refused requests changed nothing.
	var ts struct{ Tenants []catalog.Tenant }
	e.ok(t, 200, "GET", "/api/tenants", "", &ts)
	if len(ts.Tenants) != 2 {
		t.Fatalf("tenants = %+v", ts.Tenants)
	}
}

// TestUnavailable covers the 503s: no admin token configured (never
// open), and chat on a platform without a gateway connection.
func TestUnavailable(t *testing.T) {
	cat, err := store.OpenCatalog(filepath.Join(t.TempDir(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	p, err := platform.New(context.Background(), platform.Options{StateDir: t.TempDir(), Templates: "testdata/templates", Store: cat})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		o            Options
		method, path string
		token, body  string
		code, inMsg  string
	}{
		{"no admin token", Options{AdminTokenHint: "set TALON_ADMIN_TOKEN"}, "GET", "/api/tenants", "", "", "admin_token_unset", "set TALON_ADMIN_TOKEN"},
		{"no admin token, a token sent", Options{}, "GET", "/api/library", "anything", "", "admin_token_unset", "configure one"},
		{"empty token never matches", Options{}, "POST", "/api/library/sync", " ", "", "admin_token_unset", "refuses"},
		{"no chat", Options{AdminToken: adminTok}, "POST", "/api/tenants/acme/employees/helper/chat", adminTok, `{"user":"u","message":"hi"}`, "no_chat", "no gateway connection"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(New(p, c.o))
			defer srv.Close()
			e := &env{url: srv.URL}
			resp, data := e.do(t, c.method, c.path, c.token, "", c.body)
			if resp.StatusCode != 503 {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			if code, msg := errorCode(t, data); code != c.code || !strings.Contains(msg, c.inMsg) {
				t.Fatalf("error %s %q", code, msg)
			}
		})
	}
}

func TestAuthMatrix(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok})
	acme, beta := e.createTenant(t, "acme"), e.createTenant(t, "beta")
	e.ok(t, 201, "POST", "/api/tenants/acme/installations", `{"slug":"helper"}`, nil)
	e.ok(t, 201, "POST", "/api/tenants/beta/installations", `{"slug":"helper"}`, nil)
	chat := `{"user":"u1","message":"hello"}`
	cases := []struct {
		name, method, path, auth, body string
		status                         int
	}{
		{"admin route, no token", "GET", "/api/tenants", "", "", 401},
		{"admin route, basic auth", "GET", "/api/tenants", "Basic " + adminTok, "", 401},
		{"admin route, wrong token", "GET", "/api/tenants", "Bearer nope", "", 403},
		{"admin route, tenant token", "GET", "/api/tenants", "Bearer " + acme, "", 403},
		{"admin route, admin token", "GET", "/api/tenants", "Bearer " + adminTok, "", 200},
		{"openapi, no token", "GET", "/api/openapi.json", "", "", 200},
		{"chat, no token", "POST", "/api/tenants/acme/employees/helper/chat", "", chat, 401},
		{"chat, wrong token", "POST", "/api/tenants/acme/employees/helper/chat", "Bearer nope", chat, 403},
		{"chat, other tenant's token", "POST", "/api/tenants/acme/employees/helper/chat", "Bearer " + beta, chat, 403},
		{"chat, token of unknown tenant's route", "POST", "/api/tenants/ghost/employees/helper/chat", "Bearer " + acme, chat, 403},
		{"chat, own tenant token", "POST", "/api/tenants/acme/employees/helper/chat", "Bearer " + acme, chat, 200},
		{"chat, other tenant with its own token", "POST", "/api/tenants/beta/employees/helper/chat", "bearer " + beta, chat, 200},
		{"chat, admin token", "POST", "/api/tenants/acme/employees/helper/chat", "Bearer " + adminTok, chat, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, e.url+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
			if c.status == 200 && c.body != "" {
				evs := readSSE(t, resp)
				if last := evs[len(evs)-1]; last.name != "final" {
					t.Fatalf("chat ended with %+v", last)
				}
			}
		})
	}
}
