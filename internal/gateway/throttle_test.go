package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"talon/internal/authlimit"
	"talon/protocol"
)

// throttled is a gateway with tokens for the default tenant and acme, on a
// fake clock.
func throttled(t *testing.T) (*testServer, *time.Time) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway:{auth:{token:"root-token"}}}`))
	writeFile(t, filepath.Join(dir, "tenants", "acme", "talon.json"), []byte(`{gateway:{auth:{token:"acme-token"}}}`))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := authlimit.NewGuard()
	g.Now = func() time.Time { return now }
	ts := startServerWith(t, dir, nil, func(o *Options) { o.AuthLimit = g })
	return ts, &now
}

// from is a client whose connections come from ip, one of the loopback
// addresses Linux routes to lo (127.0.0.0/8).
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// models is GET /v1/models's status and body, from c.
func models(t *testing.T, c *http.Client, base, token, tenant string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if tenant != "" {
		req.Header.Set("X-Tenant-ID", tenant)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := readBody(resp)
	return resp.StatusCode, resp.Header, body
}

// connectFrom opens a WebSocket from c for tenant and returns the
// connect response's error (nil on hello-ok).
func connectFrom(t *testing.T, c *http.Client, base, token, tenant string) *protocol.Error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	if tenant != "" {
		h.Set("X-Tenant-ID", tenant)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http"), &websocket.DialOptions{HTTPClient: c, HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	r := &rawWS{t: t, ws: ws}
	defer ws.CloseNow()
	r.challenge()
	r.send(connectReq(connectParams(token, 3, 4)))
	f, code, err := r.next()
	if err != nil {
		t.Fatalf("connect: closed %d: %v", code, err)
	}
	return f.Error
}

// TestThrottleAddress: after authlimit.PerAddress wrong secrets from one
// address, over HTTP and WebSocket alike, its next tries are refused
// before the secret is compared, the right one too, with Retry-After;
// requests without a secret do not count; the window moving lets it in.
func TestThrottleAddress(t *testing.T) {
	ts, now := throttled(t)
	c := from("127.0.0.1")
	for range 20 {
		if code, _, _ := models(t, c, ts.url, "", ""); code != 401 {
			t.Fatalf("no token: %d, want 401", code)
		}
	}
	for i := range authlimit.PerAddress {
		if i%2 == 0 {
			if code, _, body := models(t, c, ts.url, "guess"+strconv.Itoa(i), ""); code != 401 {
				t.Fatalf("guess %d: %d %s", i, code, body)
			}
		} else if e := connectFrom(t, c, ts.url, "guess"+strconv.Itoa(i), ""); e == nil || e.Retryable {
			t.Fatalf("WS guess %d: %+v, want a plain refusal", i, e)
		}
	}
	code, h, body := models(t, c, ts.url, "root-token", "")
	var e struct {
		Error struct{ Type, Message string }
	}
	if json.Unmarshal([]byte(body), &e); code != 429 || h.Get("Retry-After") != "60" || e.Error.Type != errRateLimited {
		t.Fatalf("the right token after %d guesses: %d, Retry-After %q, %s; want 429, 60, rate_limited", authlimit.PerAddress, code, h.Get("Retry-After"), body)
	}
	werr := connectFrom(t, c, ts.url, "root-token", "")
	if werr == nil || !werr.Retryable || werr.RetryAfterMs != 60000 || !strings.Contains(werr.Message, "too many failed authentication attempts") {
		t.Fatalf("WS with the right token: %+v, want a retryable refusal after 60000 ms", werr)
	}
	if d, _ := werr.Details.(map[string]any); d["code"] != "AUTH_RATE_LIMITED" {
		t.Errorf("WS refusal details %v, want code AUTH_RATE_LIMITED", werr.Details)
	}
	if code, _, _ := models(t, from("127.0.0.2"), ts.url, "root-token", ""); code != 200 {
		t.Errorf("another address: %d, want 200", code)
	}
	*now = now.Add(authlimit.Window)
	if code, _, body := models(t, c, ts.url, "root-token", ""); code != 200 {
		t.Errorf("a window later: %d %s, want 200", code, body)
	}
}

// TestThrottleTenant: wrong tokens for one tenant from many addresses,
// each under its own limit, add up to the tenant's: its right token then
// waits from any address, while another tenant is served.
func TestThrottleTenant(t *testing.T) {
	ts, _ := throttled(t)
	per := authlimit.PerAddress - 1
	for n, a := 0, 2; n < authlimit.PerScope; a++ {
		c := from("127.0.0." + strconv.Itoa(a))
		for i := 0; i < per && n < authlimit.PerScope; i, n = i+1, n+1 {
			if code, _, _ := models(t, c, ts.url, "guess", "acme"); code != 401 {
				t.Fatalf("guess %d from 127.0.0.%d: %d, want 401", n, a, code)
			}
		}
	}
	fresh := from("127.0.0.200")
	if code, h, _ := models(t, fresh, ts.url, "acme-token", "acme"); code != 429 || h.Get("Retry-After") == "" {
		t.Errorf("acme's token from a fresh address: %d, want 429 with Retry-After", code)
	}
	if e := connectFrom(t, fresh, ts.url, "acme-token", "acme"); e == nil || !e.Retryable || e.RetryAfterMs <= 0 {
		t.Errorf("acme over WS: %+v, want a retryable refusal", e)
	}
	if code, _, _ := models(t, fresh, ts.url, "root-token", ""); code != 200 {
		t.Errorf("the default tenant meanwhile: %d, want 200", code)
	}
}
