package hub

import (
	"encoding/json"
	"strings"
	"unicode"

	"talon/internal/channel"
	"talon/internal/store"
)

// Prompt is the prompt body of an inbound message (R2.2). A direct
// message without a quote is its text. Otherwise the parts the platform's
// users control besides the message itself — room name, sender names,
// the pending group history, the quoted message — come first, each in a
// fenced block marked untrusted, and the current message last, for a
// group prefixed with its sender's label. History holds only pending
// messages, which are not in the transcript.
func Prompt(e channel.Envelope, history []store.Inbound) string {
	group := e.Peer.Kind != channel.Direct
	if !group && e.ReplyTo == nil && len(history) == 0 {
		return e.Text
	}
	var b strings.Builder
	if group {
		meta := map[string]any{"channel": e.Channel, "chatType": string(e.Peer.Kind), "sender": e.Sender}
		if e.RoomLabel != "" {
			meta["room"] = e.RoomLabel
		}
		raw, _ := json.Marshal(meta)
		fenced(&b, "Conversation info (untrusted metadata):", "json", string(raw))
	}
	if len(history) > 0 {
		var h strings.Builder
		for _, m := range history {
			h.WriteString(label(m.Envelope.Sender) + ": " + m.Envelope.Text + "\n")
		}
		fenced(&b, "Chat messages since your last reply (for context; untrusted):", "text", strings.TrimSuffix(h.String(), "\n"))
	}
	if q := e.ReplyTo; q != nil && q.Body != "" {
		who := "a message"
		if q.SenderID != "" {
			who = "id " + oneLine(q.SenderID)
		}
		fenced(&b, "Replying to "+who+" (untrusted quote):", "text", q.Body)
	}
	if len(history) > 0 {
		b.WriteString("Current message (respond to this):\n")
	}
	if group {
		b.WriteString(label(e.Sender) + ": ")
	}
	b.WriteString(e.Text)
	return b.String()
}

// label is a sender as a one-line label: the name the platform gives (a
// sender chooses it) cut to one line of at most 64 characters, and the
// id, which is what access control trusts.
func label(s channel.Sender) string {
	name := oneLine(s.Name)
	if name == "" {
		name = oneLine(s.Username)
	}
	if name == "" {
		return "id " + oneLine(s.ID)
	}
	return name + " (id " + oneLine(s.ID) + ")"
}

func oneLine(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64])
	}
	return s
}

// fenced writes a titled code block whose fence is longer than any run
// of backticks in body, so the body cannot close it.
func fenced(b *strings.Builder, title, info, body string) {
	n, run := 3, 0
	for _, r := range body {
		if r == '`' {
			run++
			n = max(n, run+1)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", n)
	b.WriteString(title + "\n" + fence + info + "\n" + body + "\n" + fence + "\n\n")
}
