package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"talon/internal/plugin/yamltool"
)

// maxProcessEnv bounds plugins.entries.api-tools.config.processEnv.
const maxProcessEnv = 64

// apiToolsConfig is plugins.entries.api-tools.config.
type apiToolsConfig struct {
	// ProcessEnv names the gateway's own environment variables that YAML
	// tools may read, after the config's env: the default tenant's only
	// way to hand them one. No other process variable reaches a
	// template, whatever its name.
	ProcessEnv []string `json:"processEnv"`
}

// decodeAPIToolsConfig reads the entry config strictly and checks the
// names; an error names the element.
func decodeAPIToolsConfig(raw json.RawMessage) (apiToolsConfig, error) {
	var c apiToolsConfig
	if err := decodeStrict(raw, &c); err != nil {
		return apiToolsConfig{}, err
	}
	if len(c.ProcessEnv) > maxProcessEnv {
		return apiToolsConfig{}, fmt.Errorf("processEnv: %d names, more than %d", len(c.ProcessEnv), maxProcessEnv)
	}
	for i, n := range c.ProcessEnv {
		switch {
		case !yamltool.IsEnvName(n):
			return apiToolsConfig{}, fmt.Errorf("processEnv[%d]: %q is not an environment variable name (letters, digits and _, not starting with a digit)", i, n)
		case slices.Contains(c.ProcessEnv[:i], n):
			return apiToolsConfig{}, fmt.Errorf("processEnv[%d]: %q is listed twice", i, n)
		}
	}
	return c, nil
}

// errTenantProcessEnv refuses a tenant's processEnv list: the process
// environment is the operator's.
var errTenantProcessEnv = errors.New("plugins.entries.api-tools.config.processEnv: only the operator's root config can pass the gateway's environment; a tenant's api tools read only its config's env")

// lookup returns the env a plugin reads: the config's env first, then
// the process environment for the names grant allows, when the run has
// one (the default tenant). An empty value is unset: a template must
// never send an empty secret.
func (r Run) lookup(grant func(name string) bool) func(string) (string, bool) {
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
func yamlEnv(run Run, cfg apiToolsConfig) toolEnv {
	e := toolEnv{
		lookup: run.lookup(func(name string) bool { return slices.Contains(cfg.ProcessEnv, name) }),
		hint:   "set it in the config's env or env.vars",
	}
	if run.ProcessEnv != nil {
		e.hint += ", or list it in plugins.entries.api-tools.config.processEnv to pass the gateway's own"
	}
	return e
}
