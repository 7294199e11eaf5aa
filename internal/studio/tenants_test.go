package studio

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The platform's forms: each bad input is refused on the page with
// nothing written; the good ones create, install, preview and apply a
// sync, and uninstall.
func TestTenantForms(t *testing.T) {
	e := newEnv(t, "")
	b := e.signIn(adminToken, "")
	tenants := func() []string {
		ents, _ := os.ReadDir(filepath.Join(e.state, "tenants"))
		var out []string
		for _, d := range ents {
			out = append(out, d.Name())
		}
		return out
	}
	before := strings.Join(tenants(), ",")
	for _, c := range []struct {
		name   string
		form   url.Values
		status int
		says   string
	}{
		{"no id", url.Values{"id": {""}}, http.StatusBadRequest, "Give the tenant an id"},
		{"bad id", url.Values{"id": {"../x"}}, http.StatusBadRequest, "is not a tenant id"},
		{"name on two lines", url.Values{"id": {"ok1"}, "name": {"a\nb"}}, http.StatusBadRequest, "one line"},
		{"existing", url.Values{"id": {"acme"}}, http.StatusConflict, "Creating the tenant"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, body := b.post("/tenants", c.form)
			if res.StatusCode != c.status || !strings.Contains(body, c.says) {
				t.Fatalf("%d, want %d with %q:\n%s", res.StatusCode, c.status, c.says, body)
			}
			if got := strings.Join(tenants(), ","); got != before {
				t.Fatalf("tenants %s, were %s", got, before)
			}
		})
	}
	res, body := b.post("/tenants", url.Values{"id": {"globex"}, "name": {"Globex"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `id="new-token"`) {
		t.Fatalf("create: %d\n%s", res.StatusCode, body)
	}

	for _, c := range []struct {
		name, path, slug string
		status           int
		says             string
	}{
		{"no employee", "/tenants/globex/install", "", http.StatusBadRequest, "Choose an employee"},
		{"unknown employee", "/tenants/globex/install", "astronaut", http.StatusNotFound, "no such template"},
		{"bad tenant", "/tenants/..%2fx/install", "coder", http.StatusBadRequest, "is not a tenant id"},
		{"not installed", "/tenants/globex/uninstall", "coder", http.StatusConflict, "not installed"},
		{"bad sync slug", "/library/no%20pe/sync", "", http.StatusBadRequest, "not an employee"},
		{"sync unknown", "/library/astronaut/sync", "", http.StatusNotFound, "no such template"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, body := b.post(c.path, url.Values{"slug": {c.slug}})
			if res.StatusCode != c.status || !strings.Contains(body, c.says) {
				t.Fatalf("%d, want %d with %q:\n%s", res.StatusCode, c.status, c.says, body)
			}
		})
	}
	if e.fileOf("tenants/globex/agents/coder/AGENTS.md") != "" {
		t.Fatal("a refused install wrote files")
	}

	res, body = b.post("/tenants/globex/install", url.Values{"slug": {"coder"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "coder is installed for tenant globex") ||
		!strings.Contains(body, `aria-describedby="uninstall-note-globex-coder">Uninstall</button>`) || !strings.Contains(body, "deletes its memory and every file it wrote") {
		t.Fatalf("install: %d\n%s", res.StatusCode, body)
	}
	if res, body := b.post("/tenants/globex/install", url.Values{"slug": {"coder"}}); res.StatusCode != http.StatusConflict || !strings.Contains(body, "already installed") {
		t.Errorf("second install: %d\n%s", res.StatusCode, body)
	}
	// The employee edits SOUL.md and keeps a USER.md: with the template
	// unchanged, a preview has nothing to do.
	ws := filepath.Join(e.state, "tenants", "globex", "agents", "coder")
	write(t, filepath.Join(ws, "SOUL.md"), "my own soul\n")
	write(t, filepath.Join(ws, "USER.md"), "the user\n")
	res, body = b.post("/library/coder/sync", url.Values{"dryRun": {"1"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "Up to date: nothing to change.") {
		t.Fatalf("dry run of an unchanged template: %d\n%s", res.StatusCode, body)
	}
	// The template changes on disk (no restart): the preview shows it and
	// that the employee's SOUL.md would be kept, writing nothing; applying
	// writes it and keeps the copy.
	write(t, filepath.Join(e.templates, "coder", "AGENTS.md"), "# Coder v2\n")
	write(t, filepath.Join(e.templates, "coder", "SOUL.md"), "Precise.\n")
	res, body = b.post("/library/coder/sync", url.Values{"dryRun": {"1"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "~ AGENTS.md") || !strings.Contains(body, "! kept your copy of SOUL.md as SOUL.md.local-") ||
		!strings.Contains(body, "would be kept beside the new versions") || !strings.Contains(body, "Apply this sync") {
		t.Fatalf("dry run: %d\n%s", res.StatusCode, body)
	}
	if e.fileOf("tenants/globex/agents/coder/SOUL.md") != "my own soul\n" || e.fileOf("tenants/globex/agents/coder/AGENTS.md") == "# Coder v2\n" {
		t.Fatal("the dry run wrote")
	}
	if res, body := b.post("/library/coder/sync", nil); res.StatusCode != http.StatusOK || !strings.Contains(body, "Synced coder") || !strings.Contains(body, "are kept beside the new versions") {
		t.Fatalf("sync: %d\n%s", res.StatusCode, body)
	}
	if e.fileOf("tenants/globex/agents/coder/AGENTS.md") != "# Coder v2\n" || e.fileOf("tenants/globex/agents/coder/SOUL.md") != "Precise.\n" ||
		e.fileOf("tenants/globex/agents/coder/USER.md") != "the user\n" {
		t.Error("the sync did not write the template's changes, or touched USER.md")
	}
	copies, _ := filepath.Glob(filepath.Join(ws, "SOUL.md.local-*"))
	if len(copies) != 1 {
		t.Fatalf("kept copies %v", copies)
	}
	if b, _ := os.ReadFile(copies[0]); string(b) != "my own soul\n" {
		t.Errorf("the kept copy holds %q", b)
	}
	// The tenant's people see its agents with the new token.
	if res, body := b.post("/tenants/globex/uninstall", url.Values{"slug": {"coder"}}); res.StatusCode != http.StatusOK ||
		!strings.Contains(body, "coder is uninstalled from tenant globex") || !strings.Contains(body, "memory") || !strings.Contains(body, "every file it wrote") {
		t.Fatalf("uninstall: %d\n%s", res.StatusCode, body)
	}
}
