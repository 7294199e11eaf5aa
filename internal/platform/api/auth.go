package api

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"talon/internal/authlimit"
)

// authorize checks the Authorization header for a route: 401 when there
// is no bearer token, 403 when the token grants nothing here (a wrong
// token, or another tenant's), 503 when an admin route has no admin token
// configured.
func (s *server) authorize(a access, r *http.Request) error {
	if a == public {
		return nil
	}
	if a == admin && s.o.AdminToken == "" {
		msg := "the platform API has no admin token configured, so it refuses every admin call"
		if s.o.AdminTokenHint != "" {
			msg += "; " + s.o.AdminTokenHint
		} else {
			msg += "; configure one and restart"
		}
		return errorf(http.StatusServiceUnavailable, "admin_token_unset", "%s", msg)
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return errorf(http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token>")
	}
	if same(tok, s.o.AdminToken) {
		return nil
	}
	if a == tenant && s.o.TenantToken != nil {
		id := r.PathValue("id")
		want, err := s.o.TenantToken(id)
		if err != nil {
			// An unknown tenant and a wrong token look alike, so a
			// caller cannot probe which tenants exist.
			s.o.Log.Debug("api: tenant token", "tenant", id, "err", err)
		} else if same(tok, want) {
			return nil
		}
		return errorf(http.StatusForbidden, "forbidden", "the token is neither the admin token nor tenant %q's token", id)
	}
	return errorf(http.StatusForbidden, "forbidden", "the token is not the admin token")
}

// authorizeLimited is authorize under the failed-auth throttle
// (authlimit): a client over its limit, by address or by the token it
// may be trying (the admin token's, or the route's tenant's), is refused
// with 429 before its token is compared, and a wrong token (403) counts
// against both. A request without a token guesses nothing and is not
// counted.
func (s *server) authorizeLimited(a access, r *http.Request) error {
	if a == public {
		return nil
	}
	addr, scopes := authlimit.Addr(r), []string{authlimit.Admin}
	if a == tenant {
		scopes = append(scopes, authlimit.Tenant(r.PathValue("id")))
	}
	if wait := s.o.AuthLimit.Wait(addr, scopes...); wait > 0 {
		return &apiError{status: http.StatusTooManyRequests, code: "rate_limited", retryAfter: wait,
			message: "too many failed authentication attempts; try again in " + authlimit.RetryAfter(wait) + " s"}
	}
	err := s.authorize(a, r)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusForbidden {
		s.o.AuthLimit.Fail(addr, scopes...)
	}
	return err
}

// same compares in constant time; an empty want never matches.
func same(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
