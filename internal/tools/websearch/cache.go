package websearch

import (
	"container/list"
	"sync"
	"time"
)

// CacheEntries bounds the result cache: the least recently used entry
// goes first.
const CacheEntries = 256

// cache is a bounded LRU of results (resultsOut or answerOut values), each with the time it was
// stored and the TTL it was stored for.
type cache struct {
	mu    sync.Mutex
	order *list.List // of *cacheEntry, most recent first
	byKey map[string]*list.Element
	max   int
}

type cacheEntry struct {
	key    string
	value  any
	stored time.Time
	ttl    time.Duration
}

func newCache(max int) *cache {
	return &cache{order: list.New(), byKey: map[string]*list.Element{}, max: max}
}

// get returns the entry for key while it is younger than both the TTL it
// was stored with and ttl now: a shorter TTL limits reuse, a longer one
// does not extend an entry (OpenClaw's rule). ttl 0 reads nothing.
func (c *cache) get(key string, now time.Time, ttl time.Duration) (any, bool) {
	if ttl <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	age := now.Sub(e.stored)
	if age < 0 || age >= min(e.ttl, ttl) {
		if age >= e.ttl {
			c.remove(el)
		}
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.value, true
}

// put stores value under key for ttl; ttl 0 stores nothing.
func (c *cache) put(key string, value any, now time.Time, ttl time.Duration) {
	if ttl <= 0 || c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.remove(el)
	}
	c.byKey[key] = c.order.PushFront(&cacheEntry{key: key, value: value, stored: now, ttl: ttl})
	for c.order.Len() > c.max {
		c.remove(c.order.Back())
	}
}

func (c *cache) remove(el *list.Element) {
	c.order.Remove(el)
	delete(c.byKey, el.Value.(*cacheEntry).key)
}

func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
