package compaction

import (
	"strconv"
	"strings"
	"testing"

	"talon/internal/config"
	"talon/internal/llm"
)

// The builders of the tests' transcripts.

func user(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }
func says(s string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: s} }

// calls is an assistant message calling tool name once per id, with args.
func calls(name, args string, ids ...string) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: name, Arguments: args})
	}
	return m
}

func result(id, name, text string) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: name, Content: text}
}

// entries numbers messages e1, e2, … as message entries.
func entries(msgs ...llm.Message) []Entry {
	out := make([]Entry, len(msgs))
	for i, m := range msgs {
		out[i] = Entry{ID: "e" + strconv.Itoa(i+1), Kind: KindMessage, Message: m}
	}
	return out
}

// compacted is a compaction entry.
func compacted(id, summary, firstKept string) Entry {
	return Entry{ID: id, Kind: KindCompaction, Compaction: &Compaction{Summary: summary, FirstKeptEntryID: firstKept}}
}

// chars is n characters of text.
func chars(n int) string { return strings.Repeat("x", n) }

func parseConfig(t testing.TB, src string) *config.Config {
	t.Helper()
	tree, err := config.ParseJSON5([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var c config.Config
	if _, err := config.Decode(tree, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func ids(v View) string { return strings.Join(v.IDs, ",") }
