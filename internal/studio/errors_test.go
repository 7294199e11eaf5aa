package studio

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"talon/internal/platform/relay"
	"talon/internal/talonproc"
	"talon/protocol/client"
)

// TestGatewayFailureStaysInTheLog: with nothing listening where the
// gateway should be, every page says so in a fixed sentence (a 502 where
// the page needs the gateway); the address and the dial error are in the
// log only.
func TestGatewayFailureStaysInTheLog(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	rl := relay.New(func(ctx context.Context, tenant string) (*client.Client, error) {
		return client.Dial(ctx, "ws://"+dead, client.Options{Tenant: tenant, ClientID: "talon-studio", Mode: "ui"})
	})
	t.Cleanup(rl.Close)
	var log talonproc.Buffer
	s, err := New(Options{Relay: rl, TenantToken: func(string) (string, error) { return "", nil }, AdminToken: adminToken,
		Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	b := (&env{t: t, s: s, srv: srv}).signIn(adminToken, "")

	const said = "The gateway could not be reached, or its answer could not be read; the server log says why."
	cases := []struct {
		name, method, path string
		status             int
	}{
		{"agents page", "GET", "/agents", http.StatusOK},
		{"agent page", "GET", "/agents/main", http.StatusBadGateway},
		{"chat poll", "GET", "/agents/main/chat/since?after=0", http.StatusBadGateway},
		{"chat turn", "POST", "/agents/main/chat", http.StatusBadGateway},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(log.String())
			var res *http.Response
			var body string
			if c.method == "GET" {
				res, body = b.get(c.path)
			} else {
				res, body = b.post(c.path, url.Values{"message": {"hi"}})
			}
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d:\n%s", res.StatusCode, c.status, body)
			}
			if !strings.Contains(body, said) {
				t.Errorf("the page does not say %q:\n%s", said, body)
			}
			for _, internal := range []string{dead, "dial", "refused"} {
				if strings.Contains(body, internal) {
					t.Errorf("the page shows %q:\n%s", internal, body)
				}
			}
			if logged := log.String()[before:]; !strings.Contains(logged, "studio: calling the gateway") || !strings.Contains(logged, dead) {
				t.Errorf("the log does not have the failure with %s:\n%s", dead, logged)
			}
		})
	}
}
