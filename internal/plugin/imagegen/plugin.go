package imagegen

import (
	"context"
	"encoding/json"

	"talon/internal/netguard"
	"talon/internal/plugin"
)

func init() {
	plugin.Register(plugin.Module{
		ID: PluginID, Kind: "tools",
		Description: "generate_image (optional): an image from an OpenRouter image model, saved in the workspace's canvas/",
		New:         func() plugin.Instance { return &instance{} },
	})
}

// instance offers generate_image as an optional tool: an allow list must
// name it, its plugin or group:plugins (spec §9.2).
type instance struct {
	cfg   Config
	guard *netguard.Options
}

var _ plugin.Instance = (*instance)(nil)

func (p *instance) Decode(raw json.RawMessage) (err error) {
	p.cfg, err = Decode(raw)
	return err
}

func (p *instance) Provision(pr *plugin.Provision) error {
	p.guard = pr.Guard
	return nil
}

// Validate builds the tool once, which checks the config as New does.
func (p *instance) Validate() error {
	_, err := New(p.cfg, func(string) (string, bool) { return "", false })
	return err
}

func (p *instance) Close() error { return nil }

func (p *instance) Tools(_ context.Context, run plugin.Run) ([]plugin.Tool, error) {
	// The one name it reads is apiKeyEnv, from the operator's config
	// when the process environment is there to read.
	t, err := New(p.cfg, run.Lookup(func(string) bool { return true }))
	if err != nil {
		return nil, err
	}
	if p.guard != nil {
		t.Guard(*p.guard)
	}
	return []plugin.Tool{{Tool: t, Optional: true}}, nil
}
