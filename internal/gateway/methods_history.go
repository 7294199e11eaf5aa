package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"talon/internal/agent"
	"talon/internal/llm"
	"talon/internal/store"
	"talon/protocol"
)

// chat.history (spec §2.1, §7 item 11): the last messages of a session's
// transcript in OpenClaw's message shape, for display. It is what
// openclaw-node's sessions.history() calls.
func init() {
	register("chat.history", protocol.ScopeRead, chatHistory)
}

// Bounds of chat.history, upstream's.
const (
	historyDefaultLimit = 200
	historyMaxLimit     = 1000
	// historyDefaultMaxChars bounds each text of a message unless the
	// caller asks otherwise; historyMaxMaxChars bounds what it may ask.
	historyDefaultMaxChars = 8000
	historyMaxMaxChars     = 500000
	// A message larger than this, encoded, is replaced by a placeholder;
	// the messages together are cut to the newest that fit the total.
	historyMaxMessageBytes = 128 << 10
	historyMaxTotalBytes   = 6 << 20

	historyOversized = "[chat.history omitted: message too large]"
	truncatedMark    = "\n...(truncated)..."
)

// Parts of a message's content.
type (
	textPart struct {
		Type string `json:"type"` // "text"
		Text string `json:"text"`
	}
	// thinkingPart is an answer's reasoning, OpenClaw's thinking block
	// without its signature (opaque, the provider's).
	thinkingPart struct {
		Type     string `json:"type"` // "thinking"
		Thinking string `json:"thinking"`
	}
	toolCallPart struct {
		Type      string `json:"type"` // "toolCall"
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments any    `json:"arguments"` // the JSON object, or the model's text when it is not JSON
	}
	// imagePart stands for an image; its bytes are not sent (a display
	// gets its type and size; the transcript keeps the data).
	imagePart struct {
		Type     string `json:"type"` // "image"
		MimeType string `json:"mimeType"`
		Bytes    int    `json:"bytes"`
		Omitted  bool   `json:"omitted"`
	}
)

// historyMessage is one transcript message as OpenClaw's clients read it.
type historyMessage struct {
	Role         string      `json:"role"` // user, assistant, toolResult
	Content      []any       `json:"content"`
	Timestamp    int64       `json:"timestamp"`
	ToolCallID   string      `json:"toolCallId,omitempty"`
	ToolName     string      `json:"toolName,omitempty"`
	IsError      *bool       `json:"isError,omitempty"`
	StopReason   string      `json:"stopReason,omitempty"`
	ErrorMessage string      `json:"errorMessage,omitempty"`
	Meta         historyMeta `json:"__openclaw"`
}

// historyMeta is upstream's per-message metadata: the message's number in
// the transcript, why its content was replaced, and whether it is a
// system event.
type historyMeta struct {
	Seq       int64  `json:"seq"`
	Truncated bool   `json:"truncated,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Kind, ID and the token counts mark a compaction or a reset as
	// upstream's history does: a system message "Compaction" (the divider
	// a display shows where the summary starts, spec context.md R9.6)
	// with __openclaw {kind:"compaction", id, tokensBefore, tokensAfter}.
	// Everything before it is still listed.
	// Listed where it was appended, a compaction names the first entry it
	// kept (firstKeptEntryId, Talon's), for a display to put the divider
	// before.
	Kind             string `json:"kind,omitempty"`
	ID               string `json:"id,omitempty"`
	TokensBefore     int64  `json:"tokensBefore,omitempty"`
	TokensAfter      int64  `json:"tokensAfter,omitempty"`
	FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"`
	HardTrim         bool   `json:"hardTrim,omitempty"`
	// SystemEvent marks what the gateway told the session ("System: Exec
	// finished …", agent.SystemEvent): a user message, as the model sees
	// it and as OpenClaw's clients show such text, which a display can
	// tell from a person's words by this flag.
	SystemEvent bool `json:"systemEvent,omitempty"`
}

func chatHistory(_ *Server, c *call) (any, error) {
	var p struct {
		SessionKey string   `json:"sessionKey"`
		Limit      *float64 `json:"limit"`
		MaxChars   *float64 `json:"maxChars"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	limit, maxChars := historyDefaultLimit, historyDefaultMaxChars
	if n, ok, err := intParam("chat.history", "limit", p.Limit, 1, historyMaxLimit); err != nil {
		return nil, err
	} else if ok {
		limit = n
	}
	if n, ok, err := intParam("chat.history", "maxChars", p.MaxChars, 1, historyMaxMaxChars); err != nil {
		return nil, err
	} else if ok {
		maxChars = n
	}
	tgt, err := c.target("sessionKey", p.SessionKey)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"sessionKey": tgt.key, "messages": []historyMessage{}}
	db := c.storeOf()
	e, err := db.GetSession(c.ctx, tgt.agent, tgt.key)
	if errors.Is(err, store.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out["sessionId"] = e.SessionID
	if e.ThinkingLevel != "" {
		out["thinkingLevel"] = e.ThinkingLevel
	}
	if e.VerboseLevel != "" {
		out["verboseLevel"] = e.VerboseLevel
	}
	recs, err := db.TranscriptRecords(c.ctx, e.SessionID, limit)
	if err != nil {
		return nil, err
	}
	// An internal exchange (a heartbeat with nothing to say) is kept in
	// the transcript, not shown (spec automation.md R9.6).
	out["messages"] = capHistory(store.Visible(recs), maxChars)
	return out, nil
}

// capHistory converts records and keeps the result within the byte caps:
// an oversized message becomes a placeholder, then the oldest messages go
// until the rest fit.
func capHistory(recs []store.Record, maxChars int) []historyMessage {
	msgs := make([]historyMessage, 0, len(recs))
	for _, r := range recs {
		if r.Kind != store.KindProjection { // a hidden marker
			msgs = append(msgs, toHistory(r, maxChars))
		}
	}
	sizes := make([]int, len(msgs))
	total := 0
	for i := range msgs {
		sizes[i] = encodedSize(msgs[i])
		if sizes[i] > historyMaxMessageBytes {
			msgs[i] = oversized(msgs[i])
			sizes[i] = encodedSize(msgs[i])
		}
		total += sizes[i]
	}
	first := 0
	for first < len(msgs) && total > historyMaxTotalBytes {
		total -= sizes[first]
		first++
	}
	return msgs[first:]
}

func encodedSize(m historyMessage) int {
	b, err := json.Marshal(m)
	if err != nil {
		return historyMaxTotalBytes + 1 // unencodable: cannot be sent
	}
	return len(b)
}

// oversized is the placeholder of a message too large to send: its role,
// time and tool identity, and a text saying it was left out.
func oversized(m historyMessage) historyMessage {
	return historyMessage{
		Role: m.Role, Timestamp: m.Timestamp, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError,
		Content: []any{textPart{"text", historyOversized}},
		Meta:    historyMeta{Seq: m.Meta.Seq, Truncated: true, Reason: "oversized", SystemEvent: m.Meta.SystemEvent},
	}
}

// toHistory converts one stored message. Tool results become role
// "toolResult" with the call's id and tool name; an assistant message's
// tool calls become toolCall parts after its text; a turn that failed or
// was aborted keeps its stopReason and errorMessage.
func toHistory(r store.Record, maxChars int) historyMessage {
	switch r.Kind {
	case store.KindCompaction, store.KindReset:
		return boundaryHistory(r)
	}
	m := r.Message
	h := historyMessage{Role: string(m.Role), Timestamp: r.CreatedAt, Content: []any{},
		Meta: historyMeta{Seq: r.Seq, SystemEvent: agent.IsSystemEvent(m)}}
	if r := m.ReasoningText(); r != "" {
		h.Content = append(h.Content, thinkingPart{"thinking", clip(r, maxChars)})
	}
	if m.Content != "" || m.Role != llm.RoleAssistant {
		h.Content = append(h.Content, textPart{"text", clip(m.Content, maxChars)})
	}
	for _, img := range m.Images {
		h.Content = append(h.Content, imagePart{"image", img.MIME, len(img.Data), true})
	}
	switch m.Role {
	case llm.RoleAssistant:
		for _, tc := range m.ToolCalls {
			h.Content = append(h.Content, toolCallPart{"toolCall", tc.ID, tc.Name, callArguments(tc.Arguments)})
		}
		h.StopReason, h.ErrorMessage = m.StopReason, clip(m.Error, maxChars)
	case llm.RoleTool:
		isErr := m.IsError
		h.Role, h.ToolCallID, h.ToolName, h.IsError = "toolResult", m.ToolCallID, m.Name, &isErr
	}
	return h
}

// boundaryHistory is a compaction or a reset as upstream's chat.history
// lists it: a system message "Compaction" or "Reset" with its kind, id
// and token counts in __openclaw.
func boundaryHistory(r store.Record) historyMessage {
	h := historyMessage{Role: "system", Timestamp: r.CreatedAt, Content: []any{textPart{"text", "Reset"}},
		Meta: historyMeta{Seq: r.Seq, Kind: "reset", ID: r.ID()}}
	if c := r.Compaction; r.Kind == store.KindCompaction && c != nil {
		h.Content = []any{textPart{"text", "Compaction"}}
		h.Meta.Kind, h.Meta.TokensBefore, h.Meta.TokensAfter, h.Meta.HardTrim = "compaction", c.TokensBefore, r.TokensAfter, c.Details.HardTrim
		h.Meta.FirstKeptEntryID = c.FirstKeptEntryID
	}
	return h
}

// callArguments is a tool call's arguments as an object when they are
// JSON, else the text the model wrote (shown, not hidden).
func callArguments(args string) any {
	if strings.TrimSpace(args) == "" {
		return map[string]any{}
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	return args
}

// clip cuts a text to max characters (runes), marking the cut as
// upstream does.
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + truncatedMark
}
