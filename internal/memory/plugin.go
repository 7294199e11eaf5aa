package memory

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	"talon/internal/netguard"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/provider"
)

// indexFile is the tenant's memory index, in its state dir.
const indexFile = "memory.sqlite"

func init() {
	plugin.Register(plugin.Module{
		ID: policy.MemoryPlugin, Kind: "memory",
		Description: "memory_search and memory_get over the agent's MEMORY.md and memory/*.md (SQLite FTS5, and embeddings when memorySearch names a provider)",
		New:         func() plugin.Instance { return &instance{} },
	})
}

// instance serves the tenant's memory index, which outlives config
// versions (the host keeps it, opened on first use and closed with it).
type instance struct {
	ix    *Index
	guard *netguard.Options
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
		ix.SetLog(pr.Log)
		return ix, ix.Close, nil
	})
	if err != nil {
		return err
	}
	p.ix = v.(*Index)
	p.guard = pr.Guard
	return nil
}

func (p *instance) Validate() error { return nil }

func (p *instance) Close() error { return nil }

func (p *instance) Tools(_ context.Context, run plugin.Run) ([]plugin.Tool, error) {
	ts := p.ix.Tools(p.options(run))
	out := make([]plugin.Tool, len(ts))
	for i, t := range ts {
		out[i] = plugin.Tool{Tool: t}
	}
	return out, nil
}

// options are how the run's agent ranks: its memorySearch (the agent's
// over the defaults). The embeddings client connects through the
// tenant's network guard and reads "${NAME}" keys from the config's env,
// and the gateway's own environment for the default tenant only: a
// tenant's memory search never gets the operator's keys.
func (p *instance) options(run plugin.Run) Options {
	ms := run.Config.AgentMemorySearch(run.AgentID)
	lookup := run.Lookup(func(string) bool { return true })
	env := func(name string) string { v, _ := lookup(name); return v }
	e, err := provider.ResolveEmbeddings(run.Config, ms, provider.Options{Env: env, Guard: p.guard})
	opts := Options{Ranking: ms.Ranking()}
	switch {
	case err != nil:
		opts.Problem = strings.TrimPrefix(err.Error(), "memorySearch: ")
	case e != nil:
		opts.Embedder = e
	}
	return opts
}
