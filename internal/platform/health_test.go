package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"talon/internal/usage"
)

// breakNode makes a Local node's health check fail the way a broken
// disk would: its tenants directory cannot be listed.
func breakNode(t *testing.T, dir string) (repair func()) {
	t.Helper()
	tenants := filepath.Join(dir, "tenants")
	if err := os.Rename(tenants, tenants+".away"); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.WriteFile(tenants, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(tenants); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tenants+".away", tenants); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

// TestNodeDown: a node whose health check fails takes its tenants down,
// and only them; new tenants avoid it; a passing check brings it back.
func TestNodeDown(t *testing.T) {
	ctx := context.Background()
	nodes, dirs := localNodes(t, "a", "b")
	r := newMultiRig(t, nodes)
	for _, id := range []string{"t1", "t2"} {
		if _, err := r.p.CreateTenant(ctx, id, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	onA := "t1"
	if n, _ := r.st.PlacementOf(ctx, "t1"); n != "a" {
		onA = "t2"
	}
	repair := breakNode(t, dirs["a"])
	r.p.CheckNodes(ctx)
	sts, err := r.p.TenantStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if down := s.ID == onA; s.Available == down || (down && s.Reason == "") {
			t.Errorf("with node a down: %+v", s)
		}
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"install", func() error { _, err := r.p.Install(ctx, onA, "helper"); return err }()},
		{"usage", func() error { _, err := r.p.Usage(ctx, onA, usage.Query{}); return err }()},
		{"delete", r.p.DeleteTenant(ctx, onA)},
		{"gateway", func() error { _, _, err := r.p.Gateway(ctx, onA); return err }()},
	} {
		if !errors.Is(c.err, ErrNodeUnavailable) {
			t.Errorf("%s on the down node: %v, want ErrNodeUnavailable", c.name, c.err)
		}
	}
	if _, err := r.p.CreateTenant(ctx, "t3", "", nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.st.PlacementOf(ctx, "t3"); n != "b" {
		t.Errorf("a new tenant went on %s while a was down", n)
	}
	ns, err := r.p.NodeStatuses(ctx)
	if err != nil || len(ns) != 2 || ns[0].Up || ns[0].Reason == "" || !ns[1].Up || ns[1].Placed != 2 || ns[1].Reported == nil {
		t.Errorf("node statuses with a down: %+v, %v", ns, err)
	}
	repair()
	r.p.CheckNodes(ctx)
	if _, err := r.p.Usage(ctx, onA, usage.Query{}); err != nil {
		t.Errorf("usage once a is back: %v", err)
	}
	// With a down again, placing a tenant when no node is up fails.
	breakNode(t, dirs["a"])
	breakNode(t, dirs["b"])
	r.p.CheckNodes(ctx)
	if _, err := r.p.CreateTenant(ctx, "t4", "", nil); !errors.Is(err, ErrNoNode) {
		t.Errorf("create with every node down: %v, want ErrNoNode", err)
	}
}

// TestWatchNodes: the poller checks at once, then every period, on a
// fake clock.
func TestWatchNodes(t *testing.T) {
	nodes, _ := localNodes(t, "a")
	r := newMultiRig(t, nodes)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		done := make(chan struct{})
		go func() { r.p.WatchNodes(ctx, 5*time.Second); close(done) }()
		checked := func() time.Time {
			synctest.Wait()
			st, _ := r.p.health.get("a")
			return st.checked
		}
		if got := checked(); !got.Equal(start) {
			t.Errorf("first check at %v, want at once (%v)", got, start)
		}
		time.Sleep(5 * time.Second)
		if got := checked(); !got.Equal(start.Add(5 * time.Second)) {
			t.Errorf("second check at %v, want 5 s later", got)
		}
		cancel()
		<-done
	})
}

// TestUnreachable: a connection to a tenant's node that fails at the
// network takes that node down at once, as a failed check would, and the
// tenant's error says it is unavailable; any other failure, or one of a
// tenant of the other node's, changes nothing; a passing check brings the
// node back.
func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	nodes, _ := localNodes(t, "a", "b")
	r := newMultiRig(t, nodes)
	for _, id := range []string{"t1", "t2"} {
		if _, err := r.p.CreateTenant(ctx, id, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	r.p.CheckNodes(ctx)
	onA, onB := "t1", "t2"
	if n, _ := r.st.PlacementOf(ctx, "t1"); n != "a" {
		onA, onB = "t2", "t1"
	}
	_, dialErr := net.Dial("tcp", "127.0.0.1:1") // nothing listens on port 1
	if dialErr == nil {
		t.Fatal("a connection to port 1 was accepted")
	}
	refused := errors.New("gateway refused the handshake: unauthorized")
	if got := r.p.Unreachable(ctx, onA, refused); got != refused {
		t.Errorf("a refused handshake came back as %v", got)
	}
	if _, _, err := r.p.Gateway(ctx, onA); err != nil {
		t.Fatalf("after a refused handshake node a is down: %v", err)
	}
	err := r.p.Unreachable(ctx, onA, fmt.Errorf("dialing: %w", dialErr))
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Node != "a" || ue.Tenant != onA {
		t.Fatalf("a refused connection to node a: %v, want the tenant's UnavailableError", err)
	}
	if _, _, err := r.p.Gateway(ctx, onA); !errors.Is(err, ErrNodeUnavailable) {
		t.Errorf("the next connection to %s: %v, want ErrNodeUnavailable without waiting for a check", onA, err)
	}
	if _, _, err := r.p.Gateway(ctx, onB); err != nil {
		t.Errorf("the other node's tenant: %v", err)
	}
	r.p.CheckNodes(ctx)
	if _, _, err := r.p.Gateway(ctx, onA); err != nil {
		t.Errorf("after a passing check: %v", err)
	}
}
