package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"talon/internal/channel"
)

var _ channel.Actor = (*Bot)(nil)

// maxEmoji bounds a Unicode emoji in bytes: the longest ZWJ sequences
// (families, flags of subdivisions) are about 35.
const maxEmoji = 64

// React adds the bot's reaction to a message, or takes it off with
// remove. emoji is a Unicode emoji or a custom one as name:id (or as
// Discord writes it in text, <:name:id> and <a:name:id>).
func (b *Bot) React(ctx context.Context, t channel.Target, messageID, emoji string, remove bool) error {
	step := "discord react"
	if remove {
		step = "discord unreact"
	}
	e, err := reactionEmoji(emoji)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	path, err := b.messagePath(ctx, t, messageID)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	method := http.MethodPut
	if remove {
		method = http.MethodDelete
	}
	return b.act(ctx, step, method, path+"/reactions/"+url.PathEscape(e)+"/@me", nil)
}

// Edit replaces the text of one of the bot's messages, with the same
// mention and embed rules as Send. plain is not needed: Discord does not
// refuse markdown.
func (b *Bot) Edit(ctx context.Context, t channel.Target, messageID, text, plain string) error {
	body, err := b.text(text)
	if err != nil {
		return fmt.Errorf("discord edit: %w", err)
	}
	path, err := b.messagePath(ctx, t, messageID)
	if err != nil {
		return fmt.Errorf("discord edit: %w", err)
	}
	return b.act(ctx, "discord edit", http.MethodPatch, path, body)
}

// Delete removes a message: the bot's own, or another's where the bot
// has Manage Messages.
func (b *Bot) Delete(ctx context.Context, t channel.Target, messageID string) error {
	path, err := b.messagePath(ctx, t, messageID)
	if err != nil {
		return fmt.Errorf("discord delete: %w", err)
	}
	return b.act(ctx, "discord delete", http.MethodDelete, path, nil)
}

// messagePath is /channels/{channel}/messages/{message} for a message
// in t, every id checked to be a snowflake before a request is made.
func (b *Bot) messagePath(ctx context.Context, t channel.Target, messageID string) (string, error) {
	if !snowflake(messageID) {
		return "", fmt.Errorf("message id %q is not a snowflake", messageID)
	}
	chID, err := b.channelFor(ctx, t)
	if err != nil {
		return "", err
	}
	return "/channels/" + chID + "/messages/" + messageID, nil
}

// act does one action request. It is never repeated here (429s aside,
// which did nothing): an outcome Discord may have acted on is returned
// wrapped in ErrUnconfirmed, as for Send.
func (b *Bot) act(ctx context.Context, step, method, path string, body any) error {
	err := b.call(ctx, method, path, body, nil)
	switch {
	case err == nil:
		return nil
	case unknownOutcome(err):
		return fmt.Errorf("%s: %w: %w", step, ErrUnconfirmed, err)
	default:
		return fmt.Errorf("%s: %w", step, err)
	}
}

// reactionEmoji is emoji as the reactions route takes it (before URL
// encoding): a Unicode emoji as is, a custom one as name:id. A bare name
// ("thumbsup", Slack's form) is refused: Discord knows custom emoji only
// by id.
func reactionEmoji(emoji string) (string, error) {
	e := emoji
	if inner, ok := strings.CutPrefix(e, "<"); ok {
		inner, ok = strings.CutSuffix(inner, ">")
		if !ok {
			return "", fmt.Errorf("emoji %q: a custom emoji is <:name:id>", emoji)
		}
		inner = strings.TrimPrefix(inner, "a") // animated
		if e, ok = strings.CutPrefix(inner, ":"); !ok {
			return "", fmt.Errorf("emoji %q: a custom emoji is <:name:id>", emoji)
		}
	}
	if name, id, ok := strings.Cut(e, ":"); ok {
		if !emojiName(name) || !snowflake(id) {
			return "", fmt.Errorf("emoji %q: a custom emoji is name:id, the name 2–32 letters, digits or _ and the id a snowflake", emoji)
		}
		return name + ":" + id, nil
	}
	if !unicodeEmoji(e) {
		return "", fmt.Errorf("emoji %q is neither a Unicode emoji nor a custom one as name:id", emoji)
	}
	return e, nil
}

// emojiName is Discord's rule for a custom emoji's name.
func emojiName(s string) bool {
	if len(s) < 2 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// unicodeEmoji says s may be a Unicode emoji: short valid UTF-8 with at
// least one non-ASCII rune, no spaces or control characters, and of
// ASCII only the digits, # and * that keycap emoji start with. It keeps
// names, paths and query strings out; Discord itself knows which
// sequences are emoji.
func unicodeEmoji(s string) bool {
	if s == "" || len(s) > maxEmoji || !utf8.ValidString(s) {
		return false
	}
	wide := false
	for _, r := range s {
		switch {
		case r >= utf8.RuneSelf:
			if unicode.IsSpace(r) || unicode.IsControl(r) {
				return false
			}
			wide = true
		case r == '#' || r == '*' || r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return wide
}
