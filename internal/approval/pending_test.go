package approval

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) emit(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Name)
	}
	return out
}

func allowlistReq(cmd string) Request {
	return Request{Command: cmd, Host: HostGateway, Security: SecurityAllowlist, Ask: AskOnMiss, AskFallback: SecurityDeny,
		AgentID: "main", ResolvedPath: "/usr/bin/rg", ResolvedPaths: []string{"/usr/bin/rg"}, SessionKey: "agent:main:main"}
}

func newManager(t *testing.T, approvers int) (*Manager, *recorder) {
	t.Helper()
	s, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	return &Manager{Timeout: time.Minute, Approvers: func(Request) int { return approvers }, Emit: rec.emit, Store: s}, rec
}

func wait(t *testing.T, p *Pending) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResolveDecisions(t *testing.T) {
	ctx := context.Background()
	t.Run("deny", func(t *testing.T) {
		m, rec := newManager(t, 1)
		p, err := m.Request(allowlistReq("rg x"))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Resolve(ctx, p.ID, DecisionDeny, "op"); err != nil {
			t.Fatal(err)
		}
		if r := wait(t, p); r.Run || r.Reason != "user-denied" || r.Decision != DecisionDeny {
			t.Errorf("result %+v", r)
		}
		if got := strings.Join(rec.names(), ","); got != EventRequested+","+EventResolved {
			t.Errorf("events %s", got)
		}
		res := rec.events[1].Payload.(ResolvedPayload)
		if res.ID != p.ID || *res.Decision != DecisionDeny || res.ResolvedBy != "op" || res.Ts == 0 || res.Request.Command != "rg x" {
			t.Errorf("resolved payload %+v", res)
		}
		req := rec.events[0].Payload.(RequestedPayload)
		if req.ID != p.ID || req.ExpiresAtMs-req.CreatedAtMs != time.Minute.Milliseconds() || req.Request.SessionKey != "agent:main:main" {
			t.Errorf("requested payload %+v", req)
		}
	})
	t.Run("allow-once persists nothing", func(t *testing.T) {
		m, _ := newManager(t, 1)
		p, _ := m.Request(allowlistReq("rg x"))
		if err := m.Resolve(ctx, p.ID[:8], DecisionAllowOnce, ""); err != nil {
			t.Fatal(err)
		}
		if r := wait(t, p); !r.Run || r.Decision != DecisionAllowOnce {
			t.Errorf("result %+v", r)
		}
		if m.Store.Load().Exists {
			t.Error("allow-once wrote the approvals file")
		}
	})
	t.Run("allow-always persists path and marker", func(t *testing.T) {
		m, _ := newManager(t, 1)
		for range 2 { // the second time updates, not duplicates
			p, _ := m.Request(allowlistReq("rg -n TODO"))
			if err := m.Resolve(ctx, p.ID, DecisionAllowAlways, ""); err != nil {
				t.Fatal(err)
			}
			if r := wait(t, p); !r.Run || r.PersistErr != nil {
				t.Fatalf("result %+v", r)
			}
		}
		snap := m.Store.Load()
		al := snap.File.Agents["main"].Allowlist
		if len(al) != 2 || al[0].Pattern != "/usr/bin/rg" || al[0].Source != "allow-always" || al[0].LastUsedCommand != "rg -n TODO" ||
			al[0].LastResolvedPath != "/usr/bin/rg" || al[0].ID == "" || al[1].Pattern != CommandMarker("rg -n TODO") {
			t.Errorf("allowlist %+v", al)
		}
	})
	t.Run("allow-always under full security persists only the exact-command marker", func(t *testing.T) {
		m, _ := newManager(t, 1)
		req := allowlistReq("rg x")
		req.Security, req.AskFallback = SecurityFull, SecurityFull
		p, _ := m.Request(req)
		m.Resolve(ctx, p.ID, DecisionAllowAlways, "")
		if r := wait(t, p); !r.Run || r.PersistErr != nil {
			t.Errorf("result %+v", r)
		}
		al := m.Store.Load().File.Agents["main"].Allowlist
		if len(al) != 1 || al[0].Pattern != CommandMarker("rg x") {
			t.Errorf("allowlist %+v", al)
		}
	})
	t.Run("allow-always under deny security persists nothing", func(t *testing.T) {
		m, _ := newManager(t, 1)
		req := allowlistReq("rg x")
		req.Security, req.AskFallback = SecurityDeny, SecurityDeny
		p, _ := m.Request(req)
		m.Resolve(ctx, p.ID, DecisionAllowAlways, "")
		if r := wait(t, p); !r.Run || m.Store.Load().Exists {
			t.Errorf("result %+v", r)
		}
	})
	t.Run("a request's own timeout wins over the manager's", func(t *testing.T) {
		m, _ := newManager(t, 1)
		req := allowlistReq("rg x")
		req.Timeout = 3 * time.Minute
		p, _ := m.Request(req)
		if got := p.ExpiresAtMs - p.CreatedAtMs; got != (3 * time.Minute).Milliseconds() {
			t.Errorf("expires after %d ms", got)
		}
		m.Resolve(ctx, p.ID, DecisionDeny, "")
	})
	t.Run("allow-always not offered with ask always", func(t *testing.T) {
		m, _ := newManager(t, 1)
		req := allowlistReq("rg x")
		req.Ask = AskAlways
		p, _ := m.Request(req)
		if err := m.Resolve(ctx, p.ID, DecisionAllowAlways, ""); err == nil || !strings.Contains(err.Error(), "not offered") {
			t.Fatalf("err = %v", err)
		}
		if err := m.Resolve(ctx, p.ID, DecisionAllowOnce, ""); err != nil {
			t.Fatalf("still pending after the refused decision: %v", err)
		}
	})
	t.Run("an unavailable decision is refused and says why", func(t *testing.T) {
		m, rec := newManager(t, 1)
		req := allowlistReq("git status")
		req.UnavailableDecisions, req.UnavailableWhy = []string{DecisionAllowAlways}, "git is configured by .git/config"
		p, _ := m.Request(req)
		err := m.Resolve(ctx, p.ID, DecisionAllowAlways, "")
		if err == nil || err.Error() != "allow-always is not offered for this command (git is configured by .git/config); use allow-once or deny" {
			t.Fatalf("err = %v", err)
		}
		if err := m.Resolve(ctx, p.ID, DecisionAllowOnce, ""); err != nil {
			t.Fatalf("still pending after the refused decision: %v", err)
		}
		if r := wait(t, p); !r.Run || r.Decision != DecisionAllowOnce {
			t.Errorf("result %+v", r)
		}
		got := rec.events[0].Payload.(RequestedPayload).Request.UnavailableDecisions
		if len(got) != 1 || got[0] != DecisionAllowAlways {
			t.Errorf("requested event's unavailableDecisions = %v", got)
		}
		if a := m.Store.Load().File.Agents["main"]; a != nil && len(a.Allowlist) > 0 {
			t.Errorf("something was persisted: %+v", a.Allowlist)
		}
	})
	t.Run("allow-always with a relative path fails to persist but runs", func(t *testing.T) {
		m, _ := newManager(t, 1)
		req := allowlistReq("./bin/x")
		req.ResolvedPaths = []string{"bin/x"}
		p, _ := m.Request(req)
		m.Resolve(ctx, p.ID, DecisionAllowAlways, "")
		if r := wait(t, p); !r.Run || r.PersistErr == nil || !strings.Contains(r.PersistErr.Error(), "not absolute") {
			t.Errorf("result %+v", r)
		}
	})
}

func TestResolveErrors(t *testing.T) {
	ctx := context.Background()
	m, _ := newManager(t, 1)
	p, _ := m.Request(allowlistReq("rg x"))
	if err := m.Resolve(ctx, p.ID, "allow", ""); err == nil || !strings.HasPrefix(err.Error(), "invalid decision") {
		t.Errorf("bad decision: %v", err)
	}
	if err := m.Resolve(ctx, "zzzz", DecisionDeny, ""); err == nil || !strings.HasPrefix(err.Error(), "unknown or expired approval id") {
		t.Errorf("unknown id: %v", err)
	}
	if err := m.Resolve(ctx, " ", DecisionDeny, ""); err == nil || !strings.HasPrefix(err.Error(), "unknown or expired approval id") {
		t.Errorf("empty id: %v", err)
	}
	// Ambiguous: force two ids with one prefix.
	m.mu.Lock()
	r := m.pending[p.ID]
	delete(m.pending, p.ID)
	a, b := &record{p: r.p, req: r.req, timer: r.timer}, &record{p: &Pending{ID: "abcd-2", done: make(chan struct{})}, req: r.req, timer: time.NewTimer(time.Hour)}
	a.p.ID = "abcd-1"
	m.pending["abcd-1"], m.pending["abcd-2"] = a, b
	m.mu.Unlock()
	if err := m.Resolve(ctx, "abcd", DecisionDeny, ""); err == nil || !strings.HasPrefix(err.Error(), "ambiguous approval id prefix; ") {
		t.Errorf("ambiguous: %v", err)
	}
	if err := m.Resolve(ctx, "ABCD-1", DecisionDeny, ""); err != nil {
		t.Errorf("full id (any case): %v", err)
	}
	if err := m.Resolve(ctx, "abcd-1", DecisionDeny, ""); err == nil || !strings.HasPrefix(err.Error(), "unknown or expired approval id") {
		t.Errorf("second resolve: %v", err)
	}
	if _, err := m.Request(Request{Command: "  "}); err == nil {
		t.Error("empty command accepted")
	}
	if _, err := m.Request(Request{Command: "ls", Security: "full", Ask: "off"}); err == nil {
		t.Error("missing askFallback accepted")
	}
}

func TestFallback(t *testing.T) {
	cases := []struct {
		fallback Security
		hit      bool
		run      bool
		reason   string
	}{
		{SecurityFull, false, true, ""},
		{SecurityAllowlist, true, true, ""},
		{SecurityAllowlist, false, false, "approval-timeout (allowlist-miss)"},
		{SecurityDeny, true, false, "approval-timeout"},
	}
	for _, c := range cases {
		req := allowlistReq("rg x")
		req.AskFallback, req.Hit = c.fallback, c.hit
		t.Run("no approver/"+string(c.fallback), func(t *testing.T) {
			m, rec := newManager(t, 0)
			p, err := m.Request(req)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			default:
				t.Fatal("with no approver the request must end at once")
			}
			if r := p.Result(); r.Run != c.run || r.Reason != c.reason || r.Decision != "" {
				t.Errorf("result %+v", r)
			}
			if len(rec.names()) != 0 {
				t.Errorf("events with nobody to receive them: %v", rec.names())
			}
		})
		t.Run("timeout/"+string(c.fallback), func(t *testing.T) {
			m, rec := newManager(t, 1)
			m.Timeout = 20 * time.Millisecond
			p, _ := m.Request(req)
			if r := wait(t, p); r.Run != c.run || r.Reason != c.reason {
				t.Errorf("result %+v", r)
			}
			if err := m.Resolve(context.Background(), p.ID, DecisionAllowOnce, ""); err == nil {
				t.Error("resolved after expiry")
			}
			names := rec.names()
			if len(names) != 2 || names[1] != EventResolved || rec.events[1].Payload.(ResolvedPayload).Decision != nil {
				t.Errorf("events %v", names)
			}
		})
	}
	var nilApprovers Manager
	p, _ := nilApprovers.Request(allowlistReq("rg x"))
	if r := p.Result(); r.Run {
		t.Errorf("a Manager without Approvers must fall back at once, got %+v", r)
	}
}

// TestConcurrentResolve races many resolvers and the expiry timer on each
// approval: exactly one ends it. Run with -race.
func TestConcurrentResolve(t *testing.T) {
	m, _ := newManager(t, 1)
	m.Timeout = 5 * time.Millisecond
	var wg sync.WaitGroup
	for range 50 {
		p, err := m.Request(allowlistReq("rg x"))
		if err != nil {
			t.Fatal(err)
		}
		var wins atomic.Int32
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.Resolve(context.Background(), p.ID, DecisionAllowOnce, ""); err == nil {
					wins.Add(1)
				} else if !strings.HasPrefix(err.Error(), "unknown or expired") {
					t.Error(err)
				}
			}()
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.List() }()
		wg.Wait()
		r := wait(t, p)
		if w := wins.Load(); w > 1 || (w == 1) != (r.Decision == DecisionAllowOnce) {
			t.Fatalf("%d resolves won; result %+v", w, r)
		}
	}
	if len(m.List()) != 0 {
		t.Errorf("left pending: %v", m.List())
	}
}

func TestWaitHonoursContext(t *testing.T) {
	m, _ := newManager(t, 1)
	p, _ := m.Request(allowlistReq("rg x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if l := m.List(); len(l) != 1 || l[0].ID != p.ID {
		t.Errorf("List = %+v", l)
	}
}
