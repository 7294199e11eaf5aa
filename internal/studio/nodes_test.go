package studio

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/platform"
)

// TestTenantsOnNodes: with the platform over several nodes, the tenants
// page names each tenant's node, and a tenant on a node that fails its
// health check says why it is unavailable instead of its usage.
func TestTenantsOnNodes(t *testing.T) {
	down := t.TempDir()
	e := newEnvOver(t, "", func(state string) map[string]platform.Node {
		return map[string]platform.Node{
			"a": &platform.Local{StateDir: state, Addr: "http://127.0.0.1:9"},
			"b": &platform.Local{StateDir: down, Addr: "http://127.0.0.1:9"},
		}
	})
	ctx := context.Background()
	// Two empty nodes: the first tenant goes on a, the second on b.
	for _, id := range []string{"first", "second"} {
		if _, err := e.p.CreateTenant(ctx, id, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	// Node b's disk breaks: its tenants directory cannot be listed.
	if err := os.RemoveAll(filepath.Join(down, "tenants")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(down, "tenants"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.p.CheckNodes(ctx)
	b := e.signIn(adminToken, "")
	_, body := b.get("/tenants")
	for _, want := range []string{
		`data-tenant="first"`, "on node a",
		`data-tenant="second"`, "on node b", "Unavailable: its health check failed",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("tenants page lacks %q:\n%s", want, body)
		}
	}
	second := body[strings.Index(body, `data-tenant="second"`):]
	if strings.Contains(second[:strings.Index(second, "</li>")], "Usage this month") {
		t.Error("the tenant on the down node shows usage it could not have read")
	}
}
