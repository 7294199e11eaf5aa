package studio

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"talon/internal/config"
	"talon/internal/gateway/gatewaytest"
	"talon/internal/platform"
	"talon/internal/platform/relay"
	"talon/protocol/client"
)

const (
	adminToken = "studio-admin-token-0123"
	acmeToken  = "acme-gateway-token"
	defaultTok = "default-gateway-token"
)

// env is a Studio in front of a real in-process gateway (state dir with
// a default tenant and tenant acme) and a real platform (SQLite catalog,
// a copy of the repository's templates, which tests may edit).
type env struct {
	t         *testing.T
	state     string
	templates string
	s         *Server
	srv       *httptest.Server
	p         *platform.Platform
}

func newEnv(t *testing.T, defaultConfig string) *env {
	t.Helper()
	return newEnvOver(t, defaultConfig, nil)
}

// newEnvOver is newEnv with the platform over the nodes nodes returns
// for the gateway's state dir; nil nodes is the one local node.
func newEnvOver(t *testing.T, defaultConfig string, nodes func(state string) map[string]platform.Node) *env {
	t.Helper()
	state := t.TempDir()
	if defaultConfig == "" {
		defaultConfig = `{}`
	}
	write(t, filepath.Join(state, "talon.json"), defaultConfig)
	write(t, filepath.Join(state, "tenants", "acme", "talon.json"), `{"gateway":{"auth":{"token":"`+acmeToken+`"}}}`)
	url := gatewaytest.Start(t, state)
	// The default tenant's token is Studio's to check (its config has
	// none: the gateway on loopback needs none); a tenant's is in its
	// config, as the platform writes it.
	tokenOf := func(tenant string) (string, error) {
		if tenant == "" {
			return defaultTok, nil
		}
		f, err := config.Load(filepath.Join(state, "tenants", tenant, "talon.json"))
		if err != nil {
			return "", err
		}
		return f.Config.Gateway.Auth.Token, nil
	}
	rl := relay.New(func(ctx context.Context, tenant string) (*client.Client, error) {
		tok, err := tokenOf(tenant)
		if err != nil {
			return nil, err
		}
		if tenant == "" {
			tok = ""
		}
		return client.Dial(ctx, url, client.Options{Token: tok, Tenant: tenant, ClientID: "talon-studio", Mode: "ui"})
	})
	t.Cleanup(rl.Close)
	ctx := context.Background()
	st, err := platform.OpenStore(ctx, state, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	templates := filepath.Join(t.TempDir(), "templates")
	if err := os.CopyFS(templates, os.DirFS(filepath.Join("..", "..", "templates"))); err != nil {
		t.Fatal(err)
	}
	po := platform.Options{StateDir: state, Templates: templates, Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if nodes != nil {
		po.Nodes = nodes(state)
	}
	pl, err := platform.New(ctx, po)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Relay: rl, TenantToken: tokenOf, AdminToken: adminToken,
		Platform: func() (*platform.Platform, error) { return pl, nil }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &env{t: t, state: state, templates: templates, s: s, srv: srv, p: pl}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// browser is a signed-in person: a cookie jar and the session's CSRF
// token.
type browser struct {
	e    *env
	c    *http.Client
	csrf string
}

var csrfRE = regexp.MustCompile(`data-csrf="([0-9a-f]{64})"`)

// signIn signs in with token (and tenant) and reads the CSRF token off
// the first page.
func (e *env) signIn(token, tenant string) *browser {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	res, _ := b.postRaw("/signin", url.Values{"token": {token}, "tenant": {tenant}}, "")
	if res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("sign-in with %q: status %d", tenant, res.StatusCode)
	}
	page := "/agents"
	if tenant != "" {
		page = "/t/" + tenant + "/agents"
	}
	_, body := b.get(page)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no CSRF token on %s:\n%s", page, body)
	}
	b.csrf = m[1]
	return b
}

func (b *browser) get(path string) (*http.Response, string) {
	b.e.t.Helper()
	res, err := b.c.Get(b.e.srv.URL + path)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// post submits a form with the session's CSRF token.
func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	b.e.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf)
	return b.postRaw(path, form, "")
}

func (b *browser) postRaw(path string, form url.Values, hx string) (*http.Response, string) {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if hx != "" {
		req.Header.Set("HX-Request", "true")
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// fileOf reads a file of the state dir ("" when absent).
func (e *env) fileOf(rel string) string {
	b, err := os.ReadFile(filepath.Join(e.state, rel))
	if err != nil {
		return ""
	}
	return string(b)
}
