package plugin

import (
	"context"
	"encoding/json"
	"path/filepath"

	"talon/internal/memory"
	"talon/internal/policy"
)

// MemoryFile is the tenant's memory index, in its state dir.
const MemoryFile = "memory.sqlite"

func init() {
	Register(Module{
		ID: policy.MemoryPlugin, Kind: "memory",
		Description: "memory_search and memory_get over the agent's MEMORY.md and memory/*.md (SQLite FTS5)",
		New:         func() Instance { return &memoryPlugin{} },
	})
}

// memoryPlugin serves the tenant's memory index, which outlives config
// versions (it is the host's, opened on first use and closed with it).
type memoryPlugin struct {
	ix *memory.Index
}

func (p *memoryPlugin) Decode(raw json.RawMessage) error {
	var none struct{}
	return decodeStrict(raw, &none)
}

func (p *memoryPlugin) Provision(pr *Provision) error {
	v, err := pr.Shared(policy.MemoryPlugin, func() (any, func() error, error) {
		ix, err := memory.Open(filepath.Join(pr.StateDir, MemoryFile))
		if err != nil {
			return nil, nil, err
		}
		return ix, ix.Close, nil
	})
	if err != nil {
		return err
	}
	p.ix = v.(*memory.Index)
	return nil
}

func (p *memoryPlugin) Validate() error { return nil }

func (p *memoryPlugin) Close() error { return nil }

func (p *memoryPlugin) Tools(context.Context, Run) ([]Tool, error) {
	ts := p.ix.Tools()
	out := make([]Tool, len(ts))
	for i, t := range ts {
		out[i] = Tool{Tool: t}
	}
	return out, nil
}
