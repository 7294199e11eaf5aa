package studio

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"talon/internal/authlimit"
	"talon/internal/tenantid"
)

// Sign-in: a person types the admin token, or a tenant's gateway token
// (with the tenant's id; none for the default tenant). Studio then keeps
// a random session id in a cookie that is HttpOnly and SameSite=Strict,
// and every form and script request also carries the session's CSRF
// token, so another site can neither read nor drive Studio.

const (
	cookieName = "talon_studio"
	// sessionTTL bounds a sign-in; sessions live in memory and end with
	// the process too.
	sessionTTL = 12 * time.Hour
	// maxSessions bounds memory: the oldest sign-in goes first.
	maxSessions = 10000
	maxTokenLen = 512
)

type session struct {
	id, csrf string
	admin    bool
	tenant   string // the tenant a tenant token signed in to; "" default
	expires  time.Time
}

// Who says who is signed in, for the menu.
func (s *session) Who() string {
	if s.admin {
		return "administrator"
	}
	return tenantName(s.tenant)
}

// CSRF is the token forms carry.
func (s *session) CSRF() string { return s.csrf }

// Admin reports an administrator.
func (s *session) Admin() bool { return s.admin }

type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

func (ss *sessions) add(admin bool, tenant string) *session {
	s := &session{id: randomHex(32), csrf: randomHex(32), admin: admin, tenant: tenant, expires: time.Now().Add(sessionTTL)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := time.Now()
	for id, o := range ss.m {
		if now.After(o.expires) {
			delete(ss.m, id)
		}
	}
	for len(ss.m) >= maxSessions {
		var oldest *session
		for _, o := range ss.m {
			if oldest == nil || o.expires.Before(oldest.expires) {
				oldest = o
			}
		}
		delete(ss.m, oldest.id)
	}
	ss.m[s.id] = s
	return s
}

func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
	if s == nil || time.Now().After(s.expires) {
		delete(ss.m, id)
		return nil
	}
	return s
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	delete(ss.m, id)
	ss.mu.Unlock()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// current is the request's session, or nil.
func (s *Server) current(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) != 64 {
		return nil
	}
	return s.auth.get(c.Value)
}

// signedIn wraps a handler: without a session, pages send the person to
// sign in (and back), and other requests get 401. A POST must carry the
// session's CSRF token.
func (s *Server) signedIn(h func(*req)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.current(r)
		if sess == nil {
			if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" {
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.fail(w, r, nil, http.StatusUnauthorized, "Your sign-in has ended: sign in again.")
			return
		}
		if r.Method != http.MethodGet && !validCSRF(r, sess) {
			s.fail(w, r, sess, http.StatusForbidden, "This form is stale or came from another site: reload the page and try again.")
			return
		}
		h(&req{w: w, r: r, sess: sess})
	}
}

func validCSRF(r *http.Request, sess *session) bool {
	tok := r.Header.Get("X-CSRF-Token")
	if tok == "" {
		tok = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(sess.csrf)) == 1
}

type signinData struct {
	Next, Tenant string
}

func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) {
	p := &page{Title: "Sign in", HasPlatform: s.o.Platform != nil, Data: signinData{Next: safeNext(r.URL.Query().Get("next"))}}
	s.render(w, http.StatusOK, "signin", p)
}

// signin checks a token. The admin token opens everything; otherwise the
// token must be the named tenant's gateway token (a tenant without one
// cannot be signed in to: Studio never opens a tenant without a secret).
func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	tenant := strings.TrimSpace(r.PostFormValue("tenant"))
	d := signinData{Next: safeNext(r.PostFormValue("next")), Tenant: tenant}
	again := func(status int, msg string) {
		p := &page{Title: "Sign in", HasPlatform: s.o.Platform != nil, Error: msg, Data: d}
		s.render(w, status, "signin", p)
	}
	// Failed sign-ins are counted per address and per token that could
	// have been meant (authlimit): once over the limit, a try is refused
	// before the token is compared, so a token cannot be guessed at
	// network speed.
	addr, scopes := authlimit.Addr(r), signinScopes(tenant)
	if wait := s.limit.Wait(addr, scopes...); wait > 0 {
		secs := authlimit.RetryAfter(wait)
		w.Header().Set("Retry-After", secs)
		again(http.StatusTooManyRequests, "Too many failed sign-ins: try again in "+secs+" s.")
		return
	}
	switch {
	case token == "":
		again(http.StatusBadRequest, "Enter a token: the admin token, or a tenant's gateway token.")
		return
	case len(token) > maxTokenLen:
		again(http.StatusBadRequest, "That token is too long to be one of Talon's.")
		return
	case tenant != "" && !tenantid.Valid(tenant):
		again(http.StatusBadRequest, "The tenant id has letters, digits, _ and -, and starts with a letter or digit.")
		return
	}
	var sess *session
	if tenant == "" && equal(token, s.o.AdminToken) {
		sess = s.auth.add(true, "")
	} else {
		want, err := s.o.TenantToken(tenant)
		if err != nil || want == "" || !equal(token, want) {
			// One answer for an unknown tenant, a tenant without a
			// token and a wrong token: none tells which it was.
			s.limit.Fail(addr, scopes...)
			again(http.StatusUnauthorized, "That token does not sign in to "+tenantName(tenant)+".")
			return
		}
		sess = s.auth.add(false, tenant)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: sess.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(sessionTTL.Seconds())})
	http.Redirect(w, r, d.Next, http.StatusSeeOther)
}

func (s *Server) signout(w http.ResponseWriter, r *http.Request) {
	if sess := s.current(r); sess != nil {
		if !validCSRF(r, sess) {
			s.fail(w, r, sess, http.StatusForbidden, "This form is stale or came from another site: reload the page and try again.")
			return
		}
		s.auth.remove(sess.id)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// signinScopes are the secrets a sign-in to tenant may be trying: a
// tenant's token, and with no tenant also the admin token.
func signinScopes(tenant string) []string {
	if tenant == "" {
		return []string{authlimit.Admin, authlimit.Tenant("")}
	}
	return []string{authlimit.Tenant(tenant)}
}

func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// maxNext bounds a post-sign-in target; a page's own URL is far shorter.
const maxNext = 2048

// safeNext is where to go after signing in: next when it is a path on
// this site, else "/".
func safeNext(next string) string {
	if len(next) > maxNext || !sameOriginPath(next) {
		return "/"
	}
	return next
}

// sameOriginPath reports whether s, as written and after each round of
// URL-decoding, is a plain path on this site. Browsers drop tabs and
// newlines from a URL and read a backslash as a slash, so "/\t/evil.example"
// leaves as "//evil.example", another site: any control character, space,
// non-ASCII byte or backslash refuses s, as do a leading "//", a scheme or
// a host, and an empty, "." or ".." segment (which a browser may resolve
// into a leading "//"). Studio's own paths have none of these.
func sameOriginPath(s string) bool {
	for range 3 {
		if !plainPath(s) {
			return false
		}
		dec, err := url.PathUnescape(s)
		if err != nil {
			return false
		}
		if dec == s {
			return true
		}
		s = dec
	}
	return false // still encoded after three rounds: no page of Studio's
}

// plainPath is sameOriginPath's check of one form of the target.
func plainPath(s string) bool {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	p, _, _ := strings.Cut(s, "?")
	p, _, _ = strings.Cut(p, "#")
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." || seg == "" && i < len(segs)-1 {
			return false
		}
	}
	return true
}
