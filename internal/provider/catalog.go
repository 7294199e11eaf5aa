package provider

import (
	"errors"
	"fmt"
	"strings"

	"talon/internal/config"
)

// This file is the model catalog: the models a session of an agent may be
// switched to (as the config writes them, each checked to resolve), what
// a stored reference shows as, and the thinking levels a model takes.

// ChoiceError is a model or thinking level chosen for a session that the
// catalog refuses. Its message names the choice, what is allowed and the
// config keys at fault, never a secret, so it is safe to show to whoever
// chose.
type ChoiceError struct{ Message string }

func (e *ChoiceError) Error() string { return e.Message }

func choiceErr(format string, args ...any) error {
	return &ChoiceError{Message: fmt.Sprintf(format, args...)}
}

// DefaultModel is the model an agent's sessions run with when they do not
// override it.
func DefaultModel(cfg *config.Config, agentID string) config.ModelRef {
	return ShownModel(cfg.AgentModel(agentID))
}

// ShownModel is a reference from the config or a finished run, to show:
// one that does not parse ("/x") is kept as written, with no provider, so
// no catalog entry matches it and its runs fail to resolve it, saying why.
func ShownModel(ref string) config.ModelRef {
	m, err := config.ParseModelRef(ref)
	if err != nil {
		return config.ModelRef{Model: ref}
	}
	return m
}

// AllowedModels is the catalog a session of agentID may choose from, as
// written in the config: agents.defaults.models (OpenClaw's allowlist,
// keyed by "provider/model") when it names any, else every
// models.providers.<p>.models[] entry; plus the agent's own model and the
// offline inspect model, which are always allowed.
func AllowedModels(cfg *config.Config, agentID string) []config.ModelRef {
	out := []config.ModelRef{config.InspectRef, DefaultModel(cfg, agentID)}
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

// Expand is a model named in config (compaction.model, memoryFlush.model)
// as a reference: the one an alias of agents.defaults.models names, else
// the name as written.
func Expand(cfg *config.Config, name string) string {
	name = strings.TrimSpace(name)
	if ref, ok := aliasOf(cfg, name); ok {
		return ref
	}
	return name
}

// MaxTokens is the maxTokens models.providers states for the model ref
// names, 0 when it states none.
func MaxTokens(cfg *config.Config, ref string) int64 {
	m, err := config.ParseModelRef(ref)
	if err != nil {
		return 0
	}
	if e, ok := catalogEntry(cfg, m); ok && e.MaxTokens != nil && *e.MaxTokens >= 1 {
		return int64(*e.MaxTokens)
	}
	return 0
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

// ChooseModel checks a model chosen for a session of agentID: an alias,
// "provider/model", or a bare id of the agent's own provider, which must
// be in AllowedModels and resolve (ResolveWith, with opts) to a provider
// Talon can call, so that a session is never switched to a model its next
// turn cannot reach. The result has the catalog's spelling. A refused
// choice is a *ChoiceError.
func ChooseModel(cfg *config.Config, opts Options, agentID, raw string) (config.ModelRef, error) {
	name := strings.TrimSpace(raw)
	if name == "" {
		return config.ModelRef{}, choiceErr("invalid model: empty")
	}
	if ref, ok := aliasOf(cfg, name); ok {
		name = ref
	}
	want, err := config.ParseModelRef(name)
	if err != nil {
		return config.ModelRef{}, choiceErr("invalid model: %v", err)
	}
	if want.Provider == "" {
		want.Provider = DefaultModel(cfg, agentID).Provider
	}
	var found *config.ModelRef
	for _, m := range AllowedModels(cfg, agentID) {
		if strings.EqualFold(m.Provider, want.Provider) && strings.EqualFold(m.Model, want.Model) {
			found = &m
			break
		}
	}
	if found == nil {
		return config.ModelRef{}, choiceErr("model not allowed: %s", want)
	}
	if _, _, err := ResolveWith(cfg, found.String(), opts); err != nil {
		var re *ResolveError
		if errors.As(err, &re) {
			return config.ModelRef{}, choiceErr("invalid model: %s", re.Message)
		}
		return config.ModelRef{}, fmt.Errorf("resolving model %s: %w", found, err)
	}
	return *found, nil
}

// Thinking levels, in order. "xhigh" is offered only for models whose
// catalog entry says reasoning: true.
var thinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// ThinkingLevels lists the thinking levels model m takes, in order.
func ThinkingLevels(cfg *config.Config, m config.ModelRef) []string {
	if e, ok := catalogEntry(cfg, m); ok && e.Reasoning != nil && *e.Reasoning {
		return thinkingLevels
	}
	return thinkingLevels[:len(thinkingLevels)-1]
}

// ChooseThinking checks a thinking level (or an alias of one) chosen for
// a session that runs model m and returns the level; a refused choice is
// a *ChoiceError with OpenClaw's message.
func ChooseThinking(cfg *config.Config, m config.ModelRef, raw string) (string, error) {
	levels := ThinkingLevels(cfg, m)
	level, ok := config.ThinkingLevel(raw)
	if !ok {
		return "", choiceErr("invalid thinkingLevel (use %s)", strings.Join(levels, "|"))
	}
	for _, l := range levels {
		if l == level {
			return level, nil
		}
	}
	return "", choiceErr("thinkingLevel %q is not supported for %s (use %s)", level, m, strings.Join(levels, "|"))
}

// FitThinking is the stored thinking level a session keeps when it
// switches to model m: "xhigh" is lowered to "high" for a model that does
// not take it; any other level is kept.
func FitThinking(cfg *config.Config, m config.ModelRef, level string) string {
	if level == "xhigh" && len(ThinkingLevels(cfg, m)) < len(thinkingLevels) {
		return "high"
	}
	return level
}

// RunThinking is the thinking level a run of agentID on model m thinks
// at, in OpenClaw's order: the run's own (a cron payload's thinking, a
// chat.send's), the session's thinkingLevel, the agent's
// thinkingDefault, then agents.defaults.thinkingDefault; "" when none is
// set, which leaves the provider's default. A level m does not take is
// lowered (FitThinking); a model that does not reason is sent none
// whatever the level (Request.Thinking).
func RunThinking(cfg *config.Config, agentID string, m config.ModelRef, run, session string) string {
	for _, raw := range []string{run, session} {
		if l, ok := config.ThinkingLevel(raw); ok {
			return FitThinking(cfg, m, l)
		}
	}
	if l := cfg.AgentThinking(agentID); l != "" {
		return FitThinking(cfg, m, l)
	}
	return ""
}
