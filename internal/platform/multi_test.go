package platform

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"talon/internal/platform/install"
	"talon/internal/store"
	"talon/internal/store/catalog"
	"talon/internal/usage"
)

// multiRig is a platform over several nodes with a SQLite catalog.
type multiRig struct {
	p     *Platform
	st    catalog.Store
	tpl   string
	nodes map[string]Node
}

func newMultiRig(t *testing.T, nodes map[string]Node) *multiRig {
	t.Helper()
	st, err := store.OpenCatalog(filepath.Join(t.TempDir(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &multiRig{st: st, tpl: t.TempDir(), nodes: nodes}
	writeTemplate(t, r.tpl, "helper", helperV1())
	r.p, err = New(context.Background(), Options{Templates: r.tpl, Store: st, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func localNodes(t *testing.T, ids ...string) (map[string]Node, map[string]string) {
	nodes, dirs := map[string]Node{}, map[string]string{}
	for _, id := range ids {
		dirs[id] = t.TempDir()
		nodes[id] = &Local{StateDir: dirs[id], Addr: "http://127.0.0.1:9"}
	}
	return nodes, dirs
}

// TestPlacement: new tenants go on the least loaded node, their files on
// that node alone; statuses, installs and deletes follow the placement.
func TestPlacement(t *testing.T) {
	ctx := context.Background()
	nodes, dirs := localNodes(t, "a", "b")
	r := newMultiRig(t, nodes)
	got, err := r.st.Nodes(ctx)
	if err != nil || len(got) != 2 || got[0].ID != "a" || got[1].URL != "http://127.0.0.1:9" {
		t.Fatalf("registered nodes: %+v, %v", got, err)
	}
	on := map[string]string{}
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		if _, err := r.p.CreateTenant(ctx, id, id, nil); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		node, err := r.st.PlacementOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		on[id] = node
	}
	count := map[string]int{}
	for id, n := range on {
		count[n]++
		other := map[string]string{"a": "b", "b": "a"}[n]
		if _, err := os.Stat(filepath.Join(dirs[n], "tenants", id)); err != nil {
			t.Errorf("%s placed on %s has no directory there: %v", id, n, err)
		}
		if _, err := os.Stat(filepath.Join(dirs[other], "tenants", id)); err == nil {
			t.Errorf("%s placed on %s has a directory on %s too", id, n, other)
		}
	}
	if count["a"] != 2 || count["b"] != 2 {
		t.Fatalf("placements %v: want two per node", on)
	}
	if _, err := r.p.Install(ctx, "t1", "helper"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dirs[on["t1"]], "tenants", "t1", "agents", "helper", "AGENTS.md")); err != nil {
		t.Errorf("install landed elsewhere than t1's node: %v", err)
	}
	sts, err := r.p.TenantStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Node != on[s.ID] || !s.Available {
			t.Errorf("status %+v, want node %s and available", s, on[s.ID])
		}
	}
	tok, err := r.p.Token(ctx, "t2")
	if want, _ := install.Token(dirs[on["t2"]], "t2"); err != nil || tok != want || tok == "" {
		t.Errorf("token of t2: %q, %v; want its node's %q", tok, err, want)
	}
	if err := r.p.DeleteTenant(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dirs[on["t1"]], "tenants", "t1")); err == nil {
		t.Error("t1's directory outlived its delete")
	}
	if _, err := r.st.PlacementOf(ctx, "t1"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("t1's placement after its delete: %v", err)
	}
	// A node no longer in the platform's list leaves its tenants
	// unavailable, the others not.
	r2, err := New(ctx, Options{Templates: r.tpl, Store: r.st, Nodes: map[string]Node{"b": nodes["b"]}})
	if err != nil {
		t.Fatal(err)
	}
	sts, err = r2.TenantStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Available != (s.Node == "b") {
			t.Errorf("without node a: %+v", s)
		}
	}
	for id, n := range on {
		if n != "a" || id == "t1" {
			continue
		}
		var ue *UnavailableError
		if _, err := r2.Usage(ctx, id, usage.Query{}); !errors.As(err, &ue) || ue.Node != "a" || !errors.Is(err, ErrNodeUnavailable) {
			t.Errorf("usage of %s on a node gone: %v, want an UnavailableError naming a", id, err)
		}
	}
}

// TestMoveFromLocal: a Local node cannot drain, so a move stops at its
// first step and the tenant stays, placed and serving, where it was.
func TestMoveFromLocal(t *testing.T) {
	ctx := context.Background()
	nodes, dirs := localNodes(t, "a", "b")
	r := newMultiRig(t, nodes)
	if _, err := r.p.CreateTenant(ctx, "t1", "", nil); err != nil {
		t.Fatal(err)
	}
	from, _ := r.st.PlacementOf(ctx, "t1")
	to := map[string]string{"a": "b", "b": "a"}[from]
	for _, c := range []struct {
		name string
		to   string
		want error
	}{
		{"to its own node", from, ErrSameNode},
		{"to an unknown node", "zz", catalog.ErrUnknownNode},
		{"to a bad node id", "../x", catalog.ErrInvalid},
		{"from a node that cannot drain", to, ErrLocalMove},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := r.p.Move(ctx, "t1", c.to); !errors.Is(err, c.want) {
				t.Errorf("move: %v, want %v", err, c.want)
			}
			if n, _ := r.st.PlacementOf(ctx, "t1"); n != from {
				t.Errorf("placed on %s after a refused move, want %s", n, from)
			}
			if _, err := os.Stat(filepath.Join(dirs[from], "tenants", "t1")); err != nil {
				t.Errorf("directory on %s after a refused move: %v", from, err)
			}
		})
	}
	single, err := New(ctx, Options{StateDir: t.TempDir(), Templates: r.tpl, Store: r.st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := single.Move(ctx, "t1", "b"); !errors.Is(err, ErrLocalMove) {
		t.Errorf("move on a single-node platform: %v", err)
	}
}

// TestCreateUnrecorded: a tenant the catalog cannot place is not left
// behind on its node, where the API could not reach it.
func TestCreateUnrecorded(t *testing.T) {
	ctx := context.Background()
	nodes, dirs := localNodes(t, "a")
	r := newMultiRig(t, nodes)
	// The node's row goes from under the platform (another process, an
	// operator's SQL): placing on it fails.
	if err := r.st.DeleteNode(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.CreateTenant(ctx, "t1", "", nil); !errors.Is(err, catalog.ErrUnknownNode) {
		t.Fatalf("create: %v, want ErrUnknownNode", err)
	}
	if _, err := os.Stat(filepath.Join(dirs["a"], "tenants", "t1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unplaced tenant's directory: %v, want it gone", err)
	}
	if list, _ := r.st.Tenants(ctx); len(list) != 0 {
		t.Errorf("catalog tenants after the failed create: %v", list)
	}
}
