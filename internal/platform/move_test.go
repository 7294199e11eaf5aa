package platform

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"talon/internal/gateway"
	"talon/internal/platform/install"
	"talon/internal/platform/node"
	_ "talon/internal/standard" // the modules talon serve ships
	"talon/internal/tools/core"
	"talon/internal/usage"
)

const nodeToken = "node-token-0123456789abcdef"

// gatewayNode is a real gateway on loopback with the node API mounted,
// as `talon gateway` runs it with TALON_NODE_TOKEN set.
type gatewayNode struct {
	dir string
	srv *gateway.Server
	c   *node.Client
}

func startGatewayNode(t *testing.T) *gatewayNode {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "talon.json"), []byte(`{gateway:{auth:{token:"root-token-0123456789"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := core.Registry()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := node.NewHandler(node.Options{StateDir: dir, Token: nodeToken, Version: "test", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.New(gateway.Options{StateDir: dir, Addr: "127.0.0.1:0", Tools: reg, Node: h,
		Env: func(string) string { return "" }, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h.Attach(srv)
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-errc; err != nil {
			t.Error(err)
		}
	})
	return &gatewayNode{dir: dir, srv: srv, c: node.New("http://"+ln.Addr().String(), nodeToken)}
}

// TestMove moves a tenant between two real gateways through their node
// API; a move the target refuses leaves the tenant placed, and serving,
// on its source.
func TestMove(t *testing.T) {
	ctx := context.Background()
	a, b := startGatewayNode(t), startGatewayNode(t)
	r := newMultiRig(t, map[string]Node{"a": a.c, "b": b.c})
	r.p.CheckNodes(ctx)
	gws := map[string]*gatewayNode{"a": a, "b": b}
	for _, id := range []string{"t1", "t2"} {
		if _, err := r.p.CreateTenant(ctx, id, "", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := r.p.Install(ctx, id, "helper"); err != nil {
			t.Fatal(err)
		}
	}
	from, _ := r.st.PlacementOf(ctx, "t1")
	to := map[string]string{"a": "b", "b": "a"}[from]
	src, dst := gws[from], gws[to]
	tok, err := r.p.Token(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	memory := filepath.Join("tenants", "t1", "agents", "helper", "memory", "note.md")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(src.dir, memory)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src.dir, memory), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("refused by the target", func(t *testing.T) {
		// The target already has a tenant t1 (another platform's, say):
		// its Import refuses, and the move is undone.
		if _, err := dst.c.CreateTenant(ctx, "t1", nil); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := dst.c.DeleteTenant(ctx, "t1"); err != nil {
				t.Fatal(err)
			}
		}()
		if _, err := r.p.Move(ctx, "t1", to); !errors.Is(err, install.ErrExists) {
			t.Fatalf("move onto an existing tenant: %v, want ErrExists", err)
		}
		if n, _ := r.st.PlacementOf(ctx, "t1"); n != from {
			t.Errorf("placed on %s after a refused move, want %s", n, from)
		}
		if src.srv.Draining("t1") {
			t.Error("the tenant is still drained on its source after a refused move")
		}
		if _, err := r.p.Usage(ctx, "t1", usage.Query{}); err != nil {
			t.Errorf("usage after a refused move: %v", err)
		}
	})

	t.Run("moved", func(t *testing.T) {
		// A hostile tenant's link to its node's root config (the root
		// token) does not travel: neither the link nor what it points at.
		leak := filepath.Join("tenants", "t1", "agents", "helper", "leak.json")
		if err := os.Symlink(filepath.Join(src.dir, "talon.json"), filepath.Join(src.dir, leak)); err != nil {
			t.Fatal(err)
		}
		res, err := r.p.Move(ctx, "t1", to)
		if err != nil || res.From != from || res.To != to || res.Warning != "" {
			t.Fatalf("move: %+v, %v", res, err)
		}
		if n, _ := r.st.PlacementOf(ctx, "t1"); n != to {
			t.Errorf("placed on %s after the move, want %s", n, to)
		}
		if b, err := os.ReadFile(filepath.Join(dst.dir, memory)); err != nil || string(b) != "kept" {
			t.Errorf("memory on the target: %q, %v", b, err)
		}
		if _, err := os.Lstat(filepath.Join(dst.dir, leak)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the tenant's link to its old node's config came along: %v", err)
		}
		if _, err := os.Stat(filepath.Join(src.dir, "tenants", "t1")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the old copy on the source: %v", err)
		}
		if got, err := r.p.Token(ctx, "t1"); err != nil || got != tok {
			t.Errorf("token after the move: %q, %v; want the same", got, err)
		}
		if _, err := r.p.Install(ctx, "t1", "helper"); !errors.Is(err, ErrInstalled) {
			t.Errorf("install after the move: %v, want ErrInstalled (the catalog kept it)", err)
		}
		res2, err := r.p.Sync(ctx, "helper", true)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res2 {
			if s.Error != "" {
				t.Errorf("sync of %s after the move: %s", s.Tenant, s.Error)
			}
		}
	})
}
