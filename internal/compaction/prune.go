package compaction

import (
	"fmt"
	"strings"
	"time"

	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
)

// This file is session pruning (spec context.md §7): old tool results
// trimmed or cleared in the request view only, and the sticky record of
// what was pruned (R7.3).

// Defaults of agents.defaults.contextPruning.
const (
	defaultTTL                  = 5 * time.Minute
	defaultKeepLastAssistants   = 3
	defaultSoftTrimRatio        = 0.3
	defaultHardClearRatio       = 0.5
	defaultMinPrunableToolChars = 50_000
	defaultSoftTrimMaxChars     = 4_000
	defaultSoftTrimHead         = 1_500
	defaultSoftTrimTail         = 1_500
	defaultPlaceholder          = "[Old tool result content cleared]"
)

// Pruning are an agent's pruning settings: agents.defaults.contextPruning
// with the agent's own block over it, field by field.
type Pruning struct {
	On  bool          // mode "cache-ttl"
	TTL time.Duration // idle time since the last cache touch before a round
	// KeepLastAssistants protects the results after the n-th last
	// assistant message.
	KeepLastAssistants int
	// SoftTrimRatio and HardClearRatio are shares of the window, in
	// characters, from which results are trimmed and cleared.
	SoftTrimRatio, HardClearRatio float64
	// MinPrunableToolChars is the least the prunable results must hold
	// for any to be cleared.
	MinPrunableToolChars int64
	// A result longer than SoftTrimMaxChars characters keeps its first
	// HeadChars and last TailChars.
	SoftTrimMaxChars, HeadChars, TailChars int
	HardClear                              bool
	Placeholder                            string
	// Allow and Deny are tool-name globs (the tool policy's): deny wins,
	// an empty Allow allows every tool.
	Allow, Deny []string
}

// PruningFor returns agentID's pruning settings from cfg (nil: the
// defaults, which are off).
func PruningFor(cfg *config.Config, agentID string) Pruning {
	var d, a config.ContextPruning
	if cfg != nil {
		d = cfg.Agents.Defaults.ContextPruning
		if e, _ := cfg.Agent(agentID); e != nil {
			a = e.ContextPruning
		}
	}
	p := Pruning{
		On:                   text(a.Mode, d.Mode, "off") == "cache-ttl",
		TTL:                  defaultTTL,
		KeepLastAssistants:   int(number(a.KeepLastAssistants, d.KeepLastAssistants, defaultKeepLastAssistants)),
		SoftTrimRatio:        override(a.SoftTrimRatio, d.SoftTrimRatio, defaultSoftTrimRatio),
		HardClearRatio:       override(a.HardClearRatio, d.HardClearRatio, defaultHardClearRatio),
		MinPrunableToolChars: number(a.MinPrunableToolChars, d.MinPrunableToolChars, defaultMinPrunableToolChars),
		SoftTrimMaxChars:     int(number(a.SoftTrim.MaxChars, d.SoftTrim.MaxChars, defaultSoftTrimMaxChars)),
		HeadChars:            int(number(a.SoftTrim.HeadChars, d.SoftTrim.HeadChars, defaultSoftTrimHead)),
		TailChars:            int(number(a.SoftTrim.TailChars, d.SoftTrim.TailChars, defaultSoftTrimTail)),
		HardClear:            override(a.HardClear.Enabled, d.HardClear.Enabled, true),
		Placeholder:          text(a.HardClear.Placeholder, d.HardClear.Placeholder, defaultPlaceholder),
		Allow:                lower(firstList(a.Tools.Allow, d.Tools.Allow)),
		Deny:                 lower(firstList(a.Tools.Deny, d.Tools.Deny)),
	}
	if ttl, err := config.ParseDuration(text(a.TTL, d.TTL, ""), time.Minute); err == nil {
		p.TTL = ttl
	}
	return p
}

func firstList(agent, defaults config.List) []string {
	if agent != nil {
		return agent
	}
	return defaults
}

func lower(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = strings.ToLower(strings.TrimSpace(s))
	}
	return out
}

// Due reports whether a pruning round runs before a request (R7.1): the
// mode is on and either the prompt cache has been idle for TTL since
// lastTouch (the start of the last successful model request; zero when
// none) or, Talon's pressure trigger (better-item 5), the context is at
// HardClearRatio of the window.
func (p Pruning) Due(now, lastTouch time.Time, tokens, window int64) bool {
	if !p.On {
		return false
	}
	if !lastTouch.IsZero() && p.TTL > 0 && now.Sub(lastTouch) >= p.TTL {
		return true
	}
	return window > 0 && float64(tokens) >= p.HardClearRatio*float64(window)
}

// prunable reports whether results of the named tool may be pruned.
func (p Pruning) prunable(tool string) bool {
	n := strings.ToLower(tool)
	for _, g := range p.Deny {
		if policy.MatchGlob(g, n) {
			return false
		}
	}
	if len(p.Allow) == 0 {
		return true
	}
	for _, g := range p.Allow {
		if policy.MatchGlob(g, n) {
			return true
		}
	}
	return false
}

// Pruned is one tool result a pruning round replaced in the view: trimmed
// to its first Head and last Tail characters, or cleared to Placeholder.
// A projection of these replays the same bytes on every later request
// (R7.3), so the prompt cache's prefix stays stable.
type Pruned struct {
	EntryID     string `json:"id"`
	Head        int    `json:"head,omitempty"`
	Tail        int    `json:"tail,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
}

// Projection is what pruning has replaced in a session's view, in view
// order: to persist beside the transcript and apply to every view.
type Projection []Pruned

// Apply replaces the pruned results of v in place.
func (pr Projection) Apply(v *View) {
	if len(pr) == 0 {
		return
	}
	by := make(map[string]*Pruned, len(pr))
	for i := range pr {
		by[pr[i].EntryID] = &pr[i]
	}
	for i, id := range v.IDs {
		if p := by[id]; p != nil && id != "" && v.Messages[i].Role == llm.RoleTool {
			v.Messages[i].Content = p.replace(v.Messages[i].Content)
		}
	}
}

func (p *Pruned) replace(s string) string {
	if p.Placeholder != "" {
		return p.Placeholder
	}
	return trimResult(s, p.Head, p.Tail)
}

// trimResult keeps the first head and last tail characters of s, with a
// note of how much it had (R7.2).
func trimResult(s string, head, tail int) string {
	r := []rune(s)
	if head+tail >= len(r) {
		return s
	}
	return fmt.Sprintf("%s\n...\n%s\n\n[Tool result trimmed: kept first %d chars and last %d chars of %d chars.]",
		string(r[:head]), string(r[len(r)-tail:]), head, tail, len(r))
}

// pruneChars is what a message counts as in pruning (R7.2): its text, an
// image 8 000.
func pruneChars(m *llm.Message) int64 { return messageChars(m) }

// Round runs one pruning round over v, a view before any projection, for
// a window of the given size (R7.2), and returns the projection to apply
// from now on: prev's entries still in view, and the results this round
// trimmed or cleared. Results before the first user message and after
// the KeepLastAssistants-th last assistant message are never touched;
// neither is any message but a tool result.
func (p Pruning) Round(v View, window int64, prev Projection) Projection {
	by := make(map[string]Pruned, len(prev))
	for _, e := range prev {
		by[e.EntryID] = e
	}
	msgs := v.Messages
	chars := make([]int64, len(msgs))
	var total int64
	for i := range msgs {
		m := msgs[i]
		if e, ok := by[v.IDs[i]]; ok && v.IDs[i] != "" && m.Role == llm.RoleTool {
			m.Content = e.replace(m.Content)
		}
		chars[i] = pruneChars(&m)
		total += chars[i]
	}
	cutoff, start := protectedFrom(msgs, p.KeepLastAssistants), firstUser(msgs)
	charWindow := float64(window) * 4
	if cutoff < 0 || start < 0 || window <= 0 || float64(total)/charWindow < p.SoftTrimRatio {
		return keep(v, by)
	}
	var eligible []int
	var eligibleChars int64
	for i := start; i < cutoff; i++ {
		e, done := by[v.IDs[i]]
		if msgs[i].Role != llm.RoleTool || v.IDs[i] == "" || !p.prunable(msgs[i].Name) || done && e.Placeholder != "" {
			continue
		}
		eligible = append(eligible, i)
		if !done && runeLen(msgs[i].Content) > p.SoftTrimMaxChars && p.HeadChars+p.TailChars < runeLen(msgs[i].Content) {
			e = Pruned{EntryID: v.IDs[i], Head: p.HeadChars, Tail: p.TailChars}
			by[e.EntryID] = e
			m := msgs[i]
			m.Content = e.replace(m.Content)
			total += pruneChars(&m) - chars[i]
			chars[i] = pruneChars(&m)
		}
		eligibleChars += chars[i]
	}
	if p.HardClear && float64(total)/charWindow >= p.HardClearRatio && eligibleChars >= p.MinPrunableToolChars {
		for _, i := range eligible {
			if float64(total)/charWindow < p.HardClearRatio {
				break
			}
			e := Pruned{EntryID: v.IDs[i], Placeholder: p.Placeholder}
			by[e.EntryID] = e
			total += textChars(p.Placeholder) - chars[i]
		}
	}
	return keep(v, by)
}

// keep is the projection of by for the entries of v, in view order:
// pruning of results no longer in view is dropped.
func keep(v View, by map[string]Pruned) Projection {
	var out Projection
	for i, id := range v.IDs {
		if e, ok := by[id]; ok && id != "" && v.Messages[i].Role == llm.RoleTool {
			out = append(out, e)
			delete(by, id) // an id appears once
		}
	}
	return out
}

// protectedFrom is the index of the n-th last assistant message, -1 when
// there are fewer; len(msgs) when n is 0.
func protectedFrom(msgs []llm.Message, n int) int {
	if n <= 0 {
		return len(msgs)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

func firstUser(msgs []llm.Message) int {
	for i := range msgs {
		if msgs[i].Role == llm.RoleUser {
			return i
		}
	}
	return -1
}
