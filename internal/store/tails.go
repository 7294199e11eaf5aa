package store

import (
	"container/list"
	"slices"
	"sync"
)

// The tail cache keeps the last messages of recently read transcripts in
// memory, decoded. Reading and decoding a long conversation's last 400
// messages on every turn was most of a turn's cost; with the cache a turn
// reads only the rows appended since it last looked (usually the previous
// turn's two or three), through the same indexed query whoever wrote them
// — this process, another one, a restored backup — so the cache cannot go
// stale. That rests on transcripts being append-only with gap-free
// sequence numbers under session ids that are never reused: nothing
// updates or deletes a transcript row (a trigger refuses updates).

const (
	// maxTail is the most messages kept per session, and the largest limit
	// served from the cache; larger reads go to the database alone.
	maxTail = 1000
	// defaultTailBytes bounds the cache, counted as the stored JSON size of
	// the messages it holds (their decoded size is about twice that) plus
	// tailOverhead per session.
	defaultTailBytes = 8 << 20
	tailOverhead     = 512
)

// tail is the end of one transcript.
type tail struct {
	id   string
	recs []Record // consecutive, ending at the last message read
	// whole says recs starts at the transcript's first message.
	whole bool
	size  int // stored JSON bytes of recs
	sizes []int
	elem  *list.Element
}

func (t *tail) lastSeq() int64 {
	if len(t.recs) == 0 {
		return 0
	}
	return t.recs[len(t.recs)-1].Seq
}

// covers reports whether t holds the last limit messages (limit > 0).
func (t *tail) covers(limit int) bool { return t.whole || len(t.recs) >= limit }

// tails is an LRU of transcript tails bounded in bytes. It is safe for
// concurrent use.
type tails struct {
	mu    sync.Mutex
	max   int
	size  int
	byID  map[string]*tail
	order *list.List // front = most recently used
}

func newTails(maxBytes int) *tails {
	return &tails{max: maxBytes, byID: map[string]*tail{}, order: list.New()}
}

// snapshot returns a copy of what is cached for id: its last message's
// number and whether it holds the last limit messages; ok is false when
// nothing is cached.
func (c *tails) snapshot(id string, limit int) (last int64, covers, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.byID[id]
	if t == nil {
		return 0, false, false
	}
	c.order.MoveToFront(t.elem)
	return t.lastSeq(), t.covers(limit), true
}

// extend appends the rows read after seq after to id's tail and returns
// its last limit messages. If the tail has moved on or gone meanwhile (a
// concurrent read of the same session), ok is false and the caller reads
// the database instead.
func (c *tails) extend(id string, after int64, rows []Record, sizes []int, limit int) ([]Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.byID[id]
	if t == nil || t.lastSeq() != after || !t.covers(limit) {
		return nil, false
	}
	t.recs = append(t.recs, rows...)
	t.sizes = append(t.sizes, sizes...)
	for _, n := range sizes {
		t.size += n
		c.size += n
	}
	c.trim(t)
	c.evict()
	return lastN(t.recs, limit), true
}

// holdsFrom reports whether id's tail holds the rows from number from
// on, up to its last, whose number it returns.
func (c *tails) holdsFrom(id string, from int64) (last int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.byID[id]
	if t == nil || !t.from(from) {
		return 0, false
	}
	c.order.MoveToFront(t.elem)
	return t.lastSeq(), true
}

// from reports whether t holds every row from number from on.
func (t *tail) from(from int64) bool {
	return len(t.recs) > 0 && (t.whole || t.recs[0].Seq <= from)
}

// extendFrom appends the rows read after seq after to id's tail, as
// extend does, and returns its rows from number from on with their sizes;
// ok is false when the tail has moved on, gone or no longer holds them.
func (c *tails) extendFrom(id string, after int64, rows []Record, sizes []int, from int64) ([]Record, []int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.byID[id]
	if t == nil || t.lastSeq() != after || !t.from(from) {
		return nil, nil, false
	}
	t.recs = append(t.recs, rows...)
	t.sizes = append(t.sizes, sizes...)
	for _, n := range sizes {
		t.size += n
		c.size += n
	}
	i := 0
	if first := t.recs[0].Seq; from > first {
		i = int(from - first)
	}
	// Taken before trimming: the slices stay valid, since the cache never
	// writes an element again.
	recs, recSizes := slices.Clip(t.recs[i:]), slices.Clip(t.sizes[i:])
	c.trim(t)
	c.evict()
	return recs, recSizes, true
}

// put replaces id's tail with recs, the transcript's last messages as read
// from the database (whole: all of it).
func (c *tails) put(id string, recs []Record, sizes []int, whole bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.byID[id]; old != nil {
		c.drop(old)
	}
	t := &tail{id: id, recs: recs, sizes: sizes, whole: whole, size: tailOverhead}
	for _, n := range sizes {
		t.size += n
	}
	t.elem = c.order.PushFront(t)
	c.byID[id] = t
	c.size += t.size
	c.trim(t)
	c.evict()
}

// trim keeps at most maxTail messages of t.
func (c *tails) trim(t *tail) {
	n := len(t.recs) - maxTail
	if n <= 0 {
		return
	}
	for _, s := range t.sizes[:n] {
		t.size -= s
		c.size -= s
	}
	// Copy so the dropped head can be collected.
	t.recs = append([]Record(nil), t.recs[n:]...)
	t.sizes = append([]int(nil), t.sizes[n:]...)
	t.whole = false
}

// evict drops least recently used tails until the cache fits its bound.
// The most recent one stays even when it alone is larger.
func (c *tails) evict() {
	for c.size > c.max && c.order.Len() > 1 {
		c.drop(c.order.Back().Value.(*tail))
	}
}

func (c *tails) drop(t *tail) {
	c.order.Remove(t.elem)
	delete(c.byID, t.id)
	c.size -= t.size
}

// lastN is the last n records (all when fewer), with no spare capacity:
// appending to it copies. Its elements are never written again by the
// cache — a tail only grows past them or is replaced — so it may be read
// after the lock is released.
func lastN(recs []Record, n int) []Record {
	if len(recs) > n {
		recs = recs[len(recs)-n:]
	}
	return slices.Clip(recs)
}
