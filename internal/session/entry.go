package session

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// Entry is one session's row in the store (OpenClaw's SessionEntry, spec
// §5.2): the current transcript id, when it last changed, and per-session
// settings and counters. Fields OpenClaw defines but Talon does not model
// are kept in Extra and written back unchanged.
type Entry struct {
	// SessionID names the current transcript (a UUID).
	SessionID string `json:"sessionId"`
	// UpdatedAt is the time of the last change, in Unix milliseconds.
	UpdatedAt int64 `json:"updatedAt"`

	Label        string `json:"label,omitempty"`
	DisplayName  string `json:"displayName,omitempty"`
	SpawnedBy    string `json:"spawnedBy,omitempty"`
	SpawnDepth   *int   `json:"spawnDepth,omitempty"`
	SubagentRole string `json:"subagentRole,omitempty"`
	ChatType     string `json:"chatType,omitempty"`

	ExecHost     string `json:"execHost,omitempty"`
	ExecSecurity string `json:"execSecurity,omitempty"`
	ExecAsk      string `json:"execAsk,omitempty"`
	ExecNode     string `json:"execNode,omitempty"`

	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
	VerboseLevel    string `json:"verboseLevel,omitempty"`
	ReasoningLevel  string `json:"reasoningLevel,omitempty"`
	ElevatedLevel   string `json:"elevatedLevel,omitempty"`
	ResponseUsage   string `json:"responseUsage,omitempty"`
	SendPolicy      string `json:"sendPolicy,omitempty"`
	GroupActivation string `json:"groupActivation,omitempty"`

	ProviderOverride string `json:"providerOverride,omitempty"`
	ModelOverride    string `json:"modelOverride,omitempty"`
	// Model and ModelProvider are the model last used.
	Model         string `json:"model,omitempty"`
	ModelProvider string `json:"modelProvider,omitempty"`

	// The token counters, written with each commit of a turn that reports
	// usage (see Tokens). InputTokens, OutputTokens, TotalTokens and
	// ContextTokens mean what they mean in OpenClaw: the last turn's input
	// and output, the prompt of its last model call (the context in use)
	// and the model's context window (absent when the config does not
	// state it). The Cumulative ones are Talon's: every turn's usage since
	// the session was created or last reset.
	InputTokens            int64 `json:"inputTokens,omitempty"`
	OutputTokens           int64 `json:"outputTokens,omitempty"`
	TotalTokens            int64 `json:"totalTokens,omitempty"`
	ContextTokens          int64 `json:"contextTokens,omitempty"`
	CumulativeInputTokens  int64 `json:"cumulativeInputTokens,omitempty"`
	CumulativeOutputTokens int64 `json:"cumulativeOutputTokens,omitempty"`
	CumulativeTotalTokens  int64 `json:"cumulativeTotalTokens,omitempty"`
	// CacheRead and CacheWrite are the prompt-cache tokens of the last
	// turn's latest model call, and EstimatedCostUsd the last turn's cost
	// (models.providers.*.models[].cost; absent when unpriced), as in
	// OpenClaw; the Cumulative ones grow with every turn since the
	// session was created or reset, as the token counters above do.
	CacheRead                  int64   `json:"cacheRead,omitempty"`
	CacheWrite                 int64   `json:"cacheWrite,omitempty"`
	EstimatedCostUsd           float64 `json:"estimatedCostUsd,omitempty"`
	CumulativeCacheReadTokens  int64   `json:"cumulativeCacheReadTokens,omitempty"`
	CumulativeCacheWriteTokens int64   `json:"cumulativeCacheWriteTokens,omitempty"`
	CumulativeCostUsd          float64 `json:"cumulativeCostUsd,omitempty"`
	// TotalTokensFresh false marks TotalTokens as an estimate made when a
	// compaction changed the context, stale until the next model call
	// reports usage (which removes the mark), as OpenClaw's field does.
	TotalTokensFresh *bool `json:"totalTokensFresh,omitempty"`

	// CompactionCount counts the compactions of the current transcript;
	// MemoryFlushCompactionCount is what it was when the last memory
	// flush ran (MemoryFlushAt, Unix milliseconds): a flush runs at most
	// once between two compactions (spec context.md R6.2).
	CompactionCount            int64  `json:"compactionCount,omitempty"`
	MemoryFlushAt              int64  `json:"memoryFlushAt,omitempty"`
	MemoryFlushCompactionCount *int64 `json:"memoryFlushCompactionCount,omitempty"`

	AbortedLastRun bool `json:"abortedLastRun,omitempty"`
	SystemSent     bool `json:"systemSent,omitempty"`

	// Origin is where the session started ({label, provider, surface, from,
	// to, accountId, threadId, …}), kept as written.
	Origin json.RawMessage `json:"origin,omitempty"`

	// Extra holds the members this type does not model, by JSON name. They
	// are written after the modelled ones, sorted by name; a name that
	// matches a modelled field (case-insensitively) is ignored.
	Extra map[string]json.RawMessage `json:"-"`
}

// entryFields is Entry without its JSON methods.
type entryFields Entry

// knownFields are the JSON names of Entry's modelled fields, lower-cased:
// encoding/json matches struct fields case-insensitively.
var knownFields = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[entryFields]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[strings.ToLower(name)] = true
		}
	}
	return m
}()

// isKnownField matches names as encoding/json does, with Unicode case
// folding: "ſessionId" (long s) fills SessionID too, so it must not also be
// kept in Extra and written back to overwrite it.
func isKnownField(name string) bool {
	if knownFields[strings.ToLower(name)] {
		return true
	}
	for f := range knownFields {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}

// MarshalJSON writes the modelled fields, then Extra.
func (e Entry) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(entryFields(e))
	if err != nil || len(e.Extra) == 0 {
		return b, err
	}
	names := make([]string, 0, len(e.Extra))
	for k := range e.Extra {
		if !isKnownField(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	buf := bytes.NewBuffer(b[:len(b)-1]) // drop the closing brace
	for _, k := range names {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		v := e.Extra[k]
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the modelled fields and keeps every other member in
// Extra.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var f entryFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k := range all {
		if isKnownField(k) {
			delete(all, k)
		}
	}
	if len(all) > 0 {
		f.Extra = all
	}
	*e = Entry(f)
	return nil
}

// Clone returns a copy of e that shares no mutable memory with it.
func (e Entry) Clone() Entry {
	c := e
	if e.SpawnDepth != nil {
		d := *e.SpawnDepth
		c.SpawnDepth = &d
	}
	if e.TotalTokensFresh != nil {
		f := *e.TotalTokensFresh
		c.TotalTokensFresh = &f
	}
	if e.MemoryFlushCompactionCount != nil {
		n := *e.MemoryFlushCompactionCount
		c.MemoryFlushCompactionCount = &n
	}
	if e.Origin != nil {
		c.Origin = slices.Clone(e.Origin)
	}
	if e.Extra != nil {
		c.Extra = make(map[string]json.RawMessage, len(e.Extra))
		for k, v := range e.Extra {
			c.Extra[k] = slices.Clone(v)
		}
	}
	return c
}

// Tokens is what one commit of a turn writes to its session's counters
// (the Entry fields of the same names): the turn's figures so far, which
// replace the last turn's, and what the model reported since the turn's
// previous commit, which the cumulative counters grow by. A turn commits
// once per model call, so a turn that fails or is aborted has counted
// every call that answered.
type Tokens struct {
	Input, Output int64 // the turn's input and output so far
	Context       int64 // the prompt of the turn's latest model call
	Window        int64 // the model's context window; 0 when unknown
	// AddInput, AddOutput and AddTotal are the usage reported since the
	// turn's previous commit.
	AddInput, AddOutput, AddTotal int64
	// CacheRead and CacheWrite are the prompt-cache tokens of the turn's
	// latest model call, Cost the turn's cost so far in micro-dollars;
	// the Add ones what was reported since the previous commit.
	CacheRead, CacheWrite, Cost          int64
	AddCacheRead, AddCacheWrite, AddCost int64
}

// Pending reports whether t has usage the session has not counted yet.
func (t *Tokens) Pending() bool {
	return t.AddInput != 0 || t.AddOutput != 0 || t.AddTotal != 0 ||
		t.AddCacheRead != 0 || t.AddCacheWrite != 0 || t.AddCost != 0
}

// CountCache adds one model call's prompt-cache tokens and cost (in
// micro-dollars) to a turn's figures, beside Count.
func (t *Tokens) CountCache(read, write, cost int64) {
	t.CacheRead, t.CacheWrite = read, write
	t.Cost += cost
	t.AddCacheRead += read
	t.AddCacheWrite += write
	t.AddCost += cost
}

// Count adds one model call's usage (input, output and total tokens) to
// a turn's figures.
func (t *Tokens) Count(input, output, total int64) {
	if total == 0 {
		total = input + output
	}
	t.Input += input
	t.Output += output
	t.Context = input
	t.AddInput += input
	t.AddOutput += output
	t.AddTotal += total
}

// Counted marks the pending usage as written.
func (t *Tokens) Counted() {
	t.AddInput, t.AddOutput, t.AddTotal = 0, 0, 0
	t.AddCacheRead, t.AddCacheWrite, t.AddCost = 0, 0, 0
}
