package plugin

import (
	"encoding/json"
	"fmt"
	"slices"

	"talon/internal/plugin/yamltool"
)

// maxProcessEnv bounds plugins.entries.api-tools.config.processEnv.
const maxProcessEnv = 64

// APIToolsConfig is plugins.entries.api-tools.config, which the
// api-tools plugin and on-disk plugins' YAML tools read.
type APIToolsConfig struct {
	// ProcessEnv names the gateway's own environment variables that YAML
	// tools may read, after the config's env: the default tenant's only
	// way to hand them one. No other process variable reaches a
	// template, whatever its name.
	ProcessEnv []string `json:"processEnv"`
}

// DecodeAPIToolsConfig reads the entry config strictly and checks the
// names; an error names the element.
func DecodeAPIToolsConfig(raw json.RawMessage) (APIToolsConfig, error) {
	var c APIToolsConfig
	if err := DecodeStrict(raw, &c); err != nil {
		return APIToolsConfig{}, err
	}
	if len(c.ProcessEnv) > maxProcessEnv {
		return APIToolsConfig{}, fmt.Errorf("processEnv: %d names, more than %d", len(c.ProcessEnv), maxProcessEnv)
	}
	for i, n := range c.ProcessEnv {
		switch {
		case !yamltool.IsEnvName(n):
			return APIToolsConfig{}, fmt.Errorf("processEnv[%d]: %q is not an environment variable name (letters, digits and _, not starting with a digit)", i, n)
		case slices.Contains(c.ProcessEnv[:i], n):
			return APIToolsConfig{}, fmt.Errorf("processEnv[%d]: %q is listed twice", i, n)
		}
	}
	return c, nil
}

// Lookup returns the env a plugin reads: the config's env first, then
// the process environment for the names grant allows, when the run has
// one (the default tenant). An empty value is unset: a template must
// never send an empty secret.
func (r Run) Lookup(grant func(name string) bool) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := "", false
		if r.Env != nil {
			v, ok = r.Env(name)
		}
		if !ok && r.ProcessEnv != nil && grant(name) {
			v, ok = r.ProcessEnv(name)
		}
		return v, ok && v != ""
	}
}

// toolEnv is what YAML tools read env from, and where a missing
// variable can be set, for the error that names it.
type toolEnv struct {
	lookup func(string) (string, bool)
	hint   string
}

// yamlEnv is the env of the YAML tools of run, with the names cfg's
// processEnv grants.
func yamlEnv(run Run, cfg APIToolsConfig) toolEnv {
	e := toolEnv{
		lookup: run.Lookup(func(name string) bool { return slices.Contains(cfg.ProcessEnv, name) }),
		hint:   "set it in the config's env or env.vars",
	}
	if run.ProcessEnv != nil {
		e.hint += ", or list it in plugins.entries.api-tools.config.processEnv to pass the gateway's own"
	}
	return e
}
