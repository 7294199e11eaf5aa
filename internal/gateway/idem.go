package gateway

import (
	"sync"
	"time"

	"talon/protocol"
)

// The idempotency cache's bounds are upstream's (spec §1.7): a retry
// within five minutes of the answer gets the first request's answer.
const (
	idemTTL = 5 * time.Minute
	idemMax = 1000
)

// idemCache remembers the answers of side-effecting requests by key
// ("chat:<idempotencyKey>", "agent:<idempotencyKey>"), so that a client
// retrying a request (after a reconnect, say) gets the first answer
// instead of a second run. An entry is pending from begin until finish;
// a finished one expires idemTTL after its answer, and beyond idemMax
// finished entries the oldest go. Pending entries are bounded by the runs
// in flight, which own them, so they are never evicted.
type idemCache struct {
	mu       sync.Mutex
	m        map[string]*idemEntry
	finished []*idemEntry // in the order they finished: the oldest first
}

// idemEntry is one request's answer, or the run still producing it.
type idemEntry struct {
	key string
	run *chatRun // the run behind the request, if any; set once, by begin

	// Set by finish; read under the cache's lock.
	done    bool
	at      time.Time
	payload any
	err     *protocol.Error
}

// begin returns the entry of key: the existing one (fresh false), pending
// or finished, or a new pending one (fresh true) for run (nil for a
// request without one) that the caller must finish or forget.
func (c *idemCache) begin(key string, run *chatRun, now time.Time) (e *idemEntry, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(now)
	if e := c.m[key]; e != nil {
		return e, false
	}
	if c.m == nil {
		c.m = map[string]*idemEntry{}
	}
	e = &idemEntry{key: key, run: run}
	c.m[key] = e
	return e, true
}

// finish records the answer of a pending entry; its TTL starts now.
func (c *idemCache) finish(e *idemEntry, payload any, err *protocol.Error, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.done {
		return
	}
	e.done, e.at, e.payload, e.err = true, now, payload, err
	if c.m[e.key] == e {
		c.finished = append(c.finished, e)
	}
	c.expire(now)
}

// forget drops a pending entry whose request was refused before it did
// anything, so that a corrected retry with the same key is served.
func (c *idemCache) forget(e *idemEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[e.key] == e && !e.done {
		delete(c.m, e.key)
	}
}

// answer is a finished entry's answer; ok is false while it is pending.
func (c *idemCache) answer(e *idemEntry) (payload any, err *protocol.Error, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return e.payload, e.err, e.done
}

// lookup returns the entry of key, if any (expired ones are gone).
func (c *idemCache) lookup(key string, now time.Time) *idemEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(now)
	return c.m[key]
}

// pending says an entry waits for its answer.
func (c *idemCache) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.m {
		if !e.done {
			return true
		}
	}
	return false
}

// len is how many entries the cache holds; for tests.
func (c *idemCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// expire drops finished entries older than idemTTL and, beyond idemMax,
// the oldest finished ones. c.mu is held.
func (c *idemCache) expire(now time.Time) {
	n := 0
	for n < len(c.finished) {
		e := c.finished[n]
		if now.Sub(e.at) < idemTTL && len(c.finished)-n <= idemMax {
			break
		}
		if c.m[e.key] == e {
			delete(c.m, e.key)
		}
		c.finished[n] = nil
		n++
	}
	c.finished = c.finished[n:]
}
