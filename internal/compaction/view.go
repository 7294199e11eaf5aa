package compaction

import (
	"slices"

	"talon/internal/llm"
)

// This file is the request view (spec context.md §4): what of an
// append-only transcript the model is sent.

// Kind is what a transcript entry is.
type Kind uint8

// Kinds of entries. A compaction or a reset is a boundary: the view starts
// at the last one.
const (
	KindMessage    Kind = iota // a message of the conversation
	KindCompaction             // a summary of what came before (Compaction)
	KindReset                  // /new or /reset: nothing before it is in view
)

// Entry is one transcript entry as this package reads it. The store
// persists entries append-only and gives each an ID that is unique within
// its transcript; entries of other kinds (hidden markers) are the
// caller's to leave out.
type Entry struct {
	ID   string
	Kind Kind
	// Message is a KindMessage entry's message; Usage, for an assistant
	// message, what the provider reported for the call that produced it
	// (zero when unknown).
	Message llm.Message
	Usage   Usage
	// Compaction is a KindCompaction entry's record.
	Compaction *Compaction
}

// Compaction is the record a compaction appends to a transcript (spec
// §1): the summary of everything before FirstKeptEntryID, which is the
// first entry still in view verbatim ("" when none is). Its JSON is
// OpenClaw's compaction entry without the envelope.
type Compaction struct {
	Summary          string  `json:"summary"`
	FirstKeptEntryID string  `json:"firstKeptEntryId,omitempty"`
	TokensBefore     int64   `json:"tokensBefore"`
	Details          Details `json:"details"`
}

// Details are a compaction's facts besides the summary: the files read and
// modified in what it summarised (these and earlier compactions'), the
// user request still open when it ran, and whether the summary is the
// deterministic stub of a hard trim (Talon's) rather than a model's.
type Details struct {
	ReadFiles                   []string `json:"readFiles"`
	ModifiedFiles               []string `json:"modifiedFiles"`
	LatestUnresolvedUserRequest string   `json:"latestUnresolvedUserRequest,omitempty"`
	HardTrim                    bool     `json:"hardTrim,omitempty"`
}

// SummaryIntro begins the message a compaction's summary is sent as.
const SummaryIntro = "The conversation history before this point was compacted into the following summary:"

// SummaryMessage is the user message that carries a summary into the view
// (R4.1).
func SummaryMessage(summary string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: SummaryIntro + "\n\n<summary>\n" + summary + "\n</summary>"}
}

// View is what the model is sent of a transcript: Messages, and for each
// the ID of the entry it came from ("" for the summary message).
type View struct {
	Messages []llm.Message
	IDs      []string
}

// lastBoundary is the index of the last compaction or reset entry, -1 when
// there is none.
func lastBoundary(entries []Entry) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind != KindMessage {
			return i
		}
	}
	return -1
}

// region is where the view's entries are: from start to the end, leaving
// out the boundary at b (-1: none). The entries from the boundary's first
// kept entry up to it stay in view (R4.1); when the first kept entry is
// not among entries, everything given before the boundary does.
func region(entries []Entry, b int) (start int) {
	if b < 0 {
		return 0
	}
	c := entries[b].Compaction
	if entries[b].Kind != KindCompaction || c == nil || c.FirstKeptEntryID == "" {
		return b + 1
	}
	for i := b - 1; i >= 0; i-- {
		if entries[i].ID == c.FirstKeptEntryID {
			return i
		}
	}
	return 0
}

// BuildView builds the request view of a transcript (R4.1–R4.3): the last
// boundary's summary as one user message, the entries from its first kept
// entry up to it, and every entry after it; with tool calls and results
// paired, so that no call goes unanswered and no result is orphaned (a
// view never starts with a tool result). entries need hold only the tail
// from the last boundary's first kept entry on, which is what keeps a
// turn's cost flat however long the session grows; entries is not
// modified.
func BuildView(entries []Entry) View {
	b := lastBoundary(entries)
	start := region(entries, b)
	n := len(entries) - start + 1
	v := View{Messages: make([]llm.Message, 0, n), IDs: make([]string, 0, n)}
	if b >= 0 && entries[b].Kind == KindCompaction && entries[b].Compaction != nil {
		v.Messages = append(v.Messages, SummaryMessage(entries[b].Compaction.Summary))
		v.IDs = append(v.IDs, "")
	}
	for i := start; i < len(entries); i++ {
		if entries[i].Kind == KindMessage {
			v.Messages = append(v.Messages, entries[i].Message)
			v.IDs = append(v.IDs, entries[i].ID)
		}
	}
	v.Messages, v.IDs = pair(v.Messages, v.IDs)
	return v
}

// Replayable is msgs as a model API takes them back: tool calls without a
// result and results without their call left out, and so is an assistant
// message left with nothing to say (a turn that failed before any text).
// A call's results are the tool messages between its assistant message
// and the next assistant message, which is where every provider wants
// them. msgs is not modified.
func Replayable(msgs []llm.Message) []llm.Message {
	out, _ := pair(slices.Clone(msgs), nil)
	return out
}

// pair applies Replayable's rule to msgs in place, keeping ids (when not
// nil) parallel.
func pair(msgs []llm.Message, ids []string) ([]llm.Message, []string) {
	out := msgs[:0]
	var outIDs []string
	if ids != nil {
		outIDs = ids[:0]
	}
	// answered holds the ids of the calls kept from the last assistant
	// message; results for other ids are orphans.
	var answered []string
	for i := range msgs {
		m := msgs[i]
		switch m.Role {
		case llm.RoleAssistant:
			answered = answered[:0]
			missing := false
			for _, c := range m.ToolCalls {
				if hasResult(msgs[i+1:], c.ID) {
					answered = append(answered, c.ID)
				} else {
					missing = true
				}
			}
			if missing {
				// Allocated only for a turn that lost results: the
				// common view shares its messages' calls.
				var kept []llm.ToolCall
				for _, c := range m.ToolCalls {
					if slices.Contains(answered, c.ID) {
						kept = append(kept, c)
					}
				}
				m.ToolCalls = kept
			}
			if m.Content == "" && len(m.ToolCalls) == 0 && (m.StopReason != "" || len(msgs[i].ToolCalls) > 0) {
				continue // nothing left to say
			}
		case llm.RoleTool:
			if !slices.Contains(answered, m.ToolCallID) {
				continue
			}
			// A second result for the same call is an orphan too.
			answered = slices.DeleteFunc(answered, func(id string) bool { return id == m.ToolCallID })
		}
		out = append(out, m)
		if ids != nil {
			outIDs = append(outIDs, ids[i])
		}
	}
	return out, outIDs
}

// hasResult reports whether a tool message before the next assistant
// message answers call id.
func hasResult(rest []llm.Message, id string) bool {
	for i := range rest {
		switch {
		case rest[i].Role == llm.RoleAssistant:
			return false
		case rest[i].Role == llm.RoleTool && rest[i].ToolCallID == id:
			return true
		}
	}
	return false
}
