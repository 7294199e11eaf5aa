package automation

import (
	"strings"
	"unicode/utf8"
)

// The cron tool's contextMessages (spec automation.md R7.1): a reminder
// made from a chat carries the chat's last lines, so that the agent that
// gets it later knows what it was about.
const (
	// MaxContextMessages bounds contextMessages.
	MaxContextMessages = 10
	contextLineMax     = 220
	contextTotalMax    = 700
	// contextMarker starts the lines in the reminder's text.
	contextMarker = "\n\nRecent context:\n"
)

// ChatLine is one message of a conversation: "user" or "assistant", and
// its text.
type ChatLine struct {
	Role, Text string
}

// WithContext is a systemEvent reminder's text with up to n of lines (the
// conversation's, oldest first; only user and assistant text counts)
// under "Recent context:": each at most 220 characters, together at most
// 700, a line that would pass that left out with the rest. A context the
// text had already is replaced, and text without lines to add is
// returned as it is.
func WithContext(text string, lines []ChatLine, n int) string {
	n = min(max(n, 0), MaxContextMessages)
	var recent []ChatLine
	for _, l := range lines {
		if (l.Role == "user" || l.Role == "assistant") && strings.TrimSpace(l.Text) != "" {
			recent = append(recent, l)
		}
	}
	recent = recent[max(len(recent)-n, 0):]
	var out []string
	total := 0
	for _, l := range recent {
		who := "User"
		if l.Role == "assistant" {
			who = "Assistant"
		}
		line := "- " + who + ": " + cut(strings.TrimSpace(l.Text), contextLineMax)
		if total += utf8.RuneCountInString(line); total > contextTotalMax {
			break
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return text
	}
	if i := strings.Index(text, contextMarker); i >= 0 {
		text = strings.TrimSpace(text[:i])
	}
	return text + contextMarker + strings.Join(out, "\n")
}

// cut shortens s to at most max characters, ending in "..." when it did.
func cut(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return strings.TrimRight(string(r[:max-3]), " \t\r\n") + "..."
}
