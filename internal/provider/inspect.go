package provider

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"talon/internal/llm"
)

// Inspect is the offline, deterministic model ("inspect" or
// "talon/inspect"). It lets people and tests see what a model would be
// given, and drive tool calls by hand, without an API key. It does no I/O
// and reads no clock or randomness; it is safe for concurrent use.
//
// It answers from the last message of the request:
//
//   - a user message whose trimmed content is "/tools": the names of
//     Request.Tools, one per line in order, or "(no tools)";
//   - a user message with lines "/call TOOL {json args}": one tool call per
//     such line, in order (FinishReason tool_calls). The arguments are the
//     rest of the line after TOOL, trimmed and verbatim ("{}" when absent;
//     they are not validated, so invalid JSON can be tested). Call ids are
//     call_1, call_2, ... numbered after the tool calls of earlier assistant
//     turns, so they are unique in the conversation;
//   - a user message with images: "inspect: N image(s): MIME B bytes, ...;
//     prompt: TEXT" (TEXT quoted), so the image plumbing can be checked
//     offline;
//   - a tool result: the text of the tool results after the last assistant
//     turn, verbatim, joined with a blank line;
//   - a compaction's summariser request (compaction.SummarySystem, one
//     message, no tools): a summary with the headings compaction checks,
//     made from the user lines of the conversation and the previous
//     summary (inspect_summary.go);
//   - anything else: "inspect: system prompt N bytes, T tools, M messages".
//
// Streamed, the text arrives in at most four fragments split after
// whitespace. Usage is an estimate, not a tokenizer count: bytes/4 rounded
// up, where the prompt is the system prompt, every message's content and
// tool calls (name and arguments), and every tool's name, description and
// parameters, and the completion is the answer text and its tool calls.
type Inspect struct{}

var _ Provider = Inspect{}

// Chat implements Provider.
func (Inspect) Chat(ctx context.Context, req *Request, onDelta func(string)) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if req == nil {
		return nil, fmt.Errorf("inspect: nil request")
	}
	r := inspectAnswer(req)
	prompt := len(req.System)
	for _, m := range req.Messages {
		prompt += len(m.Content) + callBytes(m.ToolCalls)
	}
	for _, t := range req.Tools {
		prompt += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	r.Usage = Usage{
		PromptTokens:     estimateTokens(prompt),
		CompletionTokens: estimateTokens(len(r.Content) + callBytes(r.ToolCalls)),
	}
	r.Usage.TotalTokens = r.Usage.PromptTokens + r.Usage.CompletionTokens
	if onDelta != nil {
		for _, frag := range wordChunks(r.Content, 4) {
			onDelta(frag)
		}
	}
	return r, nil
}

func callBytes(calls []llm.ToolCall) int {
	n := 0
	for _, c := range calls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n
}

func estimateTokens(bytes int) int { return (bytes + 3) / 4 }

func inspectAnswer(req *Request) *Response {
	stop := func(text string) *Response { return &Response{Content: text, FinishReason: FinishStop} }
	if isSummaryRequest(req) {
		return stop(inspectSummary(req.Messages[0].Content))
	}
	if n := len(req.Messages); n > 0 {
		last := req.Messages[n-1]
		switch last.Role {
		case llm.RoleUser:
			if len(last.Images) > 0 {
				return stop(imageSummary(&last))
			}
			if strings.TrimSpace(last.Content) == "/tools" {
				if len(req.Tools) == 0 {
					return stop("(no tools)")
				}
				names := make([]string, len(req.Tools))
				for i, t := range req.Tools {
					names[i] = t.Name
				}
				return stop(strings.Join(names, "\n"))
			}
			if calls := parseCalls(last.Content); len(calls) > 0 {
				earlier := 0
				for _, m := range req.Messages {
					if m.Role == llm.RoleAssistant {
						earlier += len(m.ToolCalls)
					}
				}
				for i := range calls {
					calls[i].ID = fmt.Sprintf("call_%d", earlier+i+1)
				}
				return &Response{ToolCalls: calls, FinishReason: FinishToolCalls}
			}
		case llm.RoleTool:
			var results []string
			for i := n - 1; i >= 0 && req.Messages[i].Role != llm.RoleAssistant; i-- {
				if req.Messages[i].Role == llm.RoleTool {
					results = append(results, req.Messages[i].Content)
				}
			}
			for i, j := 0, len(results)-1; i < j; i, j = i+1, j-1 {
				results[i], results[j] = results[j], results[i]
			}
			return stop(strings.Join(results, "\n\n"))
		}
	}
	return stop(fmt.Sprintf("inspect: system prompt %d bytes, %d tools, %d messages",
		len(req.System), len(req.Tools), len(req.Messages)))
}

// imageSummary describes the images of a user message and its prompt.
func imageSummary(m *llm.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "inspect: %d image(s):", len(m.Images))
	for i, img := range m.Images {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s %d bytes", img.MIME, len(img.Data))
	}
	fmt.Fprintf(&b, "; prompt: %q", m.Content)
	return b.String()
}

// parseCalls finds the "/call TOOL [args]" lines of a message.
func parseCalls(content string) []llm.ToolCall {
	var calls []llm.ToolCall
	for line := range strings.Lines(content) {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "/call")
		if !ok || rest == "" || !unicode.IsSpace(rune(rest[0])) {
			continue
		}
		rest = strings.TrimSpace(rest)
		end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '{' })
		if end < 0 {
			end = len(rest)
		}
		name, args := rest[:end], strings.TrimSpace(rest[end:])
		if name == "" {
			continue
		}
		if args == "" {
			args = "{}"
		}
		calls = append(calls, llm.ToolCall{Name: name, Arguments: args})
	}
	return calls
}

// wordChunks splits text into at most n fragments, each ending after a run
// of whitespace (except the last), that concatenate to text.
func wordChunks(text string, n int) []string {
	if text == "" {
		return nil
	}
	// A word is a run of non-space bytes and the whitespace after it;
	// leading whitespace goes with the first word.
	var words []string
	start, seen := 0, false
	for i := 0; i < len(text); i++ {
		if isSpaceByte(text[i]) {
			continue
		}
		if seen && isSpaceByte(text[i-1]) {
			words = append(words, text[start:i])
			start = i
		}
		seen = true
	}
	words = append(words, text[start:])
	per := (len(words) + n - 1) / n
	var out []string
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\n' || b == '\t' || b == '\r' || b == '\v' || b == '\f'
}
