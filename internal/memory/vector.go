package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// vecBudget bounds the bytes of vectors one index keeps in memory. Beyond
// it the sets least recently used are dropped, and read again from the
// database when next needed.
const vecBudget = 128 << 20

// maxSetBytes bounds one agent's vectors, which one search holds in
// memory at once: 21,845 chunks of 768 dimensions, 10,922 of 1536, 5,461
// of 3072 (10,000 of 768 take 30 MiB). Chunks beyond it rank by keywords
// alone, so that memory files the model writes cannot make a search
// allocate without bound.
const maxSetBytes = 64 << 20

// maxVectors is how many vectors of dim dimensions an agent may have
// (Index.setBytes is maxSetBytes; tests lower it).
func (ix *Index) maxVectors(dim int) int { return ix.setBytes / (4 * max(dim, 1)) }

// vecSet is an agent's vectors of one model in memory, for ranking: row i
// of data is the unit vector of chunk ids[i]. It is immutable once built.
type vecSet struct {
	gen  uint64 // the agent's write counter when it was read
	dim  int
	ids  []int64
	data []float32
	row  map[int64]int // chunk id → row
	// other counts vectors of another length, which are left out.
	other int
}

func (s *vecSet) bytes() int { return 4*len(s.data) + 16*len(s.ids) }

// vec returns a chunk's vector, nil when it has none.
func (s *vecSet) vec(id int64) []float32 {
	i, ok := s.row[id]
	if !ok {
		return nil
	}
	return s.data[i*s.dim : (i+1)*s.dim]
}

// vecCache holds vecSets by agent and model.
type vecCache struct {
	mu     sync.Mutex
	budget int
	size   int
	tick   uint64
	sets   map[string]*cached
}

type cached struct {
	set  *vecSet
	used uint64
}

func cacheKey(agent, model string, dim int) string {
	return fmt.Sprintf("%s\x00%s\x00%d", agent, model, dim)
}

// get returns the set of key if it was read at gen.
func (c *vecCache) get(key string, gen uint64) *vecSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.sets[key]
	if !ok || e.set.gen != gen {
		return nil
	}
	c.tick++
	e.used = c.tick
	return e.set
}

// put keeps s, dropping the least recently used sets over the budget. A
// set larger than the whole budget is not kept.
func (c *vecCache) put(key string, s *vecSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == nil {
		c.sets = map[string]*cached{}
	}
	if old, ok := c.sets[key]; ok {
		c.size -= old.set.bytes()
		delete(c.sets, key)
	}
	if s.bytes() > c.budget {
		return
	}
	for c.size+s.bytes() > c.budget {
		var oldest string
		var at uint64
		for k, e := range c.sets {
			if oldest == "" || e.used < at {
				oldest, at = k, e.used
			}
		}
		c.size -= c.sets[oldest].set.bytes()
		delete(c.sets, oldest)
	}
	c.tick++
	c.sets[key] = &cached{set: s, used: c.tick}
	c.size += s.bytes()
}

const vectorsSQL = `
SELECT c.id, v.vec FROM chunks c
JOIN vectors v ON v.agent = c.agent AND v.model = ? AND v.hash = c.hash
WHERE c.agent = ? ORDER BY c.id LIMIT ?`

// vectors returns the agent's chunk vectors of the model and length dim,
// at most ix.maxVectors(dim) of them in chunk order, from memory when its
// rows have not changed since they were read.
func (ix *Index) vectors(ctx context.Context, agent, model string, dim int) (*vecSet, error) {
	key := cacheKey(agent, model, dim)
	gen := ix.gen(agent).Load() // before reading: a later write makes the set stale
	if s := ix.vecs.get(key, gen); s != nil {
		return s, nil
	}
	rows, err := ix.r.QueryContext(ctx, vectorsSQL, model, agent, ix.maxVectors(dim))
	if err != nil {
		return nil, fmt.Errorf("reading vectors: %w", err)
	}
	defer rows.Close()
	s := &vecSet{gen: gen, dim: dim, row: map[int64]int{}}
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return nil, fmt.Errorf("reading vectors: %w", err)
		}
		if len(b) != 4*dim {
			s.other++
			continue
		}
		s.row[id] = len(s.ids)
		s.ids = append(s.ids, id)
		n := len(s.data)
		s.data = slices.Grow(s.data, dim)[:n+dim]
		decodeVector(s.data[n:], b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading vectors: %w", err)
	}
	ix.vecs.put(key, s)
	return s, nil
}

// near is a row of a vecSet and its similarity to a query.
type near struct {
	row int
	sim float32
}

// nearest returns the k rows most similar to the unit vector q, most
// similar first (ties by row). It scans every row, keeping the best k in
// a min-heap.
func (s *vecSet) nearest(q []float32, k int) []near {
	if k <= 0 || len(q) != s.dim {
		return nil
	}
	h := make([]near, 0, k)
	for i := range s.ids {
		sim := dot(q, s.data[i*s.dim:(i+1)*s.dim])
		switch {
		case len(h) < k:
			h = append(h, near{i, sim})
			up(h, len(h)-1)
		case sim > h[0].sim:
			h[0] = near{i, sim}
			down(h, 0)
		}
	}
	// Pop the heap from the worst: the slice ends best first.
	for n := len(h) - 1; n > 0; n-- {
		h[0], h[n] = h[n], h[0]
		down(h[:n], 0)
	}
	return h
}

// less orders the heap: the worst on top, a later row worse on a tie.
func less(a, b near) bool { return a.sim < b.sim || a.sim == b.sim && a.row > b.row }

func up(h []near, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func down(h []near, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// dot is the dot product of two vectors of one length. Four running sums
// let the CPU overlap the additions (Go does not vectorise the loop).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
