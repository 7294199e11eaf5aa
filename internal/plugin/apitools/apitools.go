// Package apitools is the bundled api-tools plugin: the tools declared as
// YAML files (internal/plugin/yamltool) in the agent workspace's
// api-tools/ folder, which the plugin host loads and sends through the
// network guard. It registers itself when imported; the binary imports it
// through internal/standard.
//
// Its entry config, plugins.entries.api-tools.config, is
// plugin.APIToolsConfig: processEnv names the gateway's own variables YAML
// tools may read, which only the default tenant's config can list. The
// host reads the same entry for on-disk plugins' YAML tools, whether or
// not this plugin is on.
//
// An instance is immutable once validated and safe for concurrent runs.
package apitools

import (
	"context"
	"encoding/json"
	"errors"

	"talon/internal/plugin"
)

func init() {
	plugin.Register(plugin.Module{
		ID: plugin.APITools, Kind: "tools",
		Description: "tools declared as YAML files in the agent workspace's api-tools/ folder, sent through the network guard",
		New:         func() plugin.Instance { return &instance{} },
	})
}

// errTenantProcessEnv refuses a tenant's processEnv list: the process
// environment is the operator's.
var errTenantProcessEnv = errors.New("plugins.entries.api-tools.config.processEnv: only the operator's root config can pass the gateway's environment; a tenant's api tools read only its config's env")

// instance serves the YAML files of the run's agent workspace, read
// again at every run (the host's cache keyed by size and mtime makes that
// a stat per file).
type instance struct {
	pr  *plugin.Provision
	cfg plugin.APIToolsConfig
}

var _ plugin.Instance = (*instance)(nil)

func (p *instance) Decode(raw json.RawMessage) (err error) {
	p.cfg, err = plugin.DecodeAPIToolsConfig(raw)
	return err
}

func (p *instance) Provision(pr *plugin.Provision) error {
	p.pr = pr
	return nil
}

// Validate refuses a processEnv list where there is no process
// environment to grant: a tenant's config.
func (p *instance) Validate() error {
	if len(p.cfg.ProcessEnv) > 0 && !p.pr.ProcessEnv {
		return errTenantProcessEnv
	}
	return nil
}

func (p *instance) Close() error { return nil }

func (p *instance) Tools(_ context.Context, run plugin.Run) ([]plugin.Tool, error) {
	if run.AgentDir == "" {
		return nil, nil
	}
	return p.pr.YAMLTools(run.AgentDir, run, p.cfg)
}
