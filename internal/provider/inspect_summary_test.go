package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"talon/internal/compaction"
	"talon/internal/llm"
)

// summarise asks Inspect for the answer to a summariser request.
func summarise(t *testing.T, r compaction.Request) string {
	t.Helper()
	out, err := Inspect{}.Chat(context.Background(), &Request{System: r.System, MaxTokens: int(r.MaxTokens),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: r.Prompt}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(out.Content); err != nil {
		t.Fatalf("the offline summary fails the check: %v\n%s", err, out.Content)
	}
	again, _ := Inspect{}.Chat(context.Background(), &Request{System: r.System, Messages: []llm.Message{{Role: llm.RoleUser, Content: r.Prompt}}}, nil)
	if again.Content != out.Content {
		t.Fatal("the offline summary is not deterministic")
	}
	return out.Content
}

// TestInspectSummary: the offline model answers compaction's real
// summariser requests (a first summary, an update of it, a split turn's
// start) with the headings compaction checks, keeping what the user said
// through summaries of summaries.
func TestInspectSummary(t *testing.T) {
	var entries []compaction.Entry
	add := func(m llm.Message) {
		entries = append(entries, compaction.Entry{ID: fmt.Sprint(len(entries) + 1), Message: m})
	}
	long := strings.Repeat("filler ", 400)
	add(llm.Message{Role: llm.RoleUser, Content: "Remember: the vault code is 4711."})
	add(llm.Message{Role: llm.RoleAssistant, Content: "Noted."})
	for i := range 20 {
		add(llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("question %d %s", i, long)})
		add(llm.Message{Role: llm.RoleAssistant, Content: "answer " + long})
	}
	set := compaction.SettingsFor(nil, "main")
	sum := compaction.Summarizer{Window: 32768}
	plan, err := compaction.Prepare(entries, set.Budget(32768, 1000), nil)
	if err != nil {
		t.Fatal(err)
	}
	job, err := plan.Job(set, 32768, sum, "")
	if err != nil {
		t.Fatal(err)
	}
	prev := plan.PreviousSummary
	for i := range job.Stages() {
		prev = summarise(t, job.Request(i, prev))
	}
	if !strings.Contains(prev, "vault code is 4711") {
		t.Fatalf("the first summary lost the first request:\n%s", prev)
	}
	c := job.Compaction(prev, "")
	entries = append(entries, compaction.Entry{ID: "c1", Kind: compaction.KindCompaction, Compaction: &c})
	for i := range 20 {
		add(llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("later %d %s", i, long)})
		add(llm.Message{Role: llm.RoleAssistant, Content: "ok " + long})
	}
	plan, err = compaction.Prepare(entries, set.Budget(32768, 1000), nil)
	if err != nil {
		t.Fatal(err)
	}
	if job, err = plan.Job(set, 32768, sum, "keep the vault"); err != nil {
		t.Fatal(err)
	}
	prev = plan.PreviousSummary
	for i := range job.Stages() {
		prev = summarise(t, job.Request(i, prev))
	}
	if !strings.Contains(prev, "vault code is 4711") || !strings.Contains(prev, "later 0") {
		t.Errorf("the update lost the first request or the new ones:\n%s", prev)
	}

	prefix := compaction.Request{System: compaction.SummarySystem, Prefix: true,
		Prompt: "<conversation>\n[User]: build it\n\n[Assistant]: on it\n</conversation>\n\nThis is the PREFIX of a turn\n\n## Original Request\n[What?]\n\n## Early Progress\n\n## Context for Suffix\n"}
	if got := summarise(t, prefix); !strings.Contains(got, "- build it") {
		t.Errorf("prefix summary:\n%s", got)
	}

	// A request that is not a summariser's is answered as before.
	out, _ := Inspect{}.Chat(context.Background(), &Request{System: compaction.SummarySystem, Tools: []llm.ToolSpec{{Name: "x"}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if !strings.HasPrefix(out.Content, "inspect: system prompt") {
		t.Errorf("a request with tools got %q", out.Content)
	}
}
