package format

import (
	"strings"
	"unicode"
)

// Directives are the reply tags the model wrote (spec R8.5).
type Directives struct {
	// ReplyToCurrent asks for a native reply to the message being
	// answered ([[reply_to_current]]).
	ReplyToCurrent bool
	// ReplyTo is the platform message id of [[reply_to:<id>]], the first
	// one written; "" when none.
	ReplyTo string
}

// maxReplyID is the longest id [[reply_to:<id>]] may carry, as OpenClaw.
const maxReplyID = 256

// TakeDirectives strips [[reply_to_current]] and [[reply_to:<id>]] tags
// (any case, spaces allowed inside the brackets) from a reply and returns
// what they asked. Tags inside fenced code blocks are text, and stay. A
// tag between two words leaves one space; the result is trimmed.
func TakeDirectives(s string) (string, Directives) {
	var d Directives
	if !strings.Contains(s, "[[") {
		return s, d
	}
	var b strings.Builder
	fenced := false
	for line := range strings.SplitAfterSeq(s, "\n") {
		if _, _, _, ok := fenceOpen(line); ok {
			fenced = !fenced
		}
		if fenced {
			b.WriteString(line)
			continue
		}
		b.WriteString(takeLine(line, &d))
	}
	return strings.TrimSpace(b.String()), d
}

// takeLine strips the tags of one line.
func takeLine(line string, d *Directives) string {
	var b strings.Builder
	for {
		i := strings.Index(line, "[[")
		if i < 0 {
			break
		}
		n, ok := tag(line[i:], d)
		if !ok {
			b.WriteString(line[:i+2])
			line = line[i+2:]
			continue
		}
		before, rest := line[:i], line[i+n:]
		b.WriteString(before)
		switch {
		case before == "" || isSpace(before[len(before)-1]):
			rest = strings.TrimLeft(rest, " \t")
		case rest != "" && !isSpace(rest[0]):
			b.WriteByte(' ')
		}
		line = rest
	}
	b.WriteString(line)
	return b.String()
}

// tag matches a reply tag at the start of s and records it in d,
// returning its length.
func tag(s string, d *Directives) (int, bool) {
	end := strings.Index(s, "]]")
	if end < 0 {
		return 0, false
	}
	inner := strings.TrimSpace(s[2:end])
	if strings.ContainsAny(inner, "[]\n") {
		return 0, false
	}
	if strings.EqualFold(inner, "reply_to_current") {
		d.ReplyToCurrent = true
		return end + 2, true
	}
	if len(inner) < len("reply_to") || !strings.EqualFold(inner[:len("reply_to")], "reply_to") {
		return 0, false
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(inner[len("reply_to"):]), ":")
	id = strings.TrimSpace(id)
	if !ok || id == "" || len(id) > maxReplyID || strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return 0, false
	}
	if d.ReplyTo == "" {
		d.ReplyTo = id
	}
	return end + 2, true
}

// IsSilent reports whether a final reply is the silent token NO_REPLY
// (any case, surrounding whitespace ignored), which is not delivered.
func IsSilent(s string) bool {
	return strings.EqualFold(strings.TrimSpace(s), silentToken)
}

// MaybeSilent reports whether a partial, streamed reply may still turn
// out to be NO_REPLY, so no preview or typing should start for it yet.
func MaybeSilent(partial string) bool {
	t := strings.TrimLeftFunc(partial, unicode.IsSpace)
	if len(t) <= len(silentToken) {
		return strings.EqualFold(t, silentToken[:len(t)])
	}
	return strings.EqualFold(t[:len(silentToken)], silentToken)
}

const silentToken = "NO_REPLY"

// HeartbeatToken is a heartbeat's acknowledgement (spec automation.md
// R9.4).
const HeartbeatToken = "HEARTBEAT_OK"

// StripHeartbeat removes a stray HEARTBEAT_OK at the start or end of a
// reply (at the end, with up to four trailing punctuation characters),
// repeatedly; a reply that is nothing else, even in emphasis or code
// marks, becomes "". Text in between is kept as written.
func StripHeartbeat(s string) string {
	if !strings.Contains(s, HeartbeatToken) {
		return s
	}
	if strings.Trim(strings.TrimSpace(s), "*`~_") == HeartbeatToken {
		return ""
	}
	t := strings.TrimSpace(s)
	for {
		if rest, ok := strings.CutPrefix(t, HeartbeatToken); ok && !wordStart(rest) {
			t = strings.TrimSpace(rest)
			continue
		}
		if i := strings.LastIndex(t, HeartbeatToken); i >= 0 && trailingPunct(t[i+len(HeartbeatToken):]) {
			t = strings.TrimSpace(t[:i])
			continue
		}
		return t
	}
}

// wordStart reports whether s starts with a letter, digit or "_": the
// token was only the start of a longer word.
func wordStart(s string) bool {
	for _, r := range s {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
	}
	return false
}

// trailingPunct reports whether s is at most four characters, none a
// letter, digit or "_" (what may follow a stripped HEARTBEAT_OK).
func trailingPunct(s string) bool {
	n := 0
	for _, r := range s {
		n++
		if n > 4 || unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			return false
		}
	}
	return true
}

// Prefix puts a channel's responsePrefix before a reply, separated by a
// space, once: a reply that already starts with it, an empty prefix or
// an empty reply is returned as it is.
func Prefix(text, prefix string) string {
	if prefix == "" || strings.TrimSpace(text) == "" || strings.HasPrefix(strings.TrimLeftFunc(text, unicode.IsSpace), prefix) {
		return text
	}
	return prefix + " " + text
}
