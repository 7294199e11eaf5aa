package format

import "strings"

// Flavor is the markup a platform reads.
type Flavor string

const (
	Telegram Flavor = "telegram" // Bot API HTML (parse_mode HTML)
	Slack    Flavor = "slack"    // mrkdwn
	Discord  Flavor = "discord"  // Discord's CommonMark dialect
	Plain    Flavor = "plain"    // no markup
)

// Options say how a reply is rendered and cut.
type Options struct {
	Flavor Flavor
	// Limit is a chunk's largest rendered size, markup included, in
	// UTF-16 code units (how the platforms count). 0 takes the flavour's
	// default; it is held to the platform's hard limit and to minLimit.
	Limit int
	// MaxLines is a chunk's largest number of lines (Discord's
	// maxLinesPerMessage, 17); 0 means no limit, and less than 3 is 3.
	MaxLines int
	// Newline is streaming.chunkMode "newline": cut at a paragraph break
	// wherever one fits, rather than filling each chunk first.
	Newline bool
	// Tables is markdown.tables: "code" (an aligned table in a code
	// block; the default, and what "block" falls back to), "bullets" or
	// "off" (the table's lines are left as text).
	Tables string
}

// minLimit keeps a chunk big enough for the longest markup that can be
// open around one character (a Telegram code block with a language).
const minLimit = 64

// hardLimit is each platform's own ceiling on a message.
var hardLimit = map[Flavor]int{Telegram: 4096, Slack: 40000, Discord: 2000}

// Defaults are spec/channels.md R8.3's limits for a channel name
// ("telegram", "slack", "discord"; anything else is plain text).
func Defaults(channel string) Options {
	switch strings.ToLower(channel) {
	case "telegram":
		return Options{Flavor: Telegram, Limit: 4000, Tables: "code"}
	case "slack":
		return Options{Flavor: Slack, Limit: 8000, Tables: "code"}
	case "discord":
		return Options{Flavor: Discord, Limit: 2000, MaxLines: 17, Tables: "code"}
	}
	return Options{Flavor: Plain, Limit: 4000, Tables: "code"}
}

// normalize fills what o leaves unset and holds it to the limits.
func (o Options) normalize() Options {
	switch o.Flavor {
	case Telegram, Slack, Discord, Plain:
	default:
		o.Flavor = Plain
	}
	if o.Limit <= 0 {
		o.Limit = Defaults(string(o.Flavor)).Limit
	}
	if h, ok := hardLimit[o.Flavor]; ok && o.Limit > h {
		o.Limit = h
	}
	o.Limit = max(o.Limit, minLimit)
	o.MaxLines = max(o.MaxLines, 0)
	if o.MaxLines > 0 {
		// A code block's piece takes three lines: its fences and a line.
		o.MaxLines = max(o.MaxLines, 3)
	}
	switch o.Tables {
	case "bullets", "off":
	default:
		o.Tables = "code"
	}
	return o
}

// Chunk is one message of a reply: Text in the flavour's markup, and the
// same message as Plain text, for when the platform refuses the markup.
type Chunk struct {
	Text  string
	Plain string
}

// Chunks renders a Markdown reply for a platform and cuts it into
// messages that each fit o's limits. An empty or blank reply has no
// chunks.
func Chunks(markdown string, o Options) []Chunk {
	o = o.normalize()
	return cut(parse(markdown, o.Tables), o)
}

// PlainText is the reply without markup, as the chunks' Plain fields hold
// it: code without fences, links as "label (url)".
func PlainText(markdown string, o Options) string {
	o = o.normalize()
	return parse(markdown, o.Tables).plain()
}
