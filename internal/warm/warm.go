// Package warm is the policy that bounds how many tenants a gateway keeps
// open at once: which warm tenant to close when a cold one must open (the
// least recently used that is not busy), which to close because they have
// been idle long enough, and how many the process's file limit allows.
// It does no I/O: the gateway tells it what each tenant is doing.
package warm

import (
	"slices"
	"time"
)

// Entry is one warm tenant as the policy sees it.
type Entry[K comparable] struct {
	Key K
	// Used is when the tenant's last use began or ended.
	Used time.Time
	// Busy says the tenant must stay open whatever its age: it is in use,
	// has a client or channel connected, work running or due soon.
	Busy bool
}

// Idle returns the keys of the entries that are not busy and were last
// used at least idle before now, the longest idle first. An idle of 0
// closes nothing.
func Idle[K comparable](es []Entry[K], now time.Time, idle time.Duration) []K {
	if idle <= 0 {
		return nil
	}
	var out []Entry[K]
	for _, e := range es {
		if !e.Busy && now.Sub(e.Used) >= idle {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b Entry[K]) int { return a.Used.Compare(b.Used) })
	keys := make([]K, len(out))
	for i, e := range out {
		keys[i] = e.Key
	}
	return keys
}

// LRU returns the key of the least recently used entry that is not busy;
// ok is false when every entry is busy.
func LRU[K comparable](es []Entry[K]) (key K, ok bool) {
	var best *Entry[K]
	for i := range es {
		if e := &es[i]; !e.Busy && (best == nil || e.Used.Before(best.Used)) {
			best = e
		}
	}
	if best == nil {
		return key, false
	}
	return best.Key, true
}

// Files is a process's file budget for warm tenants.
type Files struct {
	// Limit is the process's RLIMIT_NOFILE (the soft limit in force).
	Limit int
	// PerTenant is how many descriptors a warm tenant holds.
	PerTenant int
}

// MinReserve is the fewest descriptors kept for everything that is not a
// warm tenant: listeners, client connections, the default tenant, logs,
// model calls.
const MinReserve = 64

// Reserve is how many descriptors stay free for the rest of the process:
// a quarter of the limit, at least MinReserve.
func (f Files) Reserve() int { return max(MinReserve, f.Limit/4) }

// Max is how many tenants may be warm at once within the file limit, at
// least 1 so that a tiny limit still serves one tenant at a time.
func (f Files) Max() int {
	if f.PerTenant <= 0 {
		return 1
	}
	return max(1, (f.Limit-f.Reserve())/f.PerTenant)
}

// Room says one more tenant fits beside open descriptors already open.
func (f Files) Room(open int) bool {
	return open+f.PerTenant <= f.Limit-f.Reserve()
}
