package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"talon/internal/session"
)

// TestSessionLocks checks that runs of one session exclude each other,
// runs of different sessions do not, a waiter leaves when its context
// ends, and no lock outlives its last user.
func TestSessionLocks(t *testing.T) {
	var l sessionLocks
	// Deadlines here only turn a deadlock into a failure; nothing is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	unlockA, err := l.lock(ctx, lockKey{session: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// Other sessions take their locks while "a" is held — with striped
	// locks some of these shared a's stripe and waited.
	for i := range 1000 {
		u, err := l.lock(ctx, lockKey{session: fmt.Sprint("other-", i)})
		if err != nil {
			t.Fatalf("session %d waited for session a: %v", i, err)
		}
		u()
	}
	// The same session waits; a waiter whose client leaves gives up.
	gone, leave := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := l.lock(gone, lockKey{session: "a"})
		done <- err
	}()
	leave()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter on a held session: %v, want context.Canceled", err)
	}
	unlockA()
	if n := l.len(); n != 0 {
		t.Fatalf("%d locks left after every run ended", n)
	}

	// Many runs on a few sessions: never two in one session at once.
	var inside [4]atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := i % len(inside)
			u, err := l.lock(ctx, lockKey{session: fmt.Sprint("s", k)})
			if err != nil {
				t.Error(err)
				return
			}
			if n := inside[k].Add(1); n != 1 {
				t.Errorf("%d runs inside session s%d", n, k)
			}
			inside[k].Add(-1)
			u()
		}()
	}
	wg.Wait()
	if n := l.len(); n != 0 {
		t.Fatalf("%d locks left after every run ended", n)
	}
}

// TestSessionLockKey: one session of one tenant is one lock; the same
// session key in another tenant is another.
func TestSessionLockKey(t *testing.T) {
	acme, beta := &tenant{id: "acme"}, &tenant{id: "beta"}
	if sessionLockKey(acme, "agent:main:main") != sessionLockKey(acme, "agent:main:main") {
		t.Error("one session, two lock keys")
	}
	if sessionLockKey(acme, "agent:main:main") == sessionLockKey(beta, "agent:main:main") {
		t.Error("two tenants' sessions share a lock key")
	}
	// A joined string could not tell these apart.
	if sessionLockKey(&tenant{id: "a\x00b"}, "c") == sessionLockKey(&tenant{id: "a"}, "b\x00c") {
		t.Error("lock keys collide across the tenant/session boundary")
	}
}

// TestHTTPRunWaitsForTheSessionLock: the HTTP endpoint takes the lock the
// WS chat methods and resets take (sessionLockKey), so while it is held an
// HTTP turn on that session waits, before any model call, and runs once
// it is released.
func TestHTTPRunWaitsForTheSessionLock(t *testing.T) {
	llm := newScriptedLLM(t)
	llm.push(scripted{Content: "done"})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(fakeModelConfig(llm, "")))
	ts := startServer(t, dir, nil)
	// Deadlines here only turn a deadlock into a failure; nothing is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := sessionLockKey(ts.srv.defaultTenant, session.OpenAIUser("main", "locked"))
	unlock, err := ts.srv.locks.lock(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan reply, 1)
	go func() {
		got <- ts.post(nil, `{"model":"openclaw","user":"locked","messages":[{"role":"user","content":"hi"}]}`)
	}()
	for users(&ts.srv.locks, k) < 2 { // the HTTP run has joined the queue
		if ctx.Err() != nil {
			unlock()
			t.Fatal("the HTTP run never waited for the session's lock")
		}
		time.Sleep(time.Millisecond)
	}
	if n := llm.count(); n != 0 {
		t.Fatalf("the model was called %d times while the session was held", n)
	}
	unlock()
	if rep := <-got; rep.status != http.StatusOK || rep.content != "done" {
		t.Fatalf("HTTP run after the lock was released: %d %q %s", rep.status, rep.content, rep.body)
	}
	if n := ts.srv.locks.len(); n != 0 {
		t.Fatalf("%d locks left after the run", n)
	}
}

// users is how many runs hold or wait for k.
func users(l *sessionLocks, k lockKey) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.m[k]; e != nil {
		return e.refs
	}
	return 0
}
