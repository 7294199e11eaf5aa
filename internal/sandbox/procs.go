package sandbox

import (
	"io"
	"sync"
)

// Procs is the set of commands running in one Sandbox, for backends to
// keep: Close ends them all and refuses new ones. The zero value is
// ready. It is safe for concurrent use.
type Procs struct {
	mu     sync.Mutex
	closed bool
	m      map[Process]struct{}
}

// Add records a started process, and reports false, recording nothing,
// when Close has run: the caller then ends p itself (a Start that raced
// with Close).
func (ps *Procs) Add(p Process) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return false
	}
	if ps.m == nil {
		ps.m = map[Process]struct{}{}
	}
	ps.m[p] = struct{}{}
	return true
}

// Remove forgets a process that has ended.
func (ps *Procs) Remove(p Process) {
	ps.mu.Lock()
	delete(ps.m, p)
	ps.mu.Unlock()
}

// Closed reports whether Close has run.
func (ps *Procs) Closed() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.closed
}

// Close refuses new processes, kills those running and waits for them to
// end. It reports whether this call closed the set (false the second
// time).
func (ps *Procs) Close() bool {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return false
	}
	ps.closed = true
	procs := make([]Process, 0, len(ps.m))
	for p := range ps.m {
		procs = append(procs, p)
	}
	ps.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	for _, p := range procs {
		p.Wait()
	}
	return true
}

// SameWriter reports whether a Command's Stdout and Stderr are one writer,
// which a backend must then feed from one pipe (one writer at a time);
// writers that cannot be compared are different.
func SameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a != nil && a == b
}
