package cron

import "container/heap"

// slots is the process-wide timer heap: every armed job of every tenant,
// earliest first. It holds only what the loop needs (the wake time and
// the way back to the job); job definitions stay in the store.
type slots []*slot

func (h slots) Len() int { return len(h) }
func (h slots) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}
func (h slots) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}
func (h *slots) Push(x any) {
	s := x.(*slot)
	s.idx = len(*h)
	*h = append(*h, s)
}
func (h *slots) Pop() any {
	old := *h
	n := len(old) - 1
	s := old[n]
	old[n] = nil
	*h = old[:n]
	s.idx = -1
	return s
}

// arm (re)places s in the heap to wake at ms.
func (h *slots) arm(s *slot, ms int64) {
	s.at = ms
	if s.idx >= 0 {
		heap.Fix(h, s.idx)
		return
	}
	heap.Push(h, s)
}

// disarm takes s out of the heap if it is there.
func (h *slots) disarm(s *slot) {
	if s.idx >= 0 {
		heap.Remove(h, s.idx)
	}
}
