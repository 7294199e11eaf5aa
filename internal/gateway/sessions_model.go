package gateway

import (
	"encoding/json"
	"errors"
	"strings"

	"talon/internal/compaction"
	"talon/internal/config"
	"talon/internal/provider"
	"talon/internal/session"
)

// This file is the model side of sessions.patch and sessions.list: the
// patch's model and thinkingLevel fields decoded and put to the catalog
// (provider.ChooseModel, provider.ChooseThinking), and what a session
// resolves to.

// sessionModel is the model a session resolves to: its override, else its
// agent's model.
func sessionModel(cfg *config.Config, agentID string, e session.Entry) config.ModelRef {
	if e.ModelOverride != "" {
		return config.ModelRef{Provider: e.ProviderOverride, Model: e.ModelOverride}
	}
	return provider.DefaultModel(cfg, agentID)
}

// contextTokens is a model's context window (compaction.ResolveWindow,
// which the runner records with each turn too).
func contextTokens(cfg *config.Config, m config.ModelRef) *int64 {
	w := compaction.ResolveWindow(cfg, m.String()).Tokens
	return &w
}

// patchErr is a catalog's refusal as the patch's validation error; other
// errors pass unchanged.
func patchErr(err error) error {
	if ce, ok := errors.AsType[*provider.ChoiceError](err); ok {
		return &session.ValidationError{Message: ce.Message}
	}
	return err
}

// applyModelFields is sessions.patch's handling of `model` and
// `thinkingLevel` (session.CallerFields), run inside the patch's
// transaction: model null clears the override, a model equal to the
// agent's own clears it too, any other allowed model sets
// providerOverride/modelOverride; a stored thinking level the new model
// does not take is lowered (provider.FitThinking).
func applyModelFields(cfg *config.Config, opts provider.Options, agentID string, p session.Patch, next *session.Entry) error {
	if raw, ok := p["model"]; ok {
		var name *string
		if err := json.Unmarshal(raw, &name); err != nil {
			return &session.ValidationError{Message: "invalid model: must be a string or null"}
		}
		if name == nil {
			next.ProviderOverride, next.ModelOverride = "", ""
		} else {
			m, err := provider.ChooseModel(cfg, opts, agentID, *name)
			if err != nil {
				return patchErr(err)
			}
			if def := provider.DefaultModel(cfg, agentID); strings.EqualFold(def.Provider, m.Provider) && strings.EqualFold(def.Model, m.Model) {
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
			return &session.ValidationError{Message: "invalid thinkingLevel (use " + strings.Join(provider.ThinkingLevels(cfg, m), "|") + ")"}
		}
		if level == nil {
			next.ThinkingLevel = ""
			return nil
		}
		l, err := provider.ChooseThinking(cfg, m, *level)
		if err != nil {
			return patchErr(err)
		}
		next.ThinkingLevel = l
		return nil
	}
	next.ThinkingLevel = provider.FitThinking(cfg, m, next.ThinkingLevel)
	return nil
}
