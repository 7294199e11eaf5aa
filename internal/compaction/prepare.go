package compaction

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"talon/internal/llm"
)

// This file is the preparation of a compaction (spec context.md R5.9):
// where to cut, what to summarise, and the facts kept beside the summary.

// Why a compaction has nothing to do; the messages are the reasons its
// notice shows (R9.1).
var (
	ErrAlreadyCompacted = errors.New("session is already compacted")
	ErrNothingToCompact = errors.New("nothing compactable in this session yet")
)

// summaryAllowance is the room, in tokens, a summary is budgeted to take
// in the view: maxSummaryChars of ASCII.
const summaryAllowance = maxSummaryChars / 4

// Budget is how much of the recent conversation a compaction keeps
// verbatim: about Keep tokens, never more than MaxTail.
type Budget struct{ Keep, MaxTail int64 }

// Budget is the budget of a compaction for a window of the given size,
// with fixed the tokens of the request besides its messages (system
// prompt, tool definitions). MaxTail is what fits below the threshold
// beside the summary; Keep is KeepRecentTokens, but at most half of
// MaxTail, so that the turns after a compaction have room to grow before
// the next one (Talon's rule: a compaction that leaves the context at the
// threshold would run again on the next turn).
func (s Settings) Budget(window, fixed int64) Budget {
	maxTail := max(0, s.Threshold(window)-max(0, fixed)-summaryAllowance)
	return Budget{Keep: min(s.KeepRecentTokens, maxTail/2), MaxTail: maxTail}
}

// Plan is a prepared compaction: what to summarise and what to keep.
type Plan struct {
	// FirstKeptEntryID is the first entry kept verbatim; "" keeps none.
	FirstKeptEntryID string
	// History is what to summarise, oldest first; with PreviousSummary
	// (the last compaction's summary, "" when none) the summary is an
	// update of it.
	History         []llm.Message
	PreviousSummary string
	// TurnPrefix is the start of a turn the cut splits, summarised on its
	// own (R5.9 step 4); nil when the cut is at a turn's start.
	TurnPrefix []llm.Message
	// Details are the file lists (this and earlier compactions') and the
	// user request still open.
	Details Details
	// TokensBefore is Estimate of the transcript; overflow recovery sets
	// it to the size the provider stated (R5.3).
	TokensBefore int64
	// Compacted is the number of messages the compaction takes out of
	// view.
	Compacted int

	// previousTags are the file tags the previous summary ends with.
	previousTags string
}

// Prepare plans the compaction of a transcript (R5.9). entries need hold
// only the tail from the last boundary's first kept entry on; pending is
// input the request being retried carries but the transcript does not
// hold yet (its user text is the request still open). Its errors are
// ErrAlreadyCompacted and ErrNothingToCompact.
//
// The cut walks back from the end until Keep tokens are kept and lands on
// a user or assistant message, never on a tool result: one that lands on a
// result moves back to the assistant message whose call it answers, so a
// call and its result stay on one side (vector 5). A tail larger than
// MaxTail moves the cut forward to the first cut point that fits, or
// keeps nothing. A cut that keeps nothing makes FirstKeptEntryID "".
func Prepare(entries []Entry, b Budget, pending []llm.Message) (*Plan, error) {
	if len(entries) == 0 {
		return nil, ErrNothingToCompact
	}
	switch entries[len(entries)-1].Kind {
	case KindCompaction:
		return nil, ErrAlreadyCompacted
	case KindReset:
		return nil, ErrNothingToCompact
	}
	bound := lastBoundary(entries)
	start := region(entries, bound)
	idx := messageIndexes(entries, start)
	cut := cutPoint(entries, idx, b)
	p := &Plan{TokensBefore: Estimate(entries).Total()}
	if cut < len(idx) {
		p.FirstKeptEntryID = entries[idx[cut]].ID
	}
	history := idx[:cut]
	if turn := turnStart(entries, idx, cut); turn >= 0 {
		history = idx[:turn]
		p.TurnPrefix = messagesAt(entries, idx[turn:cut])
	}
	p.History = messagesAt(entries, history)
	p.Compacted = cut
	if len(p.History) == 0 && len(p.TurnPrefix) == 0 {
		return nil, ErrNothingToCompact
	}
	var prev *Compaction
	if bound >= 0 && entries[bound].Kind == KindCompaction {
		prev = entries[bound].Compaction
	}
	if prev != nil {
		p.PreviousSummary = prev.Summary
		p.previousTags = fileTags(prev.Details.ReadFiles, prev.Details.ModifiedFiles)
	}
	p.Details = details(prev, p.History, p.TurnPrefix, entries, idx, pending)
	return p, nil
}

// messageIndexes are the indexes of the message entries from start on.
func messageIndexes(entries []Entry, start int) []int {
	idx := make([]int, 0, len(entries)-start)
	for i := start; i < len(entries); i++ {
		if entries[i].Kind == KindMessage {
			idx = append(idx, i)
		}
	}
	return idx
}

func messagesAt(entries []Entry, idx []int) []llm.Message {
	out := make([]llm.Message, len(idx))
	for i, j := range idx {
		out[i] = entries[j].Message
	}
	return out
}

// cutPoint is the position in idx of the first message kept; len(idx)
// keeps none.
func cutPoint(entries []Entry, idx []int, b Budget) int {
	cut, kept := len(idx), int64(0)
	for k := len(idx) - 1; k >= 0 && kept < b.Keep; k-- {
		kept += EstimateMessage(&entries[idx[k]].Message)
		cut = k
	}
	// Never on a tool result: back to the call it answers.
	for cut > 0 && cut < len(idx) && entries[idx[cut]].Message.Role == llm.RoleTool {
		cut--
	}
	tail := int64(0)
	for k := cut; k < len(idx); k++ {
		tail += EstimateMessage(&entries[idx[k]].Message)
	}
	for cut < len(idx) && (tail > b.MaxTail || entries[idx[cut]].Message.Role == llm.RoleTool) {
		tail -= EstimateMessage(&entries[idx[cut]].Message)
		cut++
	}
	return cut
}

// turnStart is the position of the user message that starts the turn the
// cut splits, -1 when the cut is at a turn's start, keeps nothing, or the
// turn began before the region.
func turnStart(entries []Entry, idx []int, cut int) int {
	if cut >= len(idx) || entries[idx[cut]].Message.Role == llm.RoleUser {
		return -1
	}
	for k := cut - 1; k >= 0; k-- {
		if entries[idx[k]].Message.Role == llm.RoleUser {
			return k
		}
	}
	return -1
}

// details gathers the file operations of what is summarised (with the
// previous compaction's lists, R5.9 step 6) and the request still open
// (step 7).
func details(prev *Compaction, history, prefix []llm.Message, entries []Entry, idx []int, pending []llm.Message) Details {
	ops := fileOps{read: map[string]bool{}, modified: map[string]bool{}}
	if prev != nil {
		for _, f := range prev.Details.ReadFiles {
			ops.read[f] = true
		}
		for _, f := range prev.Details.ModifiedFiles {
			ops.modified[f] = true
		}
	}
	for _, msgs := range [][]llm.Message{history, prefix} {
		for i := range msgs {
			ops.add(&msgs[i])
		}
	}
	d := ops.lists()
	d.LatestUnresolvedUserRequest = openRequest(entries, idx, pending)
	return d
}

type fileOps struct{ read, modified map[string]bool }

// add records the paths of a message's read, write, edit and apply_patch
// calls.
func (o *fileOps) add(m *llm.Message) {
	for _, c := range m.ToolCalls {
		name := strings.ToLower(c.Name)
		if i := strings.Index(name, "__"); strings.HasPrefix(name, "mcp__") && i >= 0 {
			// An MCP server's tool: mcp__server__tool.
			if j := strings.Index(name[5:], "__"); j >= 0 {
				name = name[5+j+2:]
			}
		}
		switch name {
		case "read", "write", "edit":
			var args struct {
				Path     string `json:"path"`
				FilePath string `json:"file_path"`
				FileCase string `json:"filePath"`
			}
			if json.Unmarshal([]byte(c.Arguments), &args) != nil {
				continue
			}
			path := firstNonEmpty(args.Path, args.FilePath, args.FileCase)
			switch {
			case path == "":
			case name == "read":
				o.read[path] = true
			default:
				o.modified[path] = true
			}
		case "apply_patch":
			var args struct {
				Input string `json:"input"`
			}
			if json.Unmarshal([]byte(c.Arguments), &args) == nil {
				for _, f := range patchFiles(args.Input) {
					o.modified[f] = true
				}
			}
		}
	}
}

// patchFiles are the files an apply_patch input adds, updates, deletes or
// moves to.
func patchFiles(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, p := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if f, ok := strings.CutPrefix(line, p); ok && strings.TrimSpace(f) != "" {
				out = append(out, strings.TrimSpace(f))
			}
		}
	}
	return out
}

// lists are the sorted read-only and modified files.
func (o *fileOps) lists() Details {
	d := Details{ReadFiles: []string{}, ModifiedFiles: []string{}}
	for f := range o.read {
		if !o.modified[f] {
			d.ReadFiles = append(d.ReadFiles, f)
		}
	}
	for f := range o.modified {
		d.ModifiedFiles = append(d.ModifiedFiles, f)
	}
	slices.Sort(d.ReadFiles)
	slices.Sort(d.ModifiedFiles)
	return d
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Bounds of the request still open (R5.9 step 7).
const (
	maxRequestChars  = 800
	requestHeadChars = 379
	requestTailChars = 380
	requestMarker    = "\n[... latest user request truncated ...]\n"
)

// openRequest is the text of the last user message no final answer
// followed, at most 800 characters (head, marker, tail); "" when the last
// request was answered. A final answer is an assistant message with text
// and no tool calls; pending input comes after the transcript.
func openRequest(entries []Entry, idx []int, pending []llm.Message) string {
	for i := len(pending) - 1; i >= 0; i-- {
		if pending[i].Role == llm.RoleUser && strings.TrimSpace(pending[i].Content) != "" {
			return clipRequest(strings.TrimSpace(pending[i].Content))
		}
	}
	for k := len(idx) - 1; k >= 0; k-- {
		m := &entries[idx[k]].Message
		switch {
		case m.Role == llm.RoleAssistant && m.Content != "" && len(m.ToolCalls) == 0 && m.StopReason == "":
			return ""
		case m.Role == llm.RoleUser && strings.TrimSpace(m.Content) != "":
			return clipRequest(strings.TrimSpace(m.Content))
		}
	}
	return ""
}

func clipRequest(s string) string {
	r := []rune(s)
	if len(r) <= maxRequestChars {
		return s
	}
	return string(r[:requestHeadChars]) + requestMarker + string(r[len(r)-requestTailChars:])
}
