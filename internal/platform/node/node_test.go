package node

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/authlimit"
	"talon/internal/gateway/gatewaytest"
	"talon/internal/platform/install"
	"talon/internal/usage"
)

// TestAuth: every node route takes the node token and nothing else — not
// a tenant's gateway token, not the root's — and the node token opens no
// tenant: it is not accepted as a tenant's token or the default
// tenant's. Wrong tokens are throttled by address.
func TestAuth(t *testing.T) {
	n := startNode(t, "", 0)
	ctx := context.Background()
	tn, err := n.client.CreateTenant(ctx, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, auth string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, n.url+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, path, auth string
		hdr              map[string]string
		want             int
	}{
		{"node token", "/node/health", "Bearer " + testToken, nil, http.StatusOK},
		{"node token, scheme in lower case", "/node/tenants/acme/token", "bearer " + testToken, nil, http.StatusOK},
		{"no token", "/node/health", "", nil, http.StatusUnauthorized},
		{"a tenant's gateway token", "/node/tenants/acme/token", "Bearer " + tn.Token, nil, http.StatusUnauthorized},
		{"the root tenant's token", "/node/health", "Bearer root-token-0123456789", nil, http.StatusUnauthorized},
		{"the node token with a suffix", "/node/health", "Bearer " + testToken + "x", nil, http.StatusUnauthorized},
		{"a prefix of the node token", "/node/health", "Bearer " + testToken[:10], nil, http.StatusUnauthorized},
		{"basic auth", "/node/health", "Basic " + testToken, nil, http.StatusUnauthorized},
		{"unknown route, authorized", "/node/nope", "Bearer " + testToken, nil, http.StatusNotFound},
		{"node token as tenant acme's", "/v1/models", "Bearer " + testToken, map[string]string{"X-Tenant-ID": "acme"}, http.StatusUnauthorized},
		{"node token as the default tenant's", "/v1/models", "Bearer " + testToken, nil, http.StatusUnauthorized},
		{"acme's own token on its gateway", "/v1/models", "Bearer " + tn.Token, map[string]string{"X-Tenant-ID": "acme"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, body := get(tc.path, tc.auth, tc.hdr); got != tc.want {
				t.Fatalf("GET %s: %d %s, want %d", tc.path, got, body, tc.want)
			}
		})
	}
	t.Run("throttled after repeated wrong tokens", func(t *testing.T) {
		// A clock that stands still: the failures fall in one window
		// however slowly the test runs.
		limit := authlimit.NewGuard()
		now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		limit.Now = func() time.Time { return now }
		m := startNodeGuard(t, "", 0, limit)
		for range authlimit.PerAddress {
			if got, _ := get2(t, m.url+"/node/health", "Bearer wrong-token-0123456789"); got != http.StatusUnauthorized {
				t.Fatalf("wrong token: %d", got)
			}
		}
		got, retry := get2(t, m.url+"/node/health", "Bearer "+testToken)
		if got != http.StatusTooManyRequests || retry == "" {
			t.Fatalf("after %d failures the right token got %d (Retry-After %q), want 429 with Retry-After", authlimit.PerAddress, got, retry)
		}
		_, err := m.client.Health(ctx)
		if err == nil || errors.Is(err, ErrUnreachable) {
			t.Fatalf("Health while throttled: %v, want the node's refusal", err)
		}
	})
	t.Run("client with a wrong token", func(t *testing.T) {
		_, err := New(n.url, "wrong-token-0123456789").Health(ctx)
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("Health: %v, want ErrUnauthorized", err)
		}
	})
}

func get2(t *testing.T, url, auth string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestNoToken: a gateway without TALON_NODE_TOKEN has no node API, and a
// handler refuses a token short enough to guess.
func TestNoToken(t *testing.T) {
	if _, err := NewHandler(Options{StateDir: t.TempDir(), Token: "short"}); err == nil {
		t.Fatal("a 5-character node token was accepted")
	}
	if _, err := NewHandler(Options{StateDir: t.TempDir()}); err == nil {
		t.Fatal("an empty node token was accepted")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), `{gateway:{auth:{token:"root-token-0123456789"}}}`)
	n := startPlainGateway(t, dir)
	for _, p := range []string{"/node/health", "/node/tenants/acme/token", "/node/"} {
		if got, _ := get2(t, n+p, "Bearer "+testToken); got != http.StatusNotFound {
			t.Fatalf("GET %s without a node API: %d, want 404", p, got)
		}
	}
	if _, err := New(n, testToken).Health(context.Background()); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Health of a gateway without a node API: %v, want ErrUnreachable", err)
	}
}

// TestTenantLifecycle: the client against the handler on a real gateway,
// through every tenant operation, errors keeping their sentinels.
func TestTenantLifecycle(t *testing.T) {
	n := startNode(t, "", 0)
	ctx := context.Background()
	c := n.client
	tn, err := c.CreateTenant(ctx, "acme", map[string]string{"API_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	if tn.ID != "acme" || len(tn.Token) != 64 || tn.Dir != filepath.Join(n.dir, "tenants", "acme") {
		t.Fatalf("created %+v", tn)
	}
	tok, err := c.Token(ctx, "acme")
	if err != nil || tok != tn.Token {
		t.Fatalf("Token: %q, %v; want the token CreateTenant returned", tok, err)
	}
	h, err := c.Health(ctx)
	if err != nil || h.Tenants != 1 || h.Version != "test" || h.OpenFiles == 0 || h.MaxOpenFiles < h.OpenFiles {
		t.Fatalf("Health: %+v, %v", h, err)
	}

	v1t, v2t := loadTemplateFiles(t, v1), loadTemplateFiles(t, v2)
	res, err := c.Install(ctx, "acme", v1t)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(install.Shipped(v1t), res.Files); d != "" {
		t.Fatalf("installed files (-want +got):\n%s", d)
	}
	if got := readFile(t, filepath.Join(tn.Dir, "agents", "demo", "skills", "s", "x.sh")); got != v1["skills/s/x.sh"] {
		t.Fatalf("installed x.sh: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(tn.Dir, "agents", "demo", "skills", "s", "x.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Fatalf("x.sh lost its execute bit on the way: %v %v", fi.Mode(), err)
	}
	if _, err := c.Install(ctx, "acme", v1t); !errors.Is(err, install.ErrInstalled) || !strings.Contains(err.Error(), "already installed") {
		t.Fatalf("second install: %v, want ErrInstalled", err)
	}

	plan, err := c.Plan(ctx, "acme", v2t, res.Files)
	if err != nil {
		t.Fatal(err)
	}
	local, err := install.Plan(n.dir, "acme", v2t, res.Files)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(planText(local), planText(plan)); d != "" {
		t.Fatalf("remote plan differs from the local one (-local +remote):\n%s", d)
	}
	if len(plan.Config) == 0 || len(plan.Removed) == 0 {
		t.Fatalf("plan of v2 has no config change or removal: %+v", plan)
	}

	up, err := c.Update(ctx, "acme", v2t, res.Files)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(install.Shipped(v2t), up.Files); d != "" {
		t.Fatalf("updated files (-want +got):\n%s", d)
	}
	if files, ok, err := c.Pending(ctx, "acme", "demo"); err != nil || !ok || len(files) == 0 {
		t.Fatalf("Pending after an update: %v %v %v; want the record", files, ok, err)
	}
	if err := c.Settle(ctx, "acme", "demo", up.Files); err != nil {
		t.Fatal(err)
	}
	if files, ok, err := c.Pending(ctx, "acme", "demo"); err != nil || ok || files != nil {
		t.Fatalf("Pending after Settle: %v %v %v", files, ok, err)
	}
	if err := c.Recover(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Usage(ctx, "acme", usage.Query{Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), By: "day"})
	if err != nil || rep.Totals.Calls != 0 || rep.By != "day" || !rep.Since.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("Usage: %+v, %v", rep, err)
	}
	if err := c.Uninstall(ctx, "acme", "demo"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tn.Dir, "agents", "demo")); !os.IsNotExist(err) {
		t.Fatalf("workspace after Uninstall: %v", err)
	}
	if err := c.DeleteTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tn.Dir); !os.IsNotExist(err) {
		t.Fatalf("tenant dir after DeleteTenant: %v", err)
	}

	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"token of a deleted tenant", func() error { _, err := c.Token(ctx, "acme"); return err }, install.ErrNoTenant},
		{"usage of a deleted tenant", func() error { _, err := c.Usage(ctx, "acme", usage.Query{}); return err }, install.ErrNoTenant},
		{"install for a deleted tenant", func() error { _, err := c.Install(ctx, "acme", v1t); return err }, install.ErrNoTenant},
		{"delete a deleted tenant", func() error { return c.DeleteTenant(ctx, "acme") }, install.ErrNoTenant},
		{"create an existing tenant", func() error {
			if _, err := c.CreateTenant(ctx, "beta", nil); err != nil {
				return err
			}
			_, err := c.CreateTenant(ctx, "beta", nil)
			return err
		}, install.ErrExists},
		{"create with a bad id", func() error { _, err := c.CreateTenant(ctx, "../x", nil); return err }, ErrInvalid},
		{"create with a bad env name", func() error { _, err := c.CreateTenant(ctx, "gamma", map[string]string{"A B": "x"}); return err }, ErrInvalid},
		{"a bad tenant id in a path", func() error { _, err := c.Token(ctx, ".hidden"); return err }, ErrInvalid},
		{"a bad slug", func() error { return c.Uninstall(ctx, "beta", "Not A Slug") }, ErrInvalid},
		{"uninstall an employee not installed", func() error { return c.Uninstall(ctx, "beta", "demo") }, install.ErrNotInstalled},
		{"update an employee not installed", func() error { _, err := c.Update(ctx, "beta", v2t, nil); return err }, install.ErrNotInstalled},
		{"usage by a bad grouping", func() error { _, err := c.Usage(ctx, "beta", usage.Query{By: "week"}); return err }, ErrInvalid},
		{"export of a tenant not drained", func() error { return c.Export(ctx, "beta", io.Discard) }, ErrNotDrained},
		{"a node that is not there", func() error { _, err := New("http://127.0.0.1:1", testToken).Health(ctx); return err }, ErrUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("a malformed URL", func(t *testing.T) {
		if _, err := New("ftp://x", testToken).Health(ctx); err == nil || !strings.Contains(err.Error(), "http(s)://") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestPluginError: a template whose plugin the tenant keeps off is
// refused with the *install.PluginError, fix and all, across the wire.
func TestPluginError(t *testing.T) {
	n := startNode(t, "", 0)
	ctx := context.Background()
	tn, err := n.client.CreateTenant(ctx, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, tn.ConfigPath, `{gateway:{auth:{mode:"token",token:"`+tn.Token+`"}},plugins:{deny:["api-tools"]}}`)
	files := map[string]string{}
	for k, v := range v1 {
		files[k] = v
	}
	files["template.yaml"] = "type: demo\nname: Demo\ndescription: A demo.\nrequiredTools: {alsoAllow: [post_note], plugins: [api-tools]}\n"
	files["api-tools/post_note.yaml"] = "name: post_note\ndescription: Post a note.\nparameters:\n  text: {type: string, description: The note., required: true}\nrequest:\n  method: POST\n  url: \"https://api.example.com/notes\"\n  body: {type: json, content: {text: \"{{params.text}}\"}}\nallowed_hosts: [api.example.com]\n"
	tp := loadTemplateFiles(t, files)
	_, err = n.client.Install(ctx, "acme", tp)
	var pe *install.PluginError
	if !errors.As(err, &pe) || pe.Plugin != "api-tools" || pe.Key != "plugins.deny" || !strings.Contains(pe.Fix, "plugins.deny") {
		t.Fatalf("Install: %v (%+v), want the plugin error", err, pe)
	}
	var ne *Error
	if !errors.As(err, &ne) || ne.Status != http.StatusUnprocessableEntity || ne.Code != "plugin_off" {
		t.Fatalf("Install: %#v", err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// planText is a plan as comparable text: its config values by their JSON.
func planText(c install.Changes) []string {
	out := []string{c.Tenant, c.Slug}
	out = append(out, c.Added...)
	out = append(out, "|")
	out = append(out, c.Changed...)
	out = append(out, "|")
	out = append(out, c.Removed...)
	out = append(out, "|")
	out = append(out, c.Kept...)
	for _, k := range c.Conflicts {
		out = append(out, k.Path)
	}
	for _, cc := range c.Config {
		out = append(out, cc.String())
	}
	return out
}

// startPlainGateway serves a gateway as talon gateway does without
// TALON_NODE_TOKEN; it returns its http:// URL.
func startPlainGateway(t *testing.T, dir string) string {
	return "http" + strings.TrimPrefix(gatewaytest.Start(t, dir), "ws")
}
