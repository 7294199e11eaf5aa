package compaction

import (
	"strings"
	"time"

	"talon/internal/config"
)

// This file is the compaction and memory-flush settings (spec context.md
// §5.1, §6.1) as a run uses them, and the decisions made from them: the
// reserve (R5.1), the threshold (R5.2), the preflight by size (R5.5) and
// the memory-flush trigger (R6.2, R6.4).

// Defaults of agents.defaults.compaction.
const (
	defaultReserveTokens   = 16_384
	defaultReserveFloor    = 20_000
	defaultKeepRecent      = 20_000
	defaultTimeout         = 900 * time.Second
	defaultSoftThreshold   = 4_000
	defaultForceFlushBytes = 2 << 20
)

// Identifier policies.
const (
	identifiersStrict = "strict"
	identifiersOff    = "off"
	identifiersCustom = "custom"
)

// Settings are an agent's compaction settings: agents.defaults.compaction
// with the agent's own block over it, field by field, and the defaults
// where neither says.
type Settings struct {
	// Enabled is threshold compaction; overflow recovery and /compact
	// run either way.
	Enabled bool
	// Safeguard is mode "safeguard": the quality guard is on by default.
	Safeguard bool
	// ReserveTokens and ReserveTokensFloor make the reserve (Reserve).
	ReserveTokens, ReserveTokensFloor int64
	// KeepRecentTokens is the recent tail kept verbatim.
	KeepRecentTokens int64
	// Timeout bounds one compaction, all its model calls included.
	Timeout time.Duration
	// Model is the model summaries are made with ("" for the session's).
	Model string
	// IdentifierPolicy is strict, off or custom (with
	// IdentifierInstructions).
	IdentifierPolicy, IdentifierInstructions string
	// QualityRetries is how many times a summary that fails Check is
	// asked for again; 0 with the quality guard off.
	QualityRetries int
	// NotifyUser sends the start and end notices of automatic compaction.
	NotifyUser bool
	// MaxActiveTranscriptBytes compacts before a run whose view is that
	// large; 0 never.
	MaxActiveTranscriptBytes int64
	// MidTurnPrecheck checks, after tool results and before the next
	// model call, that the request still fits (R5.6).
	MidTurnPrecheck bool
	Flush           Flush
}

// Flush are the memory-flush settings (agents.defaults.compaction.
// memoryFlush).
type Flush struct {
	Enabled             bool
	SoftThresholdTokens int64
	// Model runs the flush turn ("" for the session's); Prompt and
	// SystemPrompt replace the built-in texts.
	Model, Prompt, SystemPrompt string
	// ForceTranscriptBytes flushes when the view is that large; 0 never.
	ForceTranscriptBytes int64
}

// SettingsFor returns agentID's settings from cfg (nil: the defaults).
// The config has been validated, so values are in range.
func SettingsFor(cfg *config.Config, agentID string) Settings {
	var d, a config.Compaction
	if cfg != nil {
		d = cfg.Agents.Defaults.Compaction
		if e, _ := cfg.Agent(agentID); e != nil {
			a = e.Compaction
		}
	}
	s := Settings{
		Enabled:                  override(a.Enabled, d.Enabled, true),
		Safeguard:                text(a.Mode, d.Mode, "default") == "safeguard",
		ReserveTokens:            number(a.ReserveTokens, d.ReserveTokens, defaultReserveTokens),
		ReserveTokensFloor:       number(a.ReserveTokensFloor, d.ReserveTokensFloor, defaultReserveFloor),
		KeepRecentTokens:         number(a.KeepRecentTokens, d.KeepRecentTokens, defaultKeepRecent),
		Timeout:                  time.Duration(number(a.TimeoutSeconds, d.TimeoutSeconds, int64(defaultTimeout/time.Second))) * time.Second,
		Model:                    text(a.Model, d.Model, ""),
		IdentifierPolicy:         text(a.IdentifierPolicy, d.IdentifierPolicy, identifiersStrict),
		IdentifierInstructions:   strings.TrimSpace(text(a.IdentifierInstructions, d.IdentifierInstructions, "")),
		NotifyUser:               override(a.NotifyUser, d.NotifyUser, false),
		MaxActiveTranscriptBytes: size(a.MaxActiveTranscriptBytes, d.MaxActiveTranscriptBytes, 0),
		MidTurnPrecheck:          override(a.MidTurnPrecheck.Enabled, d.MidTurnPrecheck.Enabled, false),
		Flush: Flush{
			Enabled:              override(a.MemoryFlush.Enabled, d.MemoryFlush.Enabled, true),
			SoftThresholdTokens:  number(a.MemoryFlush.SoftThresholdTokens, d.MemoryFlush.SoftThresholdTokens, defaultSoftThreshold),
			Model:                text(a.MemoryFlush.Model, d.MemoryFlush.Model, ""),
			Prompt:               text(a.MemoryFlush.Prompt, d.MemoryFlush.Prompt, ""),
			SystemPrompt:         text(a.MemoryFlush.SystemPrompt, d.MemoryFlush.SystemPrompt, ""),
			ForceTranscriptBytes: size(a.MemoryFlush.ForceFlushTranscriptBytes, d.MemoryFlush.ForceFlushTranscriptBytes, defaultForceFlushBytes),
		},
	}
	var qa, qd config.QualityGuard
	if a.QualityGuard != nil {
		qa = *a.QualityGuard
	}
	if d.QualityGuard != nil {
		qd = *d.QualityGuard
	}
	if override(qa.Enabled, qd.Enabled, s.Safeguard) {
		s.QualityRetries = int(number(qa.MaxRetries, qd.MaxRetries, 1))
	}
	return s
}

// override is an agent's own value of a key, else the defaults', else def.
func override[T any](agent, defaults *T, def T) T {
	switch {
	case agent != nil:
		return *agent
	case defaults != nil:
		return *defaults
	}
	return def
}

func number(agent, defaults *int, def int64) int64 {
	return int64(override(agent, defaults, int(def)))
}

func text(agent, defaults, def string) string {
	switch {
	case strings.TrimSpace(agent) != "":
		return strings.TrimSpace(agent)
	case strings.TrimSpace(defaults) != "":
		return strings.TrimSpace(defaults)
	}
	return def
}

// size reads a byte size; a value the config check refused cannot reach
// here, so an error is read as the default.
func size(agent, defaults *config.Raw, def int64) int64 {
	for _, r := range []*config.Raw{agent, defaults} {
		if r != nil && r.Value != nil && r.Kind != config.Null {
			if n, err := config.ByteSize(r); err == nil {
				return n
			}
			return def
		}
	}
	return def
}

// Reserve is the headroom kept free in a window of the given size (R5.1):
// the larger of ReserveTokens and ReserveTokensFloor, but at most a
// quarter of the window, so that a small window keeps three quarters for
// the conversation.
func (s Settings) Reserve(window int64) int64 {
	return max(0, min(max(s.ReserveTokens, s.ReserveTokensFloor), window/4))
}

// Threshold is the context size above which a window of the given size
// needs compaction (R5.2).
func (s Settings) Threshold(window int64) int64 { return window - s.Reserve(window) }

// Turn is the state of a session before a model request, as the
// compaction and flush decisions need it.
type Turn struct {
	Window int64 // the window of the model the request goes to
	// Tokens is the request's size: Estimate's total with the pending
	// input added, and the system prompt and tool definitions when no
	// usage anchors the estimate.
	Tokens int64
	// ViewBytes is the size of the entries in view, as stored.
	ViewBytes int64
	// Flushed says a memory flush already ran since the last compaction
	// (the session's memoryFlushCompactionCount is its compactionCount).
	Flushed bool
	// Heartbeat, ReadOnly and Incognito are the turns a flush skips: a
	// heartbeat, a workspace the agent may not write (workspaceAccess ro
	// or none), a session that keeps no memory.
	Heartbeat, ReadOnly, Incognito bool
}

// CompactDue reports whether the session should be compacted before the
// request: its context is above the threshold (R5.2, when Enabled) or its
// view is larger than MaxActiveTranscriptBytes (R5.5).
func (s Settings) CompactDue(t Turn) bool {
	if s.Enabled && t.Window > 0 && t.Tokens > s.Threshold(t.Window) {
		return true
	}
	return s.MaxActiveTranscriptBytes > 0 && t.ViewBytes >= s.MaxActiveTranscriptBytes
}

// FlushThreshold is the context size from which a memory flush runs
// (R6.2): SoftThresholdTokens below the compaction threshold, but never
// more than half of the room between the reserve and the window.
func (s Settings) FlushThreshold(window int64) int64 {
	room := s.Threshold(window)
	return room - min(s.Flush.SoftThresholdTokens, max(0, room/2))
}

// FlushDue reports whether a memory flush should run before the request
// (R6.2, R6.4): at most once per compaction cycle, never on a heartbeat,
// a read-only workspace or an incognito session, when the context
// reaches FlushThreshold or the view ForceTranscriptBytes.
func (s Settings) FlushDue(t Turn) bool {
	if !s.Flush.Enabled || t.Flushed || t.Heartbeat || t.ReadOnly || t.Incognito {
		return false
	}
	if t.Window > 0 && t.Tokens >= s.FlushThreshold(t.Window) {
		return true
	}
	return s.Flush.ForceTranscriptBytes > 0 && t.ViewBytes >= s.Flush.ForceTranscriptBytes
}
