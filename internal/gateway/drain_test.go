package gateway

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/channel/telegram/tgtest"
)

// TestDrainChannels: a drained tenant's channel account stops taking
// messages (what arrives meanwhile stays with the platform, which is told
// to retry its webhook), and a resumed one takes them again, the message
// sent during the drain included.
func TestDrainChannels(t *testing.T) {
	needBwrap(t)
	tg := tgtest.Start(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway: {auth: {token: "`+wsToken+`"}}, tenants: {network: {allowHosts: ["`+tgAddr(t, tg)+`"]}}}`))
	writeFile(t, filepath.Join(dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}},
		env: {TG: "`+tg.Token+`"},
		channels: {telegram: {botToken: "${TG}", apiRoot: "`+tg.URL+`", dmPolicy: "open", allowFrom: ["*"]}}}`))
	ts := startServer(t, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tia := tgtest.User{ID: 31, FirstName: "Tia"}
	tg.UserSays(tgtest.Say{From: tia, Text: "hello"})
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatalf("the tenant's bot did not answer: %v", err)
	}

	if err := ts.srv.DrainTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	tg.UserSays(tgtest.Say{From: tia, Text: "during the move"})
	if got := tg.Pending(); got != 1 {
		t.Fatalf("a drained tenant's bot took a message: %d pending, want 1", got)
	}
	resp, err := http.Post(ts.url+"/channels/acme/telegram/default", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("its webhook path while drained: %d, want 503 with Retry-After", resp.StatusCode)
	}
	if !ts.srv.Draining("acme") || ts.srv.Draining("beta") || ts.srv.Draining("") {
		t.Fatal("Draining names the wrong tenants")
	}

	if err := ts.srv.ResumeTenant("acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatalf("the resumed tenant's bot did not take the message sent while it was drained: %v", err)
	}
	for _, bad := range []string{"", "../x"} {
		if err := ts.srv.DrainTenant(ctx, bad); err == nil {
			t.Errorf("DrainTenant(%q) drained something", bad)
		}
	}
}

// TestDrainSurvivesRestart: a gateway restarted in the middle of a move
// keeps the tenant drained — its channels do not start, its clients are
// told it moves — until it is resumed, which removes the marker.
func TestDrainSurvivesRestart(t *testing.T) {
	needBwrap(t)
	tg := tgtest.Start(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway: {auth: {token: "`+wsToken+`"}}, tenants: {network: {allowHosts: ["`+tgAddr(t, tg)+`"]}}}`))
	writeFile(t, filepath.Join(dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}},
		env: {TG: "`+tg.Token+`"},
		channels: {telegram: {botToken: "${TG}", apiRoot: "`+tg.URL+`", dmPolicy: "open", allowFrom: ["*"]}}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := startServer(t, dir, nil)
	if err := first.srv.DrainTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	first.stop()

	ts := startServer(t, dir, nil)
	if !ts.srv.Draining("acme") {
		t.Fatal("the restarted gateway forgot the drain")
	}
	tg.UserSays(tgtest.Say{From: tgtest.User{ID: 31, FirstName: "Tia"}, Text: "during the move"})
	for _, tc := range []struct {
		token string
		want  int
	}{{"acme-token", http.StatusServiceUnavailable}, {"wrong-token", http.StatusUnauthorized}} {
		r := ts.post(map[string]string{"Authorization": "Bearer " + tc.token, "X-Tenant-ID": "acme"},
			`{"model":"openclaw","messages":[{"role":"user","content":"hi"}]}`)
		if r.status != tc.want {
			t.Fatalf("a turn with %s after the restart: %d %s, want %d", tc.token, r.status, r.body, tc.want)
		}
	}
	if got := tg.Pending(); got != 1 {
		t.Fatalf("the drained tenant's bot took a message after the restart: %d pending, want 1", got)
	}
	resp, err := http.Post(ts.url+"/channels/acme/telegram/default", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("its webhook path after the restart: %d, want 503", resp.StatusCode)
	}

	if err := ts.srv.ResumeTenant("acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tenants", "acme", DrainMarker)); !os.IsNotExist(err) {
		t.Fatalf("the marker after Resume: %v", err)
	}
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatalf("the resumed tenant's bot did not take the message: %v", err)
	}
}
