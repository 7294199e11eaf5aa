package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSessionLocks checks that runs of one session exclude each other,
// runs of different sessions do not, a waiter leaves when its context
// ends, and no lock outlives its last user.
func TestSessionLocks(t *testing.T) {
	var l sessionLocks
	// Deadlines here only turn a deadlock into a failure; nothing is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	unlockA, err := l.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Other sessions take their locks while "a" is held — with striped
	// locks some of these shared a's stripe and waited.
	for i := range 1000 {
		u, err := l.lock(ctx, fmt.Sprint("other-", i))
		if err != nil {
			t.Fatalf("session %d waited for session a: %v", i, err)
		}
		u()
	}
	// The same session waits; a waiter whose client leaves gives up.
	gone, leave := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := l.lock(gone, "a")
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
			u, err := l.lock(ctx, fmt.Sprint("s", k))
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
