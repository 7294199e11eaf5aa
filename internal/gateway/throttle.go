package gateway

import (
	"net/http"
	"time"

	"talon/internal/authlimit"
	"talon/internal/config"
	"talon/protocol"
)

// checkSecret authorizes secret for tenant t with config cfg (either nil
// when the tenant was not found) under the failed-auth throttle: a
// client whose address, or the tenant it names, is over its limit waits
// without the secret being compared, and a wrong secret counts against
// both. A request with no secret at all guesses nothing and is not
// counted. The limits and their trade-off are authlimit's.
func (s *Server) checkSecret(addr, tenantID string, t *tenant, cfg *config.Config, secret string) (ok bool, wait time.Duration) {
	scope := authlimit.Tenant(tenantID)
	if wait := s.limit.Wait(addr, scope); wait > 0 {
		return false, wait
	}
	if t != nil && cfg != nil && t.authorize(cfg, secret, s.loopback) {
		return true, 0
	}
	if secret != "" {
		s.limit.Fail(addr, scope)
	}
	return false, 0
}

// rateLimited answers a throttled HTTP client as OpenClaw does.
func rateLimited(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", authlimit.RetryAfter(wait))
	writeError(w, http.StatusTooManyRequests, errRateLimited, "Too many failed authentication attempts. Please try again later.")
}

// rateLimitedWS is the connect error of a throttled WebSocket client, as
// OpenClaw words it.
func rateLimitedWS(wait time.Duration) *protocol.Error {
	e := protocol.Errorf("unauthorized: too many failed authentication attempts (retry later)")
	e.Retryable = true
	e.RetryAfterMs = max(1, (wait + time.Millisecond - 1).Milliseconds())
	e.Details = map[string]any{"code": "AUTH_RATE_LIMITED", "canRetryWithDeviceToken": false}
	return e
}
