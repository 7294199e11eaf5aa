package provider

import (
	"sync"
	"time"
)

// Cool-down lengths, as OpenClaw's profiles have them: 30 seconds after
// a first failure, a minute after a second, five minutes from the third
// on; the count starts again after a success or when the last failure is
// older than coolReset.
var coolSteps = []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}

const (
	coolReset = time.Hour
	// maxCooling bounds the entries a Cooldowns keeps: provider ids and
	// profiles come from a tenant's config, so past this many the expired
	// ones are dropped and, if none is, the oldest.
	maxCooling = 256
)

// Cooldowns remembers, for one tenant and the life of the process, which
// providers and keys failed lately, so that a chain skips a dead provider
// at once instead of waiting for it on every turn; after its cool-down
// the next turn tries it again. It is safe for concurrent use.
type Cooldowns struct {
	now func() time.Time

	mu sync.Mutex
	m  map[string]*cooling
}

type cooling struct {
	until, last time.Time
	failures    int
	reason      Reason
}

// NewCooldowns returns an empty Cooldowns reading the time from now (nil:
// time.Now).
func NewCooldowns(now func() time.Time) *Cooldowns {
	if now == nil {
		now = time.Now
	}
	return &Cooldowns{now: now, m: map[string]*cooling{}}
}

// coolKey names what a cool-down applies to: a provider (profile "") or
// one key of it.
func coolKey(provider, profile string) string { return provider + "\x00" + profile }

// fail starts or lengthens the cool-down of key after a failure of reason;
// wait is the server's Retry-After, which lengthens it, up to the longest
// step.
func (c *Cooldowns) fail(key string, reason Reason, wait time.Duration) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil {
		if len(c.m) >= maxCooling {
			c.evict(now)
		}
		e = &cooling{}
		c.m[key] = e
	}
	if now.Sub(e.last) > coolReset {
		e.failures = 0
	}
	d := coolSteps[min(e.failures, len(coolSteps)-1)]
	d = max(d, min(wait, coolSteps[len(coolSteps)-1]))
	e.failures++
	e.last, e.until, e.reason = now, now.Add(d), reason
}

// evict drops the expired entries, or the one that expires first when
// none has; c.mu is held.
func (c *Cooldowns) evict(now time.Time) {
	var first string
	for k, e := range c.m {
		if !now.Before(e.until) && now.Sub(e.last) > coolReset {
			delete(c.m, k)
		} else if first == "" || e.until.Before(c.m[first].until) {
			first = k
		}
	}
	if len(c.m) >= maxCooling {
		delete(c.m, first)
	}
}

// ok forgets key's failures after a success.
func (c *Cooldowns) ok(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}

// until is when key's cool-down ends and why it began; ok is false when
// key is not cooling down.
func (c *Cooldowns) until(key string) (time.Time, Reason, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil || !now.Before(e.until) {
		return time.Time{}, "", false
	}
	return e.until, e.reason, true
}
