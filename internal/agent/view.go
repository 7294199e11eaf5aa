package agent

import (
	"context"
	"fmt"
	"time"

	"talon/internal/compaction"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/session"
	"talon/internal/store"
)

// This file is what a run knows of its session's context (spec
// context.md): the window of the model the request goes to, the
// compaction and pruning settings, and the part of the transcript in
// view, from which every request of the run is built.

// view is a run's state of its session's context. It is the run's own.
type view struct {
	agentID, key string
	win          compaction.Window
	set          compaction.Settings
	prune        compaction.Pruning
	// sessionID is the transcript entries are of; "" while the session
	// has none.
	sessionID string
	entries   []compaction.Entry
	bytes     int64
	// lastSeq is the number of the last row read.
	lastSeq int64
	// proj is the pruning projection in force; dirty says a round
	// changed it and the next commit records it.
	proj      compaction.Projection
	dirty     bool
	lastTouch time.Time
	// fixed is what a request takes besides its messages (the system
	// prompt and the tool definitions), estimated.
	fixed int64
	// flushed says a memory flush ran since the last compaction.
	flushed bool
}

// newView is the view of agentID's session key, whose entry is e (zero
// when it has none), for a request to the model ref.
func newView(cfg *config.Config, agentID, key, ref string, e session.Entry) *view {
	return &view{
		agentID: agentID, key: key,
		win:       compaction.ResolveWindow(cfg, ref),
		set:       compaction.SettingsFor(cfg, agentID),
		prune:     compaction.PruningFor(cfg, agentID),
		sessionID: e.SessionID,
		flushed:   e.MemoryFlushCompactionCount != nil && *e.MemoryFlushCompactionCount == e.CompactionCount,
	}
}

// read (re)reads the transcript's part in view from the store.
func (v *view) read(ctx context.Context, db *store.DB) error {
	if v.sessionID == "" {
		return nil
	}
	sv, err := db.ReadView(ctx, v.sessionID)
	if err != nil {
		return fmt.Errorf("reading the transcript of %s: %w", v.key, err)
	}
	v.load(sv)
	return nil
}

// load takes the records of a store.View: the entries, the last
// projection, and the time of the last answered model call (which
// started the prompt cache's clock, R7.1).
func (v *view) load(sv store.View) {
	v.entries, v.bytes, v.proj, v.dirty, v.lastTouch = make([]compaction.Entry, 0, len(sv.Records)), sv.Bytes, nil, false, time.Time{}
	if n := len(sv.Records); n > 0 {
		v.lastSeq = sv.Records[n-1].Seq
	}
	for i := range sv.Records {
		rec := &sv.Records[i]
		if rec.Kind == store.KindProjection {
			v.proj = rec.Projection
			continue
		}
		e, _ := rec.Entry()
		v.entries = append(v.entries, e)
		if rec.Kind == store.KindMessage && rec.Message.Role == llm.RoleAssistant && rec.Usage.Tokens() > 0 && rec.Message.StopReason == "" {
			v.lastTouch = time.UnixMilli(rec.CreatedAt)
		}
	}
}

// empty reports whether the session has no transcript yet.
func (v *view) empty() bool { return len(v.entries) == 0 }

// messages are the request's messages: the view of the stored entries
// with pending (messages of this turn not stored yet) after them, tool
// calls and results paired across both, pruned (a round when one is due,
// and the projection in force always) and the tool results capped to
// the window.
func (v *view) messages(now time.Time, pending []llm.Message) []llm.Message {
	return v.build(now, pending, true)
}

// conversation is the view of the stored entries as the model is sent
// it, with the projection in force and no pruning round: what a memory
// flush's detached turn starts from.
func (v *view) conversation() []llm.Message { return v.build(time.Time{}, nil, false) }

func (v *view) build(now time.Time, pending []llm.Message, round bool) []llm.Message {
	all := v.entries
	if len(pending) > 0 {
		all = make([]compaction.Entry, len(v.entries), len(v.entries)+len(pending))
		copy(all, v.entries)
		for _, m := range pending {
			all = append(all, compaction.Entry{Message: m})
		}
	}
	vw := compaction.BuildView(all)
	if round && v.prune.Due(now, v.lastTouch, v.size(v.tokens(pending)), v.win.Tokens) {
		if next := v.prune.Round(vw, v.win.Tokens, v.proj); !sameProjection(next, v.proj) {
			v.proj, v.dirty = next, true
		}
	}
	v.proj.Apply(&vw)
	compaction.CapToolResults(vw.Messages, v.win.Tokens)
	return vw.Messages
}

func sameProjection(a, b compaction.Projection) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// tokens is the estimated context of the stored view with pending after
// it (R3.3): anchored on the last usage in view, else every message
// estimated (the fixed part is then not in it).
func (v *view) tokens(pending []llm.Message) compaction.Tokens {
	t := compaction.Estimate(v.entries)
	t.Add(pending...)
	return t
}

// size is a request's estimated size from the running estimate t: with
// the fixed part when no usage anchors it.
func (v *view) size(t compaction.Tokens) int64 {
	if t.Reported > 0 {
		return t.Total()
	}
	return t.Total() + v.fixed
}

// turn is the state the compaction and flush decisions read, for a
// request of the given size.
func (v *view) turn(size int64, readOnly bool) compaction.Turn {
	return compaction.Turn{Window: v.win.Tokens, Tokens: size, ViewBytes: v.bytes, Flushed: v.flushed, ReadOnly: readOnly}
}

// fixedTokens estimates the system prompt and the tool definitions.
func fixedTokens(system string, specs []llm.ToolSpec) int64 {
	n := compaction.EstimateText(system)
	for _, s := range specs {
		n += compaction.EstimateText(s.Name) + compaction.EstimateText(s.Description) + int64(len(s.Parameters)+3)/4
	}
	return n
}
