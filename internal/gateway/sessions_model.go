package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"talon/internal/config"
	"talon/internal/provider"
	"talon/internal/session"
)

// This file is the model side of sessions.patch and sessions.list: which
// models a session may be switched to (the configured catalog), what a
// session resolves to, and the thinking levels a model takes.

// agentModel is the model an agent runs with no session override.
func agentModel(cfg *config.Config, agentID string) config.ModelRef {
	return shownModel(cfg.AgentModel(agentID))
}

// shownModel is a reference from the config or a finished run, to show: one
// that does not parse ("/x") is kept as written, with no provider, so no
// catalog entry matches it and its runs fail to resolve it, saying why.
func shownModel(ref string) config.ModelRef {
	m, err := config.ParseModelRef(ref)
	if err != nil {
		return config.ModelRef{Model: ref}
	}
	return m
}

// sessionModel is the model a session resolves to: its override, else its
// agent's model.
func sessionModel(cfg *config.Config, agentID string, e session.Entry) config.ModelRef {
	if e.ModelOverride != "" {
		return config.ModelRef{Provider: e.ProviderOverride, Model: e.ModelOverride}
	}
	return agentModel(cfg, agentID)
}

// catalogEntry finds a model in models.providers (provider and id compared
// case-insensitively).
func catalogEntry(cfg *config.Config, m config.ModelRef) (config.Model, bool) {
	for name, p := range cfg.Models.Providers {
		if !strings.EqualFold(name, m.Provider) {
			continue
		}
		for _, x := range p.Models {
			if strings.EqualFold(x.ID, m.Model) {
				return x, true
			}
		}
	}
	return config.Model{}, false
}

// contextTokens is a model's context window when the config states it
// (provider.ContextWindow, which the runner records with each turn too);
// nil when it does not.
func contextTokens(cfg *config.Config, m config.ModelRef) *int64 {
	if w := provider.ContextWindow(cfg, m.String()); w > 0 {
		return &w
	}
	return nil
}

// allowedModels is the catalog a session may choose from, as written in
// the config: agents.defaults.models (OpenClaw's allowlist, keyed by
// "provider/model") when it names any, else every models.providers.<p>.
// models[] entry; plus the agent's own model and the offline inspect
// model, which are always allowed.
func allowedModels(cfg *config.Config, agentID string) []config.ModelRef {
	out := []config.ModelRef{config.InspectRef, agentModel(cfg, agentID)}
	if keys := allowlist(cfg); len(keys) > 0 {
		for _, k := range keys {
			if m, err := config.ParseModelRef(k); err == nil {
				out = append(out, m)
			}
		}
		return out
	}
	for name, p := range cfg.Models.Providers {
		for _, m := range p.Models {
			out = append(out, config.ModelRef{Provider: name, Model: m.ID})
		}
	}
	return out
}

// allowlist returns the keys of agents.defaults.models.
func allowlist(cfg *config.Config) []string {
	raw := cfg.Agents.Defaults.Models
	if raw == nil || raw.Value == nil || raw.Kind != config.Object {
		return nil
	}
	keys := make([]string, 0, len(raw.Members))
	for _, m := range raw.Members {
		if k := strings.TrimSpace(m.Key); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// aliasOf resolves an alias declared as agents.defaults.models.<ref>.alias
// (case-insensitively) to its reference.
func aliasOf(cfg *config.Config, name string) (string, bool) {
	raw := cfg.Agents.Defaults.Models
	if raw == nil || raw.Value == nil || raw.Kind != config.Object {
		return "", false
	}
	for _, m := range raw.Members {
		if m.Value == nil || m.Value.Kind != config.Object {
			continue
		}
		for _, f := range m.Value.Members {
			if f.Key == "alias" && f.Value != nil && f.Value.Kind == config.String && strings.EqualFold(strings.TrimSpace(f.Value.Str), name) {
				return strings.TrimSpace(m.Key), true
			}
		}
	}
	return "", false
}

// resolvePatchModel validates sessions.patch's `model` for a session of
// agentID: an alias, "provider/model", or a bare id of the agent's own
// provider, which must be in the allowed catalog and resolve to a
// provider Talon can call (so a session is never switched to a model its
// next turn cannot reach). The result has the catalog's spelling.
func resolvePatchModel(cfg *config.Config, opts provider.Options, agentID, raw string) (config.ModelRef, error) {
	name := strings.TrimSpace(raw)
	if name == "" {
		return config.ModelRef{}, &session.ValidationError{Message: "invalid model: empty"}
	}
	if ref, ok := aliasOf(cfg, name); ok {
		name = ref
	}
	want, err := config.ParseModelRef(name)
	if err != nil {
		return config.ModelRef{}, &session.ValidationError{Message: "invalid model: " + err.Error()}
	}
	if want.Provider == "" {
		want.Provider = agentModel(cfg, agentID).Provider
	}
	var found *config.ModelRef
	for _, m := range allowedModels(cfg, agentID) {
		if strings.EqualFold(m.Provider, want.Provider) && strings.EqualFold(m.Model, want.Model) {
			found = &m
			break
		}
	}
	if found == nil {
		return config.ModelRef{}, &session.ValidationError{Message: "model not allowed: " + want.String()}
	}
	if _, _, err := provider.ResolveWith(cfg, found.String(), opts); err != nil {
		var re *provider.ResolveError
		if errors.As(err, &re) {
			return config.ModelRef{}, &session.ValidationError{Message: "invalid model: " + re.Message}
		}
		return config.ModelRef{}, fmt.Errorf("resolving model %s: %w", found, err)
	}
	return *found, nil
}

// Thinking levels, in order. "xhigh" is offered only for models whose
// catalog entry says reasoning: true.
var thinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// thinkingAliases maps what OpenClaw accepts for a level (trimmed, lower
// case) to the level.
var thinkingAliases = map[string]string{
	"off": "off", "none": "off",
	"on": "low", "enable": "low", "enabled": "low",
	"min": "minimal", "minimal": "minimal", "think": "minimal",
	"low": "low", "thinkhard": "low", "think-hard": "low", "think_hard": "low",
	"mid": "medium", "med": "medium", "medium": "medium", "thinkharder": "medium", "think-harder": "medium", "harder": "medium",
	"high": "high", "ultrathink": "high", "thinkhardest": "high", "highest": "high",
	"xhigh": "xhigh", "x-high": "xhigh", "x_high": "xhigh", "extrahigh": "xhigh", "extra-high": "xhigh", "extra_high": "xhigh",
	// Known to OpenClaw for models with provider-specific profiles; no
	// model in Talon's catalog offers them.
	"adaptive": "adaptive", "auto": "adaptive", "max": "max", "ultra": "ultra",
}

// levelsFor lists the thinking levels a model takes.
func levelsFor(cfg *config.Config, m config.ModelRef) []string {
	if e, ok := catalogEntry(cfg, m); ok && e.Reasoning != nil && *e.Reasoning {
		return thinkingLevels
	}
	return thinkingLevels[:len(thinkingLevels)-1]
}

// checkThinking validates a thinkingLevel for the model the session will
// use, with OpenClaw's messages.
func checkThinking(cfg *config.Config, m config.ModelRef, raw string) (string, error) {
	levels := levelsFor(cfg, m)
	level, ok := thinkingAliases[strings.ToLower(strings.TrimSpace(raw))]
	if !ok {
		return "", &session.ValidationError{Message: "invalid thinkingLevel (use " + strings.Join(levels, "|") + ")"}
	}
	for _, l := range levels {
		if l == level {
			return level, nil
		}
	}
	return "", &session.ValidationError{Message: fmt.Sprintf("thinkingLevel %q is not supported for %s (use %s)", level, m, strings.Join(levels, "|"))}
}

// applyModelFields is sessions.patch's handling of `model` and
// `thinkingLevel` (session.CallerFields), run inside the patch's
// transaction: model null clears the override, a model equal to the
// agent's own clears it too, any other allowed model sets
// providerOverride/modelOverride; a stored thinking level the new model
// does not take is lowered to "high".
func applyModelFields(cfg *config.Config, opts provider.Options, agentID string, p session.Patch, next *session.Entry) error {
	if raw, ok := p["model"]; ok {
		var name *string
		if err := json.Unmarshal(raw, &name); err != nil {
			return &session.ValidationError{Message: "invalid model: must be a string or null"}
		}
		if name == nil {
			next.ProviderOverride, next.ModelOverride = "", ""
		} else {
			m, err := resolvePatchModel(cfg, opts, agentID, *name)
			if err != nil {
				return err
			}
			if def := agentModel(cfg, agentID); strings.EqualFold(def.Provider, m.Provider) && strings.EqualFold(def.Model, m.Model) {
				next.ProviderOverride, next.ModelOverride = "", ""
			} else {
				next.ProviderOverride, next.ModelOverride = m.Provider, m.Model
			}
		}
	}
	m := sessionModel(cfg, agentID, *next)
	if raw, ok := p["thinkingLevel"]; ok {
		var level *string
		if err := json.Unmarshal(raw, &level); err != nil {
			return &session.ValidationError{Message: "invalid thinkingLevel (use " + strings.Join(levelsFor(cfg, m), "|") + ")"}
		}
		if level == nil {
			next.ThinkingLevel = ""
			return nil
		}
		l, err := checkThinking(cfg, m, *level)
		if err != nil {
			return err
		}
		next.ThinkingLevel = l
		return nil
	}
	if next.ThinkingLevel == "xhigh" && len(levelsFor(cfg, m)) < len(thinkingLevels) {
		next.ThinkingLevel = "high"
	}
	return nil
}
