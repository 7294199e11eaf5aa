package provider

import (
	"sync"

	"talon/internal/config"
)

// maxMemo bounds a Memo: model references can come from callers (a
// request header), so past this many distinct ones Resolve is called
// afresh for each new one instead of remembered.
const maxMemo = 64

// Memo resolves model references against one config and keeps the clients
// it built, so that every run of an agent uses the same client and with it
// the client's fragment cache (see wire.go). Errors are not kept: a
// missing API key is looked up again on the next call. A Memo is safe for
// concurrent use; build a new one when the config changes.
type Memo struct {
	cfg  *config.Config
	opts Options

	mu   sync.Mutex
	seen map[string][]Target
}

// NewMemo returns a Memo for cfg with opts, as for ResolveWith.
func NewMemo(cfg *config.Config, opts Options) *Memo {
	return &Memo{cfg: cfg, opts: opts, seen: map[string][]Target{}}
}

// Resolve is ResolveWith(cfg, ref, opts), remembered.
func (m *Memo) Resolve(ref string) (Provider, string, error) {
	ts, err := m.Targets(ref)
	if err != nil {
		return nil, "", err
	}
	return ts[0].Provider, ts[0].Model, nil
}

// Targets is ResolveTargets(cfg, ref, opts), remembered.
func (m *Memo) Targets(ref string) ([]Target, error) {
	m.mu.Lock()
	ts, ok := m.seen[ref]
	m.mu.Unlock()
	if ok {
		return ts, nil
	}
	ts, err := ResolveTargets(m.cfg, ref, m.opts)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if len(m.seen) < maxMemo {
		m.seen[ref] = ts
	}
	m.mu.Unlock()
	return ts, nil
}
