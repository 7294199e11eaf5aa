package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// events is a sink that keeps what it was given, in order.
type events struct {
	mu   sync.Mutex
	got  []string
	fail error
}

func (e *events) sink(_ context.Context, agentID, key, text string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		return e.fail
	}
	e.got = append(e.got, agentID+" "+key+": "+text)
	return nil
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

func newService(t *testing.T) (*Service, *events) {
	t.Helper()
	ev := &events{}
	s, err := NewService(t.TempDir(), ev.sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, ev
}

func TestNewServiceNeedsASink(t *testing.T) {
	if _, err := NewService(t.TempDir(), nil); err == nil {
		t.Fatal("no error without a sink")
	}
	if _, err := NewService("", func(context.Context, string, string, string) error { return nil }); err == nil {
		t.Fatal("no error without a state dir")
	}
}

// TestHoldDefersEvents: an event posted while a turn holds the session is
// written when the last hold ends, in order, and other sessions are not
// held up.
func TestHoldDefersEvents(t *testing.T) {
	s, ev := newService(t)
	cases := []struct {
		name  string
		steps func()
		want  []string
	}{
		{"no hold: at once", func() {
			s.Post("main", "agent:main:a", "one")
		}, []string{"main agent:main:a: one"}},
		{"held: after release", func() {
			release := s.Hold("main", "agent:main:a")
			s.Post("main", "agent:main:a", "two")
			s.Post("main", "agent:main:a", "three")
			if n := len(ev.list()); n != 0 {
				t.Errorf("%d events written during the hold", n)
			}
			release()
			release() // a second call does nothing
		}, []string{"main agent:main:a: two", "main agent:main:a: three"}},
		{"nested holds: after the last", func() {
			r1 := s.Hold("main", "agent:main:a")
			r2 := s.Hold("MAIN", "Agent:Main:A") // the same session, as the store compares keys
			s.Post("main", "agent:main:a", "four")
			r1()
			if n := len(ev.list()); n != 0 {
				t.Errorf("%d events written while a hold remained", n)
			}
			r2()
		}, []string{"main agent:main:a: four"}},
		{"another session is not held", func() {
			release := s.Hold("main", "agent:main:a")
			s.Post("main", "agent:main:b", "five")
			s.Post("ops", "agent:main:a", "six")
			release()
		}, []string{"main agent:main:b: five", "ops agent:main:a: six"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev.mu.Lock()
			ev.got = nil
			ev.mu.Unlock()
			c.steps()
			if got := ev.list(); !slices.Equal(got, c.want) {
				t.Errorf("events %q, want %q", got, c.want)
			}
		})
	}
	s.mu.Lock()
	left := len(s.sessions)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d session entries left after every hold and post ended", left)
	}
}

// TestHoldRace: many runs and posts on one session; every event is
// written exactly once, never while a hold is active.
func TestHoldRace(t *testing.T) {
	ev := &events{}
	var s *Service
	var active sync.Mutex
	holds := 0
	sink := func(ctx context.Context, a, k, text string) error {
		active.Lock()
		h := holds
		active.Unlock()
		if h != 0 {
			return fmt.Errorf("event %q written while %d holds were active", text, h)
		}
		return ev.sink(ctx, a, k, text)
	}
	s, err := NewService(t.TempDir(), sink)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			release := s.Hold("main", "k")
			active.Lock()
			holds++
			active.Unlock()
			active.Lock()
			holds--
			active.Unlock()
			release()
		}()
		go func() {
			defer wg.Done()
			if err := s.Post("main", "k", fmt.Sprint(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := len(ev.list()); n != 50 {
		t.Errorf("%d events written, want 50", n)
	}
}

func TestPostReportsSinkErrors(t *testing.T) {
	s, ev := newService(t)
	ev.fail = errors.New("disk full")
	s.Log = slog.New(slog.DiscardHandler)
	if err := s.Post("main", "agent:main:main", "x"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v", err)
	}
}

// TestClose: pending approvals end with gateway-shutdown, background work
// sees its context end and is waited for, and nothing new starts.
func TestClose(t *testing.T) {
	s, _ := newService(t)
	s.Manager.Approvers = func(Request) int { return 1 }
	p, err := s.Manager.Request(allowlistReq("rg x"))
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan string, 1)
	if err := s.Go(func(ctx context.Context) {
		r, _ := p.Wait(ctx)
		<-ctx.Done()
		finished <- r.Reason
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	select {
	case reason := <-finished:
		if reason != "gateway-shutdown" {
			t.Errorf("reason %q", reason)
		}
	default:
		t.Fatal("Close returned before the background work did")
	}
	if err := s.Go(func(context.Context) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Go after Close: %v", err)
	}
	if _, err := s.Manager.Request(allowlistReq("rg y")); !errors.Is(err, ErrClosed) {
		t.Errorf("Request after Close: %v", err)
	}
	if err := s.Resolve(context.Background(), p.ID, DecisionAllowOnce, ""); err == nil {
		t.Error("resolved an approval after Close")
	}
	s.Close() // twice is fine
}

func TestRecordUse(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	f := Empty()
	f.Agents["*"] = &Agent{Allowlist: []Entry{{ID: "star", Pattern: "/usr/bin/ls"}}}
	f.Agents["main"] = &Agent{Allowlist: []Entry{{ID: "own", Pattern: "/usr/bin/grep"}, {ID: "other", Pattern: "/usr/bin/rg"}}}
	if _, err := s.Store.Save(ctx, f, ""); err != nil {
		t.Fatal(err)
	}
	before := s.Store.Load().Hash
	now := time.UnixMilli(1737150000000)
	err := s.RecordUse(ctx, []Use{
		{EntryID: "star", Command: "ls | grep x", ResolvedPath: "/usr/bin/ls"},
		{EntryID: "own", Command: "ls | grep x", ResolvedPath: "/usr/bin/grep"},
		{EntryID: "gone", Command: "x", ResolvedPath: "/x"},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Store.Load()
	if snap.Hash == before {
		t.Error("the file's hash did not change")
	}
	star, own, other := snap.File.Agents["*"].Allowlist[0], snap.File.Agents["main"].Allowlist[0], snap.File.Agents["main"].Allowlist[1]
	if star.LastUsedAt != now.UnixMilli() || star.LastUsedCommand != "ls | grep x" || star.LastResolvedPath != "/usr/bin/ls" {
		t.Errorf("star entry %+v", star)
	}
	if own.LastResolvedPath != "/usr/bin/grep" || own.LastUsedAt != now.UnixMilli() {
		t.Errorf("own entry %+v", own)
	}
	if other.LastUsedAt != 0 {
		t.Errorf("an unused entry was stamped: %+v", other)
	}
	if err := s.RecordUse(ctx, nil, now); err != nil {
		t.Errorf("no uses: %v", err)
	}
}
