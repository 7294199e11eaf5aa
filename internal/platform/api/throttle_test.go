package api

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"talon/internal/authlimit"
)

// TestAuthThrottle: wrong tokens are throttled per address and per token
// they may be guessing (authlimit): over the limit the right token waits
// too, with 429 and Retry-After; requests without a token do not count.
func TestAuthThrottle(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := authlimit.NewGuard()
	g.Now = func() time.Time { return now }
	e := newEnv(t, Options{AdminToken: adminTok, AuthLimit: g})
	acme := e.createTenant(t, "acme")
	for range 20 {
		if resp, _ := e.do(t, "GET", "/api/tenants", "", "", ""); resp.StatusCode != 401 {
			t.Fatalf("no token: %d, want 401", resp.StatusCode)
		}
	}
	for i := range authlimit.PerAddress {
		if resp, _ := e.do(t, "GET", "/api/tenants", "guess"+strconv.Itoa(i), "", ""); resp.StatusCode != 403 {
			t.Fatalf("guess %d: %d, want 403", i, resp.StatusCode)
		}
	}
	resp, data := e.do(t, "GET", "/api/tenants", adminTok, "", "")
	if code, _ := errorCode(t, data); resp.StatusCode != http.StatusTooManyRequests || code != "rate_limited" || resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("the admin token after %d guesses: %d %s (Retry-After %q), want 429 rate_limited 60", authlimit.PerAddress, resp.StatusCode, data, resp.Header.Get("Retry-After"))
	}
	now = now.Add(authlimit.Window)
	e.ok(t, 200, "GET", "/api/tenants", "", nil)

	// acme's token guessed at from many addresses: its chat waits, the
	// admin's routes do not.
	for i := range authlimit.PerScope {
		g.Fail("192.0.2."+strconv.Itoa(i), authlimit.Tenant("acme"))
	}
	resp, data = e.do(t, "POST", "/api/tenants/acme/employees/helper/chat", acme, "", `{"user":"u1","message":"hi"}`)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("acme's chat with its token: %d %s, want 429", resp.StatusCode, data)
	}
	e.ok(t, 200, "GET", "/api/tenants", "", nil)
}
