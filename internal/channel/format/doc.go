// Package format turns a model's Markdown reply into the messages a chat
// platform is sent: Telegram HTML, Slack mrkdwn, Discord markdown or plain
// text, cut into chunks that fit the platform's limits.
//
// The reply is parsed once into an intermediate form — runs of text, each
// with its styles, its link and its code block — and every flavour is
// rendered from that form, so no flavour ever sees another's markup and
// literal text (a "<b>" the model wrote, an unclosed "**") is escaped
// rather than interpreted. Chunks are cut in the intermediate form, not in
// the rendered string: a chunk is measured as rendered, cut at a paragraph,
// line or word boundary of the source, and every style, link or code block
// open at the cut is closed at the end of one chunk and opened again at
// the start of the next. Each chunk also carries its plain-text rendering,
// which a sender falls back to when the platform refuses the markup
// (Telegram's "can't parse entities"). Nothing is dropped: the chunks'
// plain texts, in order, hold every character of the reply's plain text
// except the whitespace a cut falls on.
//
// The package also holds the small rules of spec/channels.md §8 about the
// reply's text: reply tags ([[reply_to_current]]), silent replies
// (NO_REPLY, a stray HEARTBEAT_OK) and the response prefix.
//
// Everything here is pure: no I/O, no clock, safe for concurrent use.
package format
