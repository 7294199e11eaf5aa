package authlimit

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestLimiterWindow: max failures in a window make the key wait until the
// oldest of them leaves it; the window slides rather than resets.
func TestLimiterWindow(t *testing.T) {
	l := NewLimiter(3, time.Minute, 100)
	steps := []struct {
		name string
		at   time.Duration // since t0
		fail bool
		wait time.Duration // Wait at that moment, before any failure then
	}{
		{"fresh", 0, true, 0},
		{"one failure", 10 * time.Second, true, 0},
		{"two failures", 20 * time.Second, true, 0},
		{"three: the first leaves at 60 s", 30 * time.Second, false, 30 * time.Second},
		{"just before it leaves", 59 * time.Second, false, time.Second},
		{"the first left: one more try", 60 * time.Second, true, 0},
		{"three again: the second leaves at 70 s", 61 * time.Second, false, 9 * time.Second},
		{"all old", 3 * time.Minute, false, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			now := t0.Add(s.at)
			if got := l.Wait("k", now); got != s.wait {
				t.Fatalf("Wait = %v, want %v", got, s.wait)
			}
			if s.fail {
				l.Fail("k", now)
			}
		})
	}
	if l.Len() != 0 {
		t.Errorf("Len = %d after every failure aged out, want 0", l.Len())
	}
	if l.Wait("other", t0) != 0 {
		t.Error("another key waits for k's failures")
	}
}

// TestLimiterBounded: a key keeps at most max timestamps, and a full
// Limiter forgets the key with the fewest recent failures, not the one
// under attack.
func TestLimiterBounded(t *testing.T) {
	l := NewLimiter(5, time.Minute, 10)
	for i := range 50 {
		l.Fail("target", t0.Add(time.Duration(i)*time.Millisecond))
	}
	if n := len(l.m["target"]); n != 5 {
		t.Errorf("target keeps %d timestamps, want 5", n)
	}
	for i := range 1000 {
		l.Fail("spray"+strconv.Itoa(i), t0.Add(time.Second))
		if l.Len() > 10 {
			t.Fatalf("after %d sprayed keys: %d keys, want at most 10", i+1, l.Len())
		}
	}
	if l.Wait("target", t0.Add(2*time.Second)) == 0 {
		t.Error("the spray evicted the key under attack")
	}
	// Keys whose failures aged out go first.
	l.Fail("late", t0.Add(2*time.Minute))
	if l.Len() != 1 {
		t.Errorf("Len = %d after the window passed, want 1 (late)", l.Len())
	}
}

// TestGuard: the address and each scope count apart; a wait is the
// longest of them; a failure counts once for the address.
func TestGuard(t *testing.T) {
	now := t0
	g := NewGuard()
	g.Now = func() time.Time { return now }
	for i := range PerAddress {
		if w := g.Wait("10.0.0.1", Tenant("acme")); w != 0 {
			t.Fatalf("try %d: wait %v", i, w)
		}
		g.Fail("10.0.0.1", Tenant("acme"), Admin)
	}
	if w := g.Wait("10.0.0.1", Tenant("beta")); w != Window {
		t.Errorf("the address after %d failures: wait %v, want %v", PerAddress, w, Window)
	}
	if w := g.Wait("10.0.0.2", Tenant("acme")); w != 0 {
		t.Errorf("another address for acme after %d failures: wait %v, want 0", PerAddress, w)
	}
	// Many addresses, one tenant: the tenant's count stops them.
	for i := PerAddress; i < PerScope; i++ {
		now = now.Add(time.Millisecond)
		g.Fail("10.1.0."+strconv.Itoa(i), Tenant("acme"))
	}
	if w := g.Wait("10.9.9.9", Tenant("acme")); w <= 0 || w > Window {
		t.Errorf("acme after %d failures from many addresses: wait %v, want up to %v", PerScope, w, Window)
	}
	if w := g.Wait("10.9.9.9", Tenant("beta")); w != 0 {
		t.Errorf("beta waits for acme's failures: %v", w)
	}
	if w := g.Wait("10.9.9.9", Tenant("beta"), Tenant("acme")); w == 0 {
		t.Error("a try that could be acme's does not wait for acme")
	}
	now = now.Add(Window)
	if w := g.Wait("10.0.0.1", Tenant("acme")); w != 0 {
		t.Errorf("a window later: wait %v, want 0", w)
	}
}

func TestTenant(t *testing.T) {
	cases := []struct{ id, want string }{
		{"", "tenant:"}, {"acme", "tenant:acme"}, {"../acme", "tenant?"}, {"a b", "tenant?"},
	}
	for _, c := range cases {
		if got := Tenant(c.id); got != c.want {
			t.Errorf("Tenant(%q) = %q, want %q", c.id, got, c.want)
		}
	}
	if Tenant("") == Admin || Tenant("admin") == Admin {
		t.Error("a tenant scope collides with the admin scope")
	}
}

func TestAddr(t *testing.T) {
	cases := []struct{ remote, want string }{
		{"192.0.2.7:40000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:40000", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[::1]:1", "::/64"},
		{"@", "@"}, // a unix socket peer
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if got := Addr(r); got != c.want {
			t.Errorf("Addr(%q) = %q, want %q", c.remote, got, c.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	cases := []struct {
		wait time.Duration
		want string
	}{
		{0, "1"}, {time.Millisecond, "1"}, {time.Second, "1"}, {time.Second + 1, "2"}, {59500 * time.Millisecond, "60"},
	}
	for _, c := range cases {
		if got := RetryAfter(c.wait); got != c.want {
			t.Errorf("RetryAfter(%v) = %q, want %q", c.wait, got, c.want)
		}
	}
}
