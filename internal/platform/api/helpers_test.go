package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/config"
	"talon/internal/gateway/gatewaytest"
	"talon/internal/platform"
	"talon/internal/platform/relay"
	"talon/internal/store"
	"talon/internal/tenantid"
	"talon/protocol/client"
)

const adminTok = "admin-secret-0123456789"

// env is a platform over a SQLite catalog, an in-process gateway on the
// same state dir for chat, and the API on a loopback server.
type env struct {
	url, state, templates string
	p                     *platform.Platform
	cat                   *store.Catalog
}

func newEnv(t *testing.T, o Options) *env {
	t.Helper()
	e := &env{state: t.TempDir(), templates: filepath.Join(t.TempDir(), "templates")}
	if err := os.CopyFS(e.templates, os.DirFS("testdata/templates")); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	wsURL := gatewaytest.Start(t, e.state)
	tokens := e.tenantToken
	rl := relay.New(func(ctx context.Context, tenant string) (*client.Client, error) {
		tok, err := tokens(tenant)
		if err != nil {
			return nil, err
		}
		return client.Dial(ctx, wsURL, client.Options{Token: tok, Tenant: tenant, ClientID: "talon-platform", Mode: "backend"})
	})
	t.Cleanup(rl.Close)
	cat, err := store.OpenCatalog(filepath.Join(t.TempDir(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	e.cat = cat
	e.p, err = platform.New(context.Background(), platform.Options{StateDir: e.state, Templates: e.templates, Store: cat, Relay: rl, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if o.TenantToken == nil {
		o.TenantToken = e.tenantToken
	}
	srv := httptest.NewServer(New(e.p, o))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// tenantToken reads the tenant's gateway token from its config, as
// talon serve does.
func (e *env) tenantToken(id string) (string, error) {
	if !tenantid.Valid(id) {
		return "", os.ErrNotExist
	}
	f, err := config.Load(filepath.Join(e.state, "tenants", id, config.Filename))
	if err != nil {
		return "", err
	}
	return f.Config.Gateway.Auth.Token, nil
}

// do sends a request; a non-empty body goes as application/json unless
// ct says otherwise.
func (e *env) do(t *testing.T, method, path, token, ct, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
		if ct == "" {
			ct = "application/json"
		}
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// ok is do for a call that must answer want; it decodes the JSON body
// into out when out is not nil.
func (e *env) ok(t *testing.T, want int, method, path, body string, out any) {
	t.Helper()
	resp, data := e.do(t, method, path, adminTok, "", body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// createTenant creates a tenant through the API and returns its token.
func (e *env) createTenant(t *testing.T, id string) string {
	t.Helper()
	var out struct {
		Token string `json:"token"`
	}
	e.ok(t, http.StatusCreated, "POST", "/api/tenants", `{"id":"`+id+`","name":"`+id+` Inc"}`, &out)
	return out.Token
}

// errorCode decodes an error body.
func errorCode(t *testing.T, data []byte) (code, msg string) {
	t.Helper()
	var b errorBody
	if err := json.Unmarshal(data, &b); err != nil || b.Error.Code == "" {
		t.Fatalf("not an error body (%v): %s", err, data)
	}
	return b.Error.Code, b.Error.Message
}
