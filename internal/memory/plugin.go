package memory

import (
	"context"
	"encoding/json"
	"path/filepath"

	"talon/internal/plugin"
	"talon/internal/policy"
)

// indexFile is the tenant's memory index, in its state dir.
const indexFile = "memory.sqlite"

func init() {
	plugin.Register(plugin.Module{
		ID: policy.MemoryPlugin, Kind: "memory",
		Description: "memory_search and memory_get over the agent's MEMORY.md and memory/*.md (SQLite FTS5)",
		New:         func() plugin.Instance { return &instance{} },
	})
}

// instance serves the tenant's memory index, which outlives config
// versions (the host keeps it, opened on first use and closed with it).
type instance struct {
	ix *Index
}

var _ plugin.Instance = (*instance)(nil)

func (p *instance) Decode(raw json.RawMessage) error {
	var none struct{}
	return plugin.DecodeStrict(raw, &none)
}

func (p *instance) Provision(pr *plugin.Provision) error {
	v, err := pr.Shared(policy.MemoryPlugin, func() (any, func() error, error) {
		ix, err := Open(filepath.Join(pr.StateDir, indexFile))
		if err != nil {
			return nil, nil, err
		}
		return ix, ix.Close, nil
	})
	if err != nil {
		return err
	}
	p.ix = v.(*Index)
	return nil
}

func (p *instance) Validate() error { return nil }

func (p *instance) Close() error { return nil }

func (p *instance) Tools(context.Context, plugin.Run) ([]plugin.Tool, error) {
	ts := p.ix.Tools()
	out := make([]plugin.Tool, len(ts))
	for i, t := range ts {
		out[i] = plugin.Tool{Tool: t}
	}
	return out, nil
}
