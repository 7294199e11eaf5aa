package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"talon/internal/config"
	"talon/internal/policy"
)

// loadConfig loads --config, or the first config file Talon knows in the
// working directory when the flag is empty. A missing file is an error
// here: these commands explain a config, so an empty one would mislead.
func loadConfig(path string) (*config.File, error) {
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
