package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"talon/internal/ceiling"
	"talon/internal/config"
	"talon/internal/platform/install"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/tenantid"
)

// loadConfig loads --config, or the first config file Talon knows in the
// working directory when the flag is empty. A missing file is an error
// here: these commands explain a config, so an empty one would mislead.
func loadConfig(path string) (*config.File, error) {
	f, err := loadFile(path)
	if err != nil {
		return nil, err
	}
	f, _, err = heldToCeiling(f)
	return f, err
}

// loadFile reads the config at path (else the first of config.Names in
// the working directory) as it is written.
func loadFile(path string) (*config.File, error) {
	if path == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("finding config: %w", err)
		}
		p, ok := config.Find(wd)
		if !ok {
			return nil, fmt.Errorf("no config file: pass --config FILE (looked for %s in %s)", strings.Join(config.Names, ", "), wd)
		}
		path = p
	}
	f, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if !f.Exists {
		return nil, fmt.Errorf("config %s does not exist", path)
	}
	return f, nil
}

// parsePluginTools reads --plugin-tool values: NAME=PLUGIN, optionally
// followed by ",optional" and ",origin=ORIGIN" (default origin bundled).
func parsePluginTools(specs []string) ([]policy.Registration, error) {
	var out []policy.Registration
	for _, s := range specs {
		fields := strings.Split(s, ",")
		name, plugin, ok := strings.Cut(fields[0], "=")
		name, plugin = strings.TrimSpace(name), strings.TrimSpace(plugin)
		if !ok || name == "" || plugin == "" {
			return nil, fmt.Errorf("--plugin-tool %q: want NAME=PLUGIN[,optional][,origin=bundled|global|workspace|config]", s)
		}
		r := policy.Registration{Name: name, Plugin: plugin, Origin: policy.OriginBundled}
		for _, f := range fields[1:] {
			switch k, v, _ := strings.Cut(strings.TrimSpace(f), "="); k {
			case "optional":
				r.Optional = true
			case "origin":
				switch o := policy.Origin(v); o {
				case policy.OriginBundled, policy.OriginGlobal, policy.OriginWorkspace, policy.OriginConfig:
					r.Origin = o
				default:
					return nil, fmt.Errorf("--plugin-tool %q: origin must be bundled, global, workspace or config", s)
				}
			default:
				return nil, fmt.Errorf("--plugin-tool %q: unknown option %q (want optional or origin=...)", s, f)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// parseSender reads --sender KIND:VALUE.
func parseSender(s string) (policy.Sender, error) {
	var snd policy.Sender
	if s == "" {
		return snd, nil
	}
	kind, v, ok := strings.Cut(s, ":")
	if !ok || v == "" {
		return snd, fmt.Errorf("--sender %q: want id:X, e164:X, username:X or name:X", s)
	}
	switch strings.ToLower(kind) {
	case "id":
		snd.ID = v
	case "e164":
		snd.E164 = v
	case "username":
		snd.Username = v
	case "name":
		snd.Name = v
	default:
		return snd, fmt.Errorf("--sender %q: kind must be id, e164, username or name", s)
	}
	return snd, nil
}

// resolveStateDir is --state-dir made absolute, or ~/.talon when the flag
// is empty: where `talon serve` keeps the default tenant.
func resolveStateDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the state dir: %w (pass --state-dir)", err)
		}
		dir = filepath.Join(home, ".talon")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	return dir, nil
}

// configIn is the config a gateway with this state dir reads: --config
// when given, else the first of config.Names there, else talon.json there.
func configIn(stateDir, flag string) string {
	if flag != "" {
		return flag
	}
	if p, ok := config.Find(stateDir); ok {
		return p
	}
	return filepath.Join(stateDir, config.Filename)
}

// tenantOf reports whether path is a tenant's config,
// <state>/tenants/<id>/<file>, and that tenant's state dir and directory.
func tenantOf(path string) (stateDir, dir string, ok bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", false
	}
	dir = filepath.Dir(abs)
	tenants := filepath.Dir(dir)
	if filepath.Base(tenants) != install.TenantsDir || !tenantid.Valid(filepath.Base(dir)) {
		return "", "", false
	}
	return filepath.Dir(tenants), dir, true
}

// heldToCeiling is f as the gateway runs it: a tenant's config (by its
// place under a state dir) held to the ceiling of that state dir's root
// config, with what the ceiling changed; any other config as it is.
func heldToCeiling(f *config.File) (*config.File, *ceiling.Result, error) {
	stateDir, dir, ok := tenantOf(f.Path)
	if !ok {
		return f, nil, nil
	}
	root := &config.File{Tree: config.NewObject(), Config: &config.Config{}}
	if p, found := config.Find(stateDir); found {
		var err error
		if root, err = config.Load(p); err != nil {
			return nil, nil, fmt.Errorf("loading the root config, whose ceiling the tenant is held to: %w", err)
		}
	}
	var ids []string
	for _, m := range plugin.Modules() {
		ids = append(ids, m.ID)
	}
	c, _ := ceiling.New(root, ids)
	return c.Effective(f, dir)
}
