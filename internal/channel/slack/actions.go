package slack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"talon/internal/channel"
)

var _ channel.Actor = (*App)(nil)

// emojiRE is the shape of a Slack emoji name: lower-case letters, digits,
// "_", "+" and "-", with an optional skin tone ("thumbsup::skin-tone-2").
var emojiRE = regexp.MustCompile(`^[a-z0-9_+-]+(::skin-tone-[2-6])?$`) // at most 100 before the tone

// unicodeNames are the Slack names of the Unicode emoji a model most often
// reacts with. Slack's reactions.add takes only names, so any other
// Unicode emoji is refused rather than guessed at.
var unicodeNames = map[string]string{
	"👍": "thumbsup", "👎": "thumbsdown", "👀": "eyes", "✅": "white_check_mark",
	"✔": "heavy_check_mark", "❤": "heart", "🎉": "tada", "🔥": "fire", "🚀": "rocket",
	"😂": "joy", "🙏": "pray", "❌": "x", "⚠": "warning", "👌": "ok_hand", "👏": "clap",
	"💯": "100", "🤔": "thinking_face", "😄": "smile", "👋": "wave", "🙌": "raised_hands",
	"✨": "sparkles", "⏳": "hourglass_flowing_sand",
}

// emojiName turns what the model gave — "thumbsup", ":thumbsup:" or a
// Unicode emoji, with a skin tone or not — into Slack's name for it.
func emojiName(emoji string) (string, error) {
	e := strings.TrimSpace(emoji)
	if inner, ok := strings.CutPrefix(e, ":"); ok {
		if inner, ok = strings.CutSuffix(inner, ":"); ok {
			e = inner
		}
	}
	if e == "" {
		return "", errors.New("no emoji given")
	}
	if !utf8.ValidString(e) || len(e) > 200 {
		return "", errors.New("the emoji is not valid UTF-8 or is too long")
	}
	if e[0] < utf8.RuneSelf {
		name := strings.ToLower(e)
		if base, _, _ := strings.Cut(name, "::"); len(base) > 100 || !emojiRE.MatchString(name) {
			return "", fmt.Errorf("%q is not a Slack emoji name (letters, digits, _, + and -, as in thumbsup)", clip(e, 80))
		}
		return name, nil
	}
	return unicodeName(e)
}

// unicodeName is the Slack name of a Unicode emoji from unicodeNames; a
// variation selector is dropped and a skin-tone modifier becomes Slack's
// "::skin-tone-N".
func unicodeName(e string) (string, error) {
	base, tone := strings.Builder{}, ""
	for _, r := range e {
		switch {
		case r == '\uFE0F':
		case r >= 0x1F3FB && r <= 0x1F3FF && tone == "":
			tone = fmt.Sprintf("::skin-tone-%d", r-0x1F3FB+2)
		default:
			base.WriteRune(r)
		}
	}
	name, ok := unicodeNames[base.String()]
	if !ok {
		return "", fmt.Errorf("cannot name the emoji %q for Slack; give its Slack name instead, such as thumbsup", clip(e, 80))
	}
	return name + tone, nil
}

// messageRef validates the conversation and ts of a message to act on.
func messageRef(t channel.Target, messageID string) error {
	if !validID(t.Peer.ID) {
		return fmt.Errorf("target %q is not a Slack channel or user id", clip(t.Peer.ID, 80))
	}
	if !tsRE.MatchString(messageID) {
		return fmt.Errorf("message id %q is not a Slack ts", clip(messageID, 80))
	}
	return nil
}

// conversation is the conversation id of t. Send may post to a user id,
// but chat.update, chat.delete and reactions want the DM's own id (D…):
// it is the one an inbound DM came from, else conversations.open's
// (scope im:write), which only finds or opens the DM and so is safe to ask.
func (a *App) conversation(ctx context.Context, t channel.Target) (string, error) {
	id := t.Peer.ID
	if !strings.HasPrefix(id, "U") && !strings.HasPrefix(id, "W") {
		return id, nil
	}
	if dm, ok := a.dms.get(id); ok {
		return dm, nil
	}
	var out struct {
		Channel struct {
			ID string `json:"id"`
		} `json:"channel"`
	}
	if err := a.call(ctx, "conversations.open", a.botToken, url.Values{"users": {id}}, &out); err != nil {
		return "", fmt.Errorf("finding the DM with %s: %w", id, err)
	}
	if !validID(out.Channel.ID) {
		return "", fmt.Errorf("finding the DM with %s: conversations.open answered no valid channel id", id)
	}
	a.dms.put(id, out.Channel.ID)
	return out.Channel.ID, nil
}

// act validates the message reference, finds the conversation and makes
// one write call with args plus channel; step names the action in errors.
func (a *App) act(ctx context.Context, step string, t channel.Target, messageID, method string, args map[string]any) error {
	if err := messageRef(t, messageID); err != nil {
		return fmt.Errorf("slack %s: %w", step, err)
	}
	ch, err := a.conversation(ctx, t)
	if err != nil {
		return fmt.Errorf("slack %s: %w", step, err)
	}
	args["channel"] = ch
	err = a.write(ctx, method, args, nil)
	if err == nil {
		return nil
	}
	if done := doneAlready[method]; done != "" {
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == done {
			return nil
		}
	}
	a.report(ctx, err)
	return fmt.Errorf("slack %s: %w", step, err)
}

// doneAlready is the refusal of each method that means the state asked
// for is already there: a reaction twice, or off a message it is not on.
var doneAlready = map[string]string{"reactions.add": "already_reacted", "reactions.remove": "no_reaction"}

// React adds the bot's reaction to the message messageID (its ts), or
// takes it off with remove. See emojiName for what emoji may be.
func (a *App) React(ctx context.Context, t channel.Target, messageID, emoji string, remove bool) error {
	name, err := emojiName(emoji)
	if err != nil {
		return fmt.Errorf("slack react: %w", err)
	}
	method := "reactions.add"
	if remove {
		method = "reactions.remove"
	}
	return a.act(ctx, "react", t, messageID, method, map[string]any{"timestamp": messageID, "name": name})
}

// Edit replaces the mrkdwn text of the bot's message messageID with
// chat.update. Slack has no parse errors to fall back from, so plain is
// used only when text is empty, as in Send.
func (a *App) Edit(ctx context.Context, t channel.Target, messageID, text, plain string) error {
	if text == "" {
		text = plain
	}
	if err := checkText(text); err != nil {
		return fmt.Errorf("slack edit: %w", err)
	}
	return a.act(ctx, "edit", t, messageID, "chat.update", map[string]any{"ts": messageID, "text": text})
}

// Delete removes the message messageID with chat.delete: the bot's own;
// Slack refuses others' to a bot token (cant_delete_message).
func (a *App) Delete(ctx context.Context, t channel.Target, messageID string) error {
	return a.act(ctx, "delete", t, messageID, "chat.delete", map[string]any{"ts": messageID})
}
