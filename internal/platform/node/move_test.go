package node

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/gateway"
	"talon/internal/platform/install"
	"talon/protocol"
	"talon/protocol/client"
)

// movingTenant makes tenant acme on n with token tok and its agents on
// llm's model, and one answered turn of user "ann" ("remember-me").
func movingTenant(t *testing.T, n *testNode, llm *gatedLLM) string {
	t.Helper()
	tn, err := n.client.CreateTenant(context.Background(), "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, tn.ConfigPath, modelConfig(tn.Token, llm.srv.URL))
	if code, _, body := n.chat(t, "acme", tn.Token, "ann", "remember-me"); code != http.StatusOK || !strings.Contains(body, "reply to: remember-me") {
		t.Fatalf("first turn: %d %s", code, body)
	}
	return tn.Token
}

// untilDraining waits until n's gateway has begun draining acme.
func untilDraining(n *testNode) {
	for !n.srv.Draining("acme") {
		runtime.Gosched()
	}
}

// TestMove: a tenant drained while a run is going keeps that run (it
// finishes and is answered), refuses new work as moving — to its own
// clients only —, is exported, imported on another node and deleted on
// the first; there it keeps its sessions, transcripts and memory files.
func TestMove(t *testing.T) {
	llm := newGatedLLM(t)
	a, b := startNode(t, llm.srv.URL, 0), startNode(t, llm.srv.URL, 0)
	ctx := context.Background()
	tok := movingTenant(t, a, llm)
	memory := filepath.Join("agents", "main", "memory", "notes.md")
	writeFile(t, filepath.Join(a.dir, "tenants", "acme", memory), "acme's notes\n")
	// What an agent could leave in its workspace to reach the host
	// through an export: links to a file and a directory outside it, and
	// a FIFO that would block a reader.
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.txt"), "the host's secret")
	workspace := filepath.Join(a.dir, "tenants", "acme", "agents", "main")
	for name, target := range map[string]string{"file-link": filepath.Join(outside, "secret.txt"), "dir-link": outside} {
		if err := os.Symlink(target, filepath.Join(workspace, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(workspace, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, err := client.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http"), client.Options{Token: tok, Tenant: "acme", ClientID: "test", Mode: "backend"})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	release := llm.hold()
	defer release()
	type turn struct {
		code int
		body string
	}
	running := make(chan turn, 1)
	go func() {
		code, _, body := a.chat(t, "acme", tok, "ann", "in flight")
		running <- turn{code, body}
	}()
	<-llm.started
	drained := make(chan error, 1)
	go func() { drained <- a.client.Drain(ctx, "acme") }()

	untilDraining(a)
	code, retry, body := a.chat(t, "acme", tok, "bob", "let me in")
	if code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "moving") {
		t.Fatalf("a turn while draining: %d (Retry-After %q) %s; want 503 moving with Retry-After", code, retry, body)
	}
	if code, _, body := a.chat(t, "acme", "not-the-token", "bob", "hi"); code != http.StatusUnauthorized {
		t.Fatalf("a wrong token while draining: %d %s; want the usual 401", code, body)
	}
	_, err = client.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http"), client.Options{Token: tok, Tenant: "acme", ClientID: "test", Mode: "backend"})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeUnavailable || pe.RetryAfterMs == 0 {
		t.Fatalf("WS connect while draining: %v; want UNAVAILABLE with retryAfterMs", err)
	}
	_, err = client.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http"), client.Options{Token: "wrong", Tenant: "acme", ClientID: "test", Mode: "backend"})
	if !errors.As(err, &pe) || pe.Code == protocol.CodeUnavailable || strings.Contains(pe.Message, "moving") {
		t.Fatalf("WS connect with a wrong token while draining: %v; want the usual refusal", err)
	}
	if err := ws.Call(ctx, "sessions.list", map[string]any{}, nil); !errors.As(err, &pe) || pe.Code != protocol.CodeUnavailable {
		t.Fatalf("a WS method of a client connected before the drain: %v; want UNAVAILABLE", err)
	}
	// Its hooks were on: their sender is told to retry. It had no channel
	// account: that path answers as it did before the drain.
	for p, want := range map[string]int{"/hooks/acme/agent": http.StatusServiceUnavailable, "/channels/acme/telegram/default": http.StatusNotFound} {
		resp, err := http.Post(a.url+p, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusServiceUnavailable) != (resp.Header.Get("Retry-After") != "") {
			t.Fatalf("POST %s while draining: %d (Retry-After %q); want %d", p, resp.StatusCode, resp.Header.Get("Retry-After"), want)
		}
	}
	if _, err := a.client.Install(ctx, "acme", loadTemplateFiles(t, v1)); !errors.Is(err, ErrMoving) {
		t.Fatalf("Install while draining: %v, want ErrMoving", err)
	}

	release()
	if got := <-running; got.code != http.StatusOK || !strings.Contains(got.body, "reply to: in flight") {
		t.Fatalf("the run in flight when the drain began: %d %s; want it finished", got.code, got.body)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if err := a.client.Drain(ctx, "acme"); err != nil {
		t.Fatalf("a second Drain: %v", err)
	}
	<-ws.Done() // closed by the drain: it reconnects, to the new node

	var tarball bytes.Buffer
	if err := a.client.Export(ctx, "acme", &tarball); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(a.dir, "tenants", "acme", gateway.DrainMarker)); err != nil {
		t.Fatalf("the drained tenant has no marker to outlive a restart: %v", err)
	}
	if drainMarker != gateway.DrainMarker {
		t.Fatalf("the export leaves out %q, the gateway writes %q", drainMarker, gateway.DrainMarker)
	}
	if bytes.Contains(tarball.Bytes(), []byte("the host's secret")) {
		t.Fatal("the export followed a link out of the tenant's directory")
	}
	if err := b.client.Import(ctx, "acme", bytes.NewReader(tarball.Bytes())); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "tenants", "acme", gateway.DrainMarker)); !os.IsNotExist(err) {
		t.Fatalf("the copy arrived drained: %v", err)
	}
	if got := entries(t, filepath.Join(b.dir, "tenants", "acme", "agents", "main")); slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, "link") || n == "fifo" }) {
		t.Fatalf("links or FIFOs arrived on the new node: %v", got)
	}
	if err := b.client.Import(ctx, "acme", bytes.NewReader(tarball.Bytes())); !errors.Is(err, install.ErrExists) {
		t.Fatalf("a second Import: %v, want ErrExists", err)
	}
	if err := a.client.DeleteTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if a.srv.Draining("acme") {
		t.Fatal("a deleted tenant is still draining")
	}

	if got := readFile(t, filepath.Join(b.dir, "tenants", "acme", memory)); got != "acme's notes\n" {
		t.Fatalf("memory file on the new node: %q", got)
	}
	if got := entries(t, filepath.Join(b.dir, "tenants")); !slices.Equal(got, []string{"acme"}) {
		t.Fatalf("tenants on the new node: %v", got)
	}
	if code, _, body := b.chat(t, "acme", tok, "ann", "still there?"); code != http.StatusOK || !strings.Contains(body, "reply to: still there?") {
		t.Fatalf("a turn on the new node: %d %s", code, body)
	}
	for _, said := range []string{"remember-me", "reply to: remember-me", "in flight", "reply to: in flight"} {
		if !strings.Contains(llm.last(), said) {
			t.Fatalf("the new node's turn did not carry the session's history (%q missing):\n%s", said, llm.last())
		}
	}
	if code, _, _ := a.chat(t, "acme", tok, "ann", "old node"); code != http.StatusUnauthorized {
		t.Fatalf("the old node after the move: %d, want 401 (no such tenant)", code)
	}
	if tok2, err := b.client.Token(ctx, "acme"); err != nil || tok2 != tok {
		t.Fatalf("token on the new node: %q %v", tok2, err)
	}
}

// TestDrainAborts: a run still going at the drain's bound is aborted, and
// the drain completes; Resume serves the tenant again.
func TestDrainAborts(t *testing.T) {
	llm := newGatedLLM(t)
	a := startNode(t, llm.srv.URL, time.Nanosecond)
	ctx := context.Background()
	tok := movingTenant(t, a, llm)
	release := llm.hold()
	defer release()
	done := make(chan string, 1)
	go func() {
		code, _, body := a.chat(t, "acme", tok, "ann", "never answered")
		done <- fmt.Sprint(code, " ", body)
	}()
	<-llm.started
	if err := a.client.Drain(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if got := <-done; !strings.HasPrefix(got, "503 ") || !strings.Contains(got, "moving") {
		t.Fatalf("the run still going at the bound: %s; want it aborted, answered 503 moving", got)
	}
	<-llm.gaveUp // the model call was given up, not left running
	release()
	if err := a.client.Resume(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if code, _, body := a.chat(t, "acme", tok, "ann", "back"); code != http.StatusOK || !strings.Contains(body, "reply to: back") {
		t.Fatalf("a turn after Resume: %d %s", code, body)
	}
	if err := a.client.Export(ctx, "acme", io.Discard); !errors.Is(err, ErrNotDrained) {
		t.Fatalf("Export after Resume: %v, want ErrNotDrained", err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"drain", func() error { return a.client.Drain(ctx, "nobody") }},
		{"resume", func() error { return a.client.Resume(ctx, "nobody") }},
		{"export", func() error { return a.client.Export(ctx, "nobody", io.Discard) }},
	} {
		t.Run(tc.name+" of no tenant", func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, install.ErrNoTenant) {
				t.Fatalf("got %v, want ErrNoTenant", err)
			}
		})
	}
}

// TestImportRefuses: a hostile or broken archive sent to Import is
// refused with nothing written under tenants/, and so is a valid archive
// that is not a tenant's.
func TestImportRefuses(t *testing.T) {
	n := startNode(t, "", 0)
	ctx := context.Background()
	if _, err := n.client.CreateTenant(ctx, "existing", nil); err != nil {
		t.Fatal(err)
	}
	cfg := entry{name: "talon.json", body: "{}"}
	for _, tc := range []struct {
		name string
		tar  []byte
	}{
		{"parent path", archive(t, true, cfg, entry{name: "../escaped", body: "x"})},
		{"absolute path", archive(t, true, cfg, entry{name: filepath.Join(n.dir, "escaped"), body: "x"})},
		{"symlink", archive(t, true, cfg, entry{name: "link", typ: '2', link: "/"})},
		{"device", archive(t, true, cfg, entry{name: "dev", typ: '3'})},
		{"huge size", archive(t, true, entry{name: "huge", body: "x", size: 1 << 50})},
		{"cut short", archive(t, false, cfg, entry{name: "a", body: "x"})},
		{"no config", archive(t, true, entry{name: "notes.md", body: "x"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := n.client.Import(ctx, "newcomer", bytes.NewReader(tc.tar))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Import: %v, want ErrInvalid", err)
			}
			if got := entries(t, filepath.Join(n.dir, "tenants")); !slices.Equal(got, []string{"existing"}) {
				t.Fatalf("tenants/ after a refused import: %v", got)
			}
			if _, err := os.Stat(filepath.Join(n.dir, "escaped")); !os.IsNotExist(err) {
				t.Fatalf("a file escaped the import: %v", err)
			}
		})
	}
	t.Run("a drain marker from elsewhere", func(t *testing.T) {
		marked := archive(t, true, cfg, entry{name: drainMarker + "/", typ: tar.TypeDir}, entry{name: drainMarker + "/x", body: "{}"})
		if err := n.client.Import(ctx, "marked", bytes.NewReader(marked)); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(n.dir, "tenants", "marked", drainMarker)); !os.IsNotExist(err) {
			t.Fatalf("the imported tenant kept a drain marker: %v", err)
		}
		if n.srv.Draining("marked") {
			t.Fatal("the imported tenant is drained")
		}
		if err := n.client.DeleteTenant(ctx, "marked"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("an existing tenant", func(t *testing.T) {
		err := n.client.Import(ctx, "existing", bytes.NewReader(archive(t, true, cfg)))
		if !errors.Is(err, install.ErrExists) {
			t.Fatalf("Import: %v, want ErrExists", err)
		}
	})
	if d := cmp.Diff([]string{"existing"}, entries(t, filepath.Join(n.dir, "tenants"))); d != "" {
		t.Fatal(d)
	}
}

// TestCleanImports: what an import killed part way left is removed when
// the node API starts again; tenants and other entries are not touched.
func TestCleanImports(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tenants", importPrefix+"acme-123", "talon.json"), "{}")
	writeFile(t, filepath.Join(dir, "tenants", "acme", "talon.json"), "{}")
	writeFile(t, filepath.Join(dir, "tenants", ".new-beta-1", "talon.json"), "{}")
	if _, err := NewHandler(Options{StateDir: dir, Token: testToken}); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, filepath.Join(dir, "tenants")); !slices.Equal(got, []string{".new-beta-1", "acme"}) {
		t.Fatalf("tenants/ after a start: %v", got)
	}
}
