package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"talon/internal/channel"
)

var _ channel.Actor = (*Bot)(nil)

// maxEmoji bounds a reaction's bytes: Telegram's longest reaction emoji
// ("🤷‍♂️" with its variation selector) is 13 bytes.
const maxEmoji = 32

// React implements channel.Actor: setMessageReaction with one emoji, or
// with none to take the bot's reaction off. A bot has at most one
// reaction on a message, so a new one replaces the old and remove needs
// no emoji.
func (b *Bot) React(ctx context.Context, t channel.Target, messageID, emoji string, remove bool) error {
	tg, id, err := actionTarget("react", t, messageID)
	if err != nil {
		return err
	}
	reaction := []map[string]any{}
	if !remove {
		if err := checkEmoji(emoji); err != nil {
			return err
		}
		reaction = append(reaction, map[string]any{"type": "emoji", "emoji": emoji})
	}
	params := func(sendAttempt) map[string]any {
		return map[string]any{"chat_id": tg.chat, "message_id": id, "reaction": reaction}
	}
	return b.call(ctx, "react", "setMessageReaction", tg, sendAttempt{}, false, params, nil)
}

// checkEmoji accepts a short Unicode emoji: Telegram reacts only with
// emoji characters, never names such as Slack's "thumbsup".
func checkEmoji(emoji string) error {
	switch {
	case emoji == "":
		return errors.New("telegram: react: no emoji")
	case len(emoji) > maxEmoji:
		return fmt.Errorf("telegram: react: emoji %q is longer than %d bytes", emoji, maxEmoji)
	}
	for _, r := range emoji {
		// U+200D joins the parts of emoji such as 👨‍💻; it is not graphic.
		if r < unicode.MaxASCII || r != '\u200d' && !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return fmt.Errorf("telegram: react: %q is not an emoji (Telegram takes the emoji itself, not a name)", emoji)
		}
	}
	return nil
}

// Edit implements channel.Actor: editMessageText with HTML, again as
// plain text when Telegram cannot parse the HTML, as Send does. Telegram
// answers "message is not modified" when the text is already that: the
// message says what was asked, so that is success.
func (b *Bot) Edit(ctx context.Context, t channel.Target, messageID, text, plain string) error {
	tg, id, err := actionTarget("edit", t, messageID)
	if err != nil {
		return err
	}
	if text == "" && plain == "" {
		return errors.New("telegram: edit: empty text")
	}
	params := func(at sendAttempt) map[string]any {
		// editMessageText has no message_thread_id: a message id is
		// unique in its chat, topics included.
		p := map[string]any{"chat_id": tg.chat, "message_id": id, "text": plain}
		if at.html {
			p["text"], p["parse_mode"] = text, "HTML"
		}
		if !b.preview {
			p["link_preview_options"] = map[string]any{"is_disabled": true}
		}
		return p
	}
	err = b.call(ctx, "edit", "editMessageText", tg, sendAttempt{html: text != ""}, plain != "", params, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == 400 && strings.Contains(strings.ToLower(ae.Description), "message is not modified") {
		return nil
	}
	return err
}

// Delete implements channel.Actor: deleteMessage. A message that is
// already gone is an error (Telegram's "message to delete not found"):
// the caller may have named the wrong one.
func (b *Bot) Delete(ctx context.Context, t channel.Target, messageID string) error {
	tg, id, err := actionTarget("delete", t, messageID)
	if err != nil {
		return err
	}
	params := func(sendAttempt) map[string]any {
		return map[string]any{"chat_id": tg.chat, "message_id": id}
	}
	return b.call(ctx, "delete", "deleteMessage", tg, sendAttempt{}, false, params, nil)
}

// actionTarget reads the chat and message id an action names.
func actionTarget(step string, t channel.Target, msgID string) (target, int64, error) {
	tg, err := parseTarget(t)
	if err != nil {
		return target{}, 0, fmt.Errorf("telegram: %s: %w", step, err)
	}
	id, err := messageID(step, "message", msgID)
	return tg, id, err
}
