package discord

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"talon/internal/channel"
)

var _ channel.Reader = (*Bot)(nil)

// Discord's page of history: 1–100 messages, 50 when not said.
const (
	maxRead     = 100
	defaultRead = 50
)

// Read returns up to q.Limit messages of t, newest first
// (channel.Reader): GET /channels/{id}/messages with before, after or
// around. A Limit of 0 is Discord's default of 50. A message whose id is
// not a snowflake is left out.
func (b *Bot) Read(ctx context.Context, t channel.Target, q channel.ReadQuery) ([]channel.Message, error) {
	const step = "discord read"
	query, err := readQuery(q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	chID, err := b.channelFor(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	var page []message
	if err := b.call(ctx, http.MethodGet, "/channels/"+chID+"/messages?"+query.Encode(), nil, &page); err != nil {
		return nil, fmt.Errorf("%s in %s: %w", step, chID, err)
	}
	out := make([]channel.Message, 0, len(page))
	for i := range page {
		if snowflake(page[i].ID) && len(out) < maxRead {
			out = append(out, historyMessage(&page[i]))
		}
	}
	slices.SortFunc(out, func(a, b channel.Message) int { return -compareIDs(a.ID, b.ID) })
	return out, nil
}

// readQuery checks q and encodes it: a limit of 1–100 (0 for the
// default) and at most one anchor, a snowflake.
func readQuery(q channel.ReadQuery) (url.Values, error) {
	limit := q.Limit
	if limit == 0 {
		limit = defaultRead
	}
	if limit < 1 || limit > maxRead {
		return nil, fmt.Errorf("limit %d: Discord reads 1–%d messages", q.Limit, maxRead)
	}
	v := url.Values{"limit": {strconv.Itoa(limit)}}
	for _, a := range []struct{ name, id string }{{"before", q.Before}, {"after", q.After}, {"around", q.Around}} {
		if a.id == "" {
			continue
		}
		if len(v) > 1 {
			return nil, fmt.Errorf("at most one of before, after and around")
		}
		if !snowflake(a.id) {
			return nil, fmt.Errorf("%s: message id %q is not a snowflake", a.name, a.id)
		}
		v.Set(a.name, a.id)
	}
	return v, nil
}

// historyMessage is a message as read back. The sender's name is the
// display name Discord shows beside it (no member nick: the REST history
// carries none).
func historyMessage(m *message) channel.Message {
	s := sender(m)
	out := channel.Message{
		ID:         m.ID,
		SenderID:   m.Author.ID,
		SenderName: s.Name,
		IsBot:      s.IsBot,
		Text:       m.Content,
		Time:       messageTime(m),
		Media:      mediaOf(m),
	}
	for _, md := range out.Media {
		out.Attachments = append(out.Attachments, md.Name)
	}
	return out
}

// compareIDs orders snowflakes as numbers (no leading zeros: a longer
// one is larger).
func compareIDs(a, b string) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// Reactions lists the reactions on a message (channel.Reader): GET the
// message and read its reactions[] — the count, whether the bot is among
// them, and the emoji as a Unicode string or <:name:id> (<a:name:id> when
// animated). Who reacted is not listed: that is a request per emoji.
func (b *Bot) Reactions(ctx context.Context, t channel.Target, messageID string) ([]channel.Reaction, error) {
	const step = "discord reactions"
	path, err := b.messagePath(ctx, t, messageID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	var m message
	if err := b.call(ctx, http.MethodGet, path, nil, &m); err != nil {
		return nil, fmt.Errorf("%s of %s: %w", step, messageID, err)
	}
	var out []channel.Reaction
	for _, r := range m.Reactions {
		if e := emojiText(r.Emoji); e != "" {
			out = append(out, channel.Reaction{Emoji: e, Count: max(r.Count, 0), Me: r.Me})
		}
	}
	return out, nil
}

// emojiText is how a reaction's emoji is written in a message: the
// Unicode emoji itself, or a custom one as <:name:id>.
func emojiText(e emoji) string {
	switch {
	case e.ID == "" && unicodeEmoji(e.Name):
		return e.Name
	case e.ID == "" || !snowflake(e.ID) || !emojiName(e.Name):
		return ""
	case e.Animated:
		return "<a:" + e.Name + ":" + e.ID + ">"
	default:
		return "<:" + e.Name + ":" + e.ID + ">"
	}
}
