package plugin

import (
	"context"
	"encoding/json"

	"talon/internal/netguard"
	"talon/internal/plugin/imagegen"
)

func init() {
	Register(Module{
		ID: imagegen.PluginID, Kind: "tools",
		Description: "generate_image (optional): an image from an OpenRouter image model, saved in the workspace's canvas/",
		New:         func() Instance { return &imageGenPlugin{} },
	})
}

// imageGenPlugin offers generate_image as an optional tool: an allow list
// must name it, its plugin or group:plugins (spec §9.2).
type imageGenPlugin struct {
	cfg   imagegen.Config
	guard *netguard.Options
}

func (p *imageGenPlugin) Decode(raw json.RawMessage) (err error) {
	p.cfg, err = imagegen.Decode(raw)
	return err
}

func (p *imageGenPlugin) Provision(pr *Provision) error {
	p.guard = pr.Guard
	return nil
}

// Validate builds the tool once, which checks the config as New does.
func (p *imageGenPlugin) Validate() error {
	_, err := imagegen.New(p.cfg, func(string) (string, bool) { return "", false })
	return err
}

func (p *imageGenPlugin) Close() error { return nil }

func (p *imageGenPlugin) Tools(_ context.Context, run Run) ([]Tool, error) {
	// The one name it reads is apiKeyEnv, from the operator's config
	// when the process environment is there to read.
	t, err := imagegen.New(p.cfg, run.lookup(func(string) bool { return true }))
	if err != nil {
		return nil, err
	}
	if p.guard != nil {
		t.Guard(*p.guard)
	}
	return []Tool{{Tool: t, Optional: true}}, nil
}
