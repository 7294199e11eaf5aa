package hub

// Removed when helpers A and B land.
//
// Minimal stand-ins for package channel/format (helper B: rendering,
// chunking, reply tags, NO_REPLY), under the names it exports prefixed
// fmt, implementing its rules only as far as the hub's tests need. The
// hub reaches them only through rules.go.

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// fmtOptions is format.Options.
type fmtOptions struct {
	Limit    int
	MaxLines int
}

// fmtDefaults is format.Defaults (R8.3).
func fmtDefaults(ch string) fmtOptions {
	switch ch {
	case "discord":
		return fmtOptions{Limit: 2000, MaxLines: 17}
	case "slack":
		return fmtOptions{Limit: 8000}
	}
	return fmtOptions{Limit: 4000}
}

// fmtChunk is format.Chunk.
type fmtChunk struct{ Text, Plain string }

// fmtChunks is format.Chunks: plain text cut at the last paragraph
// break that fits, else at a rune boundary.
func fmtChunks(s string, o fmtOptions) []fmtChunk {
	var out []fmtChunk
	for s = strings.TrimSpace(s); s != ""; {
		n := min(len(s), max(o.Limit, 1))
		if n < len(s) {
			if i := strings.LastIndex(s[:n], "\n\n"); i > 0 {
				n = i
			}
		}
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n--
		}
		c := strings.TrimSpace(s[:n])
		out = append(out, fmtChunk{Text: c, Plain: c})
		s = strings.TrimSpace(s[n:])
	}
	return out
}

// fmtDirectives is format.Directives (R8.5).
type fmtDirectives struct {
	ReplyToCurrent bool
	ReplyTo        string
}

var fmtTag = regexp.MustCompile(`\[\[\s*(reply_to_current|reply_to\s*:\s*([^\]\s]+))\s*\]\]`)

// fmtTakeDirectives is format.TakeDirectives.
func fmtTakeDirectives(s string) (string, fmtDirectives) {
	var d fmtDirectives
	for _, m := range fmtTag.FindAllStringSubmatch(s, -1) {
		if m[2] != "" {
			d.ReplyTo = m[2]
		} else {
			d.ReplyToCurrent = true
		}
	}
	return strings.TrimSpace(fmtTag.ReplaceAllString(s, "")), d
}

// fmtIsSilent is format.IsSilent (R8.8).
func fmtIsSilent(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "NO_REPLY") }

// fmtStripHeartbeat is format.StripHeartbeat (R8.8).
func fmtStripHeartbeat(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimSpace(strings.TrimPrefix(s, "HEARTBEAT_OK"))
	return strings.TrimSpace(strings.TrimSuffix(s, "HEARTBEAT_OK"))
}
