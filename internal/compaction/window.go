package compaction

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"strings"

	"talon/internal/config"
)

// This file is the context window of a model (spec context.md §2).

// Window limits (R2.1, R2.2).
const (
	DefaultWindow = 200_000 // OpenClaw's DEFAULT_CONTEXT_TOKENS
	MinWindow     = 4_000   // below it a run is refused
	WarnWindow    = 8_000   // below it a run is logged with a warning
)

// Where a window comes from, as the guard's messages name it.
const (
	SourceModelsConfig = "modelsConfig" // models.providers: the model's entry or the provider's default
	SourceModel        = "model"        // Talon's table of known models
	SourceDefault      = "default"      // DefaultWindow
	SourceAgentsConfig = "agentsConfig" // the agents.defaults.contextTokens cap
)

// Window is the context window of the model a request goes to.
type Window struct {
	Ref    string // the model reference it was resolved for
	Tokens int64
	Source string
	// Local says the provider's baseUrl is a loopback, private or
	// link-local address or a localhost name: a server whose context
	// length its operator chooses, which the guard's messages point at.
	Local bool
}

// ResolveWindow is the context window of the model ref names (R2.1),
// re-resolved for every run, since models switch (R2.3). The first of:
//
//  1. models.providers.<p>.models[] (the entry whose id is the model's,
//     matched exactly, as the provider resolver matches it) and then the
//     provider itself: contextTokens capping contextWindow (or the known
//     window), else contextWindow;
//  2. the window of a known model (knownWindows);
//  3. DefaultWindow;
//
// then capped by agents.defaults.contextTokens, OpenClaw's earlier key.
func ResolveWindow(cfg *config.Config, ref string) Window {
	w := Window{Ref: ref, Tokens: DefaultWindow, Source: SourceDefault}
	r, err := config.ParseModelRef(ref)
	if err != nil {
		return w
	}
	known := knownWindow(r.Provider, r.Model)
	if known > 0 {
		w.Tokens, w.Source = known, SourceModel
	}
	if cfg == nil {
		return w
	}
	if p, ok := cfg.Models.Providers[r.Provider]; ok && r.Provider != "" {
		w.Local = localURL(p.BaseURL)
		win, capTokens := configTokens(p.ContextWindow), configTokens(p.ContextTokens)
		for _, m := range p.Models {
			if m.ID == r.Model {
				win, capTokens = firstSet(configTokens(m.ContextWindow), win), firstSet(configTokens(m.ContextTokens), capTokens)
				break
			}
		}
		switch {
		case capTokens > 0:
			w.Tokens, w.Source = min(capTokens, firstSet(known, win, capTokens)), SourceModelsConfig
		case win > 0:
			w.Tokens, w.Source = win, SourceModelsConfig
		}
	}
	if c := configTokens(cfg.Agents.Defaults.ContextTokens); c > 0 && c < w.Tokens {
		w.Tokens, w.Source = c, SourceAgentsConfig
	}
	return w
}

// configTokens is a configured token count, 0 when absent or out of
// range (the config check refuses those).
func configTokens(v *float64) int64 {
	if v == nil || !(*v >= 1 && *v <= math.MaxInt32) {
		return 0
	}
	return int64(*v)
}

func firstSet(vs ...int64) int64 {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// localURL reports whether a provider's base URL points at a machine its
// operator runs: localhost or a loopback, private or link-local address.
func localURL(base string) bool {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || u.Hostname() == "" {
		return false
	}
	h := strings.ToLower(u.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasSuffix(h, ".local") {
		return true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast()
}

// WindowError refuses a run whose model's window is too small to hold a
// conversation (R2.2). Its message is OpenClaw's.
type WindowError struct{ Window Window }

func (e *WindowError) Error() string {
	w := e.Window
	msg := fmt.Sprintf("Model context window too small (%d tokens; source=%s). Minimum is %d.", w.Tokens, w.Source, MinWindow)
	switch {
	case w.Source == SourceModelsConfig || w.Source == SourceAgentsConfig:
		msg += " Talon is using the configured context limit for this model. Raise contextWindow/contextTokens or choose a larger model."
	case w.Local:
		msg += fmt.Sprintf(" This looks like a local model endpoint. Raise the server/model context limit or choose a larger model. Local models work best at %d+ tokens.", WarnWindow)
	}
	return msg
}

// Check is the guard a run passes before it starts (R2.2): a *WindowError
// below MinWindow; a warning to log below WarnWindow; nothing otherwise.
func (w Window) Check() (warning string, err error) {
	if w.Tokens < MinWindow {
		return "", &WindowError{Window: w}
	}
	if w.Tokens >= WarnWindow {
		return "", nil
	}
	msg := fmt.Sprintf("low context window: %s ctx=%d (warn<%d) source=%s", w.Ref, w.Tokens, WarnWindow, w.Source)
	switch {
	case !w.Local:
	case w.Source == SourceModelsConfig || w.Source == SourceAgentsConfig:
		msg += "; Talon is using the configured context limit for this model, so raise contextWindow/contextTokens if it is set too low"
	default:
		msg += fmt.Sprintf("; local runs work best at %d+ tokens and may show weaker tool use or more compaction until the server's context length is raised", WarnWindow)
	}
	return msg, nil
}

// knownWindows are the windows Talon knows without being told, for the
// built-in providers' models whose window is not DefaultWindow. They are
// OpenClaw 2026.9.6's: the Anthropic 1M-context families of
// src/agents/context-resolution.ts (supportsClaude1MContext and the
// fixed Opus/Sonnet/Fable/Mythos 5 windows of packages/llm-core
// model-contracts/anthropic.ts), and the OpenAI catalogue of
// extensions/openai openai-provider.ts. A family matches a model id (its
// last path segment, lower case, with ".", "_" and spaces as "-") that is
// the family or starts with it and a non-alphanumeric; the first match
// wins, so narrower families come first.
var knownWindows = []struct {
	provider, family string
	tokens           int64
}{
	{"anthropic", "claude-opus-5", 1_000_000},
	{"anthropic", "claude-sonnet-5", 1_000_000},
	{"anthropic", "claude-fable-5", 1_000_000},
	{"anthropic", "claude-mythos-5", 1_000_000},
	{"anthropic", "claude-mythos-preview", 1_000_000},
	{"anthropic", "claude-opus-4-6", 1_000_000},
	{"anthropic", "claude-opus-4-7", 1_000_000},
	{"anthropic", "claude-opus-4-8", 1_000_000},
	{"anthropic", "claude-sonnet-4-6", 1_000_000},
	{"openai", "gpt-5-4-mini", 400_000},
	{"openai", "gpt-5-4-nano", 400_000},
	{"openai", "gpt-5-4-pro", 1_050_000},
	{"openai", "gpt-5-4", 1_050_000},
	{"openai", "chat-latest", 400_000},
}

// knownWindow is the window of a known model, 0 for any other.
func knownWindow(provider, model string) int64 {
	id := model
	if i := strings.LastIndex(id, "/"); i >= 0 {
		id = id[i+1:]
	}
	id = strings.ToLower(strings.TrimSpace(id))
	id = strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == ' ' || r == '\t' {
			return '-'
		}
		return r
	}, id)
	for _, k := range knownWindows {
		if k.provider != provider || !strings.HasPrefix(id, k.family) {
			continue
		}
		if rest := id[len(k.family):]; rest == "" || !isAlnum(rest[0]) {
			return k.tokens
		}
	}
	return 0
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
