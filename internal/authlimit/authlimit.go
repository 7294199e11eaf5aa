// Package authlimit slows the guessing of secrets: it counts failed
// authentications per client address and per scope (a tenant's token, the
// admin token) in a sliding window, and says how long a client must wait
// once either count is at its limit. In `talon serve` one Guard is shared
// by Studio's sign-in, the gateway's bearer and WebSocket auth and the
// platform API, so a guesser has one budget however it asks.
//
// A throttled attempt is refused before its secret is compared, so it
// tells a guesser nothing, and the right secret is refused too until the
// window moves. That is the trade-off of the per-scope count: a flood of
// wrong tokens aimed at one tenant, from enough addresses to pass the
// per-address limit, keeps that tenant's correct clients out while it
// lasts and for up to one window (a minute) after. Behind a proxy, or for
// the local clients of a loopback gateway, every client has the proxy's
// (or 127.0.0.1's) address and shares its count.
//
// Memory is bounded: a count keeps at most its limit of timestamps and a
// Limiter at most maxKeys keys. When it is full, the key with the fewest
// recent failures is forgotten first, so a spray of fresh keys cannot wipe
// out the count of the key under attack.
//
// Concurrency: a Limiter and a Guard are safe for concurrent use.
package authlimit

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"talon/internal/tenantid"
)

// The limits of NewGuard. Per address as Studio's sign-in always had;
// per scope higher, since a tenant's clients may sit behind many
// addresses and one mistyped token must not lock them all out.
const (
	PerAddress = 10
	PerScope   = 60
	Window     = time.Minute
	// MaxKeys bounds each Limiter of a Guard.
	MaxKeys = 10000
)

// Limiter counts failures per key in a sliding window.
type Limiter struct {
	max     int
	window  time.Duration
	maxKeys int

	mu sync.Mutex
	m  map[string][]time.Time // oldest first; at most max; never empty
}

// NewLimiter allows max failures per key in any window, for at most
// maxKeys keys at once.
func NewLimiter(max int, window time.Duration, maxKeys int) *Limiter {
	return &Limiter{max: max, window: window, maxKeys: maxKeys, m: map[string][]time.Time{}}
}

// Wait is how long key must wait before its next attempt: 0 while it has
// fewer than max failures in the window ending at now.
func (l *Limiter) Wait(key string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := l.recent(key, now)
	if len(recent) < l.max {
		return 0
	}
	return recent[len(recent)-l.max].Add(l.window).Sub(now)
}

// Fail records a failure of key at now.
func (l *Limiter) Fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := l.recent(key, now)
	if recent == nil && len(l.m) >= l.maxKeys {
		l.evict(now)
	}
	if len(recent) >= l.max {
		// Only the newest max decide a wait.
		recent = append(recent[:0], recent[len(recent)-l.max+1:]...)
	}
	l.m[key] = append(recent, now)
}

// Len is how many keys have failures in memory.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// recent drops key's failures that left the window and returns the rest;
// mu is held.
func (l *Limiter) recent(key string, now time.Time) []time.Time {
	all := l.m[key]
	i := 0
	for i < len(all) && now.Sub(all[i]) >= l.window {
		i++
	}
	if i == len(all) {
		delete(l.m, key)
		return nil
	}
	if i > 0 {
		all = all[i:]
		l.m[key] = all
	}
	return all
}

// evict makes room for a key: it drops the keys whose failures all left
// the window, and if none did, the key with the fewest recent failures
// (of those, the one that failed least recently); mu is held.
func (l *Limiter) evict(now time.Time) {
	var (
		victim string
		found  bool
		fewest int
		last   time.Time
	)
	for k := range l.m {
		r := l.recent(k, now)
		if r == nil {
			continue
		}
		if !found || len(r) < fewest || len(r) == fewest && r[len(r)-1].Before(last) {
			victim, found, fewest, last = k, true, len(r), r[len(r)-1]
		}
	}
	if found && len(l.m) >= l.maxKeys {
		delete(l.m, victim)
	}
}

// Guard throttles by client address and by scope at once.
type Guard struct {
	// Now is the clock; nil means time.Now. Tests set a fake one.
	Now func() time.Time

	addr, scope *Limiter
}

// NewGuard allows PerAddress failures per address and PerScope per scope
// in any Window.
func NewGuard() *Guard {
	return &Guard{addr: NewLimiter(PerAddress, Window, MaxKeys), scope: NewLimiter(PerScope, Window, MaxKeys)}
}

func (g *Guard) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Wait is how long a client at addr must wait before it may try a secret
// of any of scopes: the longest of their waits.
func (g *Guard) Wait(addr string, scopes ...string) time.Duration {
	now := g.now()
	wait := g.addr.Wait(addr, now)
	for _, s := range scopes {
		wait = max(wait, g.scope.Wait(s, now))
	}
	return wait
}

// Fail records that a client at addr presented a wrong secret for
// scopes (every scope the secret could have been for).
func (g *Guard) Fail(addr string, scopes ...string) {
	now := g.now()
	g.addr.Fail(addr, now)
	for _, s := range scopes {
		g.scope.Fail(s, now)
	}
}

// Admin is the scope of the platform's admin token.
const Admin = "admin"

// Tenant is the scope of a tenant's gateway token ("" the default
// tenant's). Every malformed id shares one scope: no such tenant exists,
// and its text, up to a header's size, is not worth a key of its own.
func Tenant(id string) string {
	if id != "" && !tenantid.Valid(id) {
		return "tenant?"
	}
	return "tenant:" + id
}

// Addr is the address r's failures are counted by: the peer's IP (a
// proxy in front would need its forwarded header trusted, and nothing is
// trusted), an IPv6 peer by its /64, which one host commonly holds whole.
func Addr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// RetryAfter is a Retry-After header's value for wait: whole seconds,
// rounded up, at least 1.
func RetryAfter(wait time.Duration) string {
	return strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second)))
}
