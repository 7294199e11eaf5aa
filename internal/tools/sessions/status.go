package sessions

import (
	"fmt"
	"strings"

	"talon/internal/compaction"
	"talon/internal/config"
	"talon/internal/session"
)

// Status is what session_status shows of a session: its ids, the model
// it runs with now, its token counters (session.Entry) and compactions,
// with a line of text that reads them.
type Status struct {
	Key         string        `json:"key"`
	SessionID   string        `json:"sessionId"`
	UpdatedAt   int64         `json:"updatedAt"`
	Model       string        `json:"model"`
	Tokens      StatusTokens  `json:"tokens"`
	Compactions int64         `json:"compactions"`
	Text        string        `json:"statusText"`
	Entry       session.Entry `json:"entry"`
}

// StatusTokens are a session's token counters. Context.Window is the
// context window of the session's model (null when unknown);
// Context.Used is the prompt of the last model call, or after a
// compaction the estimate of what it left until the next call reports
// usage (Context.Estimated).
type StatusTokens struct {
	SinceReset struct {
		Input  int64 `json:"input"`
		Output int64 `json:"output"`
		Total  int64 `json:"total"`
	} `json:"sinceReset"`
	LastTurn struct {
		Input  int64 `json:"input"`
		Output int64 `json:"output"`
	} `json:"lastTurn"`
	Context struct {
		Used      int64  `json:"used"`
		Window    *int64 `json:"window"`
		Estimated bool   `json:"estimated,omitempty"`
	} `json:"context"`
}

// StatusOf builds the status of the session at key with entry e, which
// runs with model (a provider/model reference) whose context window is
// window (0: unknown).
func StatusOf(key string, e session.Entry, model string, window int64) Status {
	s := Status{Key: key, SessionID: e.SessionID, UpdatedAt: e.UpdatedAt, Model: model, Entry: e}
	t := &s.Tokens
	t.SinceReset.Input, t.SinceReset.Output, t.SinceReset.Total = e.CumulativeInputTokens, e.CumulativeOutputTokens, e.CumulativeTotalTokens
	t.LastTurn.Input, t.LastTurn.Output = e.InputTokens, e.OutputTokens
	t.Context.Used = e.TotalTokens
	t.Context.Estimated = e.TotalTokensFresh != nil && !*e.TotalTokensFresh
	if window > 0 {
		t.Context.Window = &window
	}
	s.Compactions = e.CompactionCount
	s.Text = statusText(t, model) + fmt.Sprintf(" Compactions: %d.", s.Compactions)
	return s
}

// ContextLine is "Context: <used>/<window> (<pct>%)" (spec context.md
// R9.3), "~" before an estimate.
func ContextLine(used, window int64, estimated bool) string {
	s := strings.TrimPrefix(compaction.ContextUsage(used, window), "Context ")
	if estimated && used > 0 {
		s = "~" + s
	}
	return "Context: " + s
}

func statusText(t *StatusTokens, model string) string {
	var b strings.Builder
	if t.SinceReset.Total == 0 && t.LastTurn.Input == 0 && t.LastTurn.Output == 0 {
		b.WriteString("No token usage recorded since the session started or was last reset.")
	} else {
		fmt.Fprintf(&b, "Tokens since the last reset: %d in, %d out, %d total. Last turn: %d in, %d out.",
			t.SinceReset.Input, t.SinceReset.Output, t.SinceReset.Total, t.LastTurn.Input, t.LastTurn.Output)
	}
	if w := t.Context.Window; w != nil {
		b.WriteString(" " + ContextLine(t.Context.Used, *w, t.Context.Estimated) + ".")
		return b.String()
	}
	fmt.Fprintf(&b, " Context: %d tokens in use; the context window of %s is unknown", t.Context.Used, model)
	if m, err := config.ParseModelRef(model); err == nil && m.Provider != "" && !m.IsInspect() {
		fmt.Fprintf(&b, " (models.providers.%s.models[] has no contextWindow for %q)", m.Provider, m.Model)
	}
	b.WriteString(".")
	return b.String()
}
