package telegram

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

func to(peer string) channel.Target {
	return channel.Target{Peer: channel.Peer{Kind: channel.Group, ID: peer}}
}

// chatMsgs are the messages each action test starts with, in chat 42:
// one the bot sent ("<b>old</b>") and one from Ann.
type chatMsgs struct{ own, user string }

func TestActions(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(s *tgtest.Server)
		do        func(ctx context.Context, b *Bot, s *tgtest.Server, m chatMsgs) error
		errIs     error
		errMatch  string
		noRequest bool // refused before asking Telegram
		reactions []tgtest.Reaction
		edits     []tgtest.Edit
		deletions []tgtest.Deletion
		waits     []time.Duration
	}{
		{
			name: "react with an emoji",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.user, "👍", false)
			},
			reactions: []tgtest.Reaction{{ChatID: "42", MessageID: 1001, Emoji: "👍"}},
		},
		{
			name: "react with an emoji joined by U+200D",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.own, "👨\u200d💻", false)
			},
			reactions: []tgtest.Reaction{{ChatID: "42", MessageID: 1002, Emoji: "👨\u200d💻"}},
		},
		{
			name: "react in a topic names the chat",
			do: func(ctx context.Context, b *Bot, s *tgtest.Server, _ chatMsgs) error {
				q, _ := s.UserSays(tgtest.Say{From: ann, Chat: -1001, Topic: 17, Text: "q"})
				return b.React(ctx, to("-1001:topic:17"), strconv.FormatInt(q.MessageID, 10), "🔥", false)
			},
			reactions: []tgtest.Reaction{{ChatID: "-1001", MessageID: 1003, Emoji: "🔥"}},
		},
		{
			name: "remove sends no reaction",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.user, "", true)
			},
			reactions: []tgtest.Reaction{{ChatID: "42", MessageID: 1001}},
		},
		{
			name: "a Slack emoji name is refused",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.user, "thumbsup", false)
			},
			errMatch:  `telegram: react: "thumbsup" is not an emoji`,
			noRequest: true,
		},
		{
			name: "no emoji is refused",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.user, "", false)
			},
			errMatch:  "telegram: react: no emoji",
			noRequest: true,
		},
		{
			name: "a long emoji is refused",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.user, strings.Repeat("👍", 9), false)
			},
			errMatch:  "longer than 32 bytes",
			noRequest: true,
		},
		{
			name: "an emoji Telegram does not offer",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.user, "🦀", false)
			},
			errMatch: "telegram: react: telegram setMessageReaction: 400 Bad Request: REACTION_INVALID",
		},
		{
			name: "react to an unknown message",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, _ chatMsgs) error {
				return b.React(ctx, to("42"), "999", "👍", false)
			},
			errMatch: "Bad Request: message to react not found",
		},
		{
			name: "a message id that is no number",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, _ chatMsgs) error {
				return b.React(ctx, to("42"), "12a", "👍", false)
			},
			errMatch:  `telegram: react: message id "12a" is not a message id`,
			noRequest: true,
		},
		{
			name: "a message id that is not positive",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, _ chatMsgs) error {
				return b.Delete(ctx, to("42"), "-3")
			},
			errMatch:  `telegram: delete: message id "-3" is not a message id`,
			noRequest: true,
		},
		{
			name: "a target that is no chat",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Edit(ctx, to("nope"), m.own, "x", "x")
			},
			errMatch:  `telegram: edit: target "nope" is not a chat id`,
			noRequest: true,
		},
		{
			name: "a 429 on a reaction waits and reacts once",
			setup: func(s *tgtest.Server) {
				s.Fail("setMessageReaction", tgtest.Failure{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1})
			},
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.user, "👍", false)
			},
			reactions: []tgtest.Reaction{{ChatID: "42", MessageID: 1001, Emoji: "👍"}},
			waits:     []time.Duration{time.Second},
		},
		{
			name:  "a reaction whose answer was lost is unconfirmed",
			setup: func(s *tgtest.Server) { s.Fail("setMessageReaction", tgtest.Failure{Drop: true}) },
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.React(ctx, to("42"), m.user, "👍", false)
			},
			errIs:     ErrUnconfirmed,
			reactions: []tgtest.Reaction{{ChatID: "42", MessageID: 1001, Emoji: "👍"}},
		},
		{
			name: "edit with HTML",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Edit(ctx, to("42"), m.own, "<i>new</i>", "new")
			},
			edits: []tgtest.Edit{{ChatID: "42", MessageID: 1002, Text: "<i>new</i>", ParseMode: "HTML"}},
		},
		{
			name: "HTML Telegram cannot parse is edited in as plain text",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Edit(ctx, to("42"), m.own, "<i>new", "new")
			},
			edits: []tgtest.Edit{{ChatID: "42", MessageID: 1002, Text: "new"}},
		},
		{
			name: "unparsable HTML without plain text is an error",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Edit(ctx, to("42"), m.own, "<i>new", "")
			},
			errMatch: `telegram: edit: telegram editMessageText: 400 Bad Request: can't parse entities: Can't find end tag corresponding to start tag "i"`,
		},
		{
			name: "an edit to the same text is done",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Edit(ctx, to("42"), m.own, "<b>old</b>", "old")
			},
		},
		{
			name: "edit in a topic",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, _ chatMsgs) error {
				sent, err := b.Send(ctx, out("-1001:topic:17", "a", "a"))
				if err != nil {
					return err
				}
				return b.Edit(ctx, to("-1001:topic:17"), sent.MessageID, "b", "b")
			},
			edits: []tgtest.Edit{{ChatID: "-1001", MessageID: 1003, Text: "b", ParseMode: "HTML"}},
		},
		{
			name: "another's message cannot be edited",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Edit(ctx, to("42"), m.user, "x", "x")
			},
			errMatch: "Bad Request: message can't be edited",
		},
		{
			name: "edit an unknown message",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, _ chatMsgs) error {
				return b.Edit(ctx, to("42"), "999", "x", "x")
			},
			errMatch: "telegram: edit: telegram editMessageText: 400 Bad Request: message to edit not found",
		},
		{
			name: "an empty edit is refused",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Edit(ctx, to("42"), m.own, "", "")
			},
			errMatch:  "telegram: edit: empty text",
			noRequest: true,
		},
		{
			name:  "an edit whose answer was lost is unconfirmed",
			setup: func(s *tgtest.Server) { s.Fail("editMessageText", tgtest.Failure{Drop: true}) },
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Edit(ctx, to("42"), m.own, "new", "new")
			},
			errIs: ErrUnconfirmed,
			edits: []tgtest.Edit{{ChatID: "42", MessageID: 1002, Text: "new", ParseMode: "HTML"}},
		},
		{
			name: "delete",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Delete(ctx, to("42"), m.own)
			},
			deletions: []tgtest.Deletion{{ChatID: "42", MessageID: 1002}},
		},
		{
			name: "a deleted message is gone",
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				if err := b.Delete(ctx, to("42"), m.user); err != nil {
					return err
				}
				return b.Delete(ctx, to("42"), m.user)
			},
			errMatch:  "telegram: delete: telegram deleteMessage: 400 Bad Request: message to delete not found",
			deletions: []tgtest.Deletion{{ChatID: "42", MessageID: 1001}},
		},
		{
			name: "a server error on delete is not retried",
			setup: func(s *tgtest.Server) {
				s.Fail("deleteMessage", tgtest.Failure{Code: 500, Description: "Internal Server Error"})
			},
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Delete(ctx, to("42"), m.own)
			},
			errMatch: "telegram: delete: telegram deleteMessage: 500 Internal Server Error",
		},
		{
			name:  "a deletion whose answer was lost is unconfirmed",
			setup: func(s *tgtest.Server) { s.Fail("deleteMessage", tgtest.Failure{Drop: true}) },
			do: func(ctx context.Context, b *Bot, _ *tgtest.Server, m chatMsgs) error {
				return b.Delete(ctx, to("42"), m.own)
			},
			errIs:     ErrUnconfirmed,
			deletions: []tgtest.Deletion{{ChatID: "42", MessageID: 1002}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, nil)
			waits := recordWaits(b)
			ctx := testCtx(t)
			q, _ := s.UserSays(tgtest.Say{From: ann, Text: "q"})
			own, err := b.Send(ctx, out("42", "<b>old</b>", "old"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.setup != nil {
				tt.setup(s)
			}
			before := s.Requests()
			err = tt.do(ctx, b, s, chatMsgs{own: own.MessageID, user: strconv.FormatInt(q.MessageID, 10)})
			switch {
			case tt.errIs != nil || tt.errMatch != "":
				if err == nil || tt.errIs != nil && !errors.Is(err, tt.errIs) || !strings.Contains(err.Error(), tt.errMatch) {
					t.Fatalf("err = %v, want %v %q", err, tt.errIs, tt.errMatch)
				}
			case err != nil:
				t.Fatal(err)
			}
			if got := s.Requests() - before; tt.noRequest && got != 0 {
				t.Fatalf("%d requests for an action refused before asking Telegram", got)
			}
			if got := s.Reactions(); !slices.Equal(got, tt.reactions) {
				t.Fatalf("reactions = %+v, want %+v", got, tt.reactions)
			}
			if got := s.Edits(); !slices.Equal(got, tt.edits) {
				t.Fatalf("edits = %+v, want %+v", got, tt.edits)
			}
			if got := s.Deletions(); !slices.Equal(got, tt.deletions) {
				t.Fatalf("deletions = %+v, want %+v", got, tt.deletions)
			}
			if got := waits(); !slices.Equal(got, tt.waits) {
				t.Fatalf("waits = %v, want %v", got, tt.waits)
			}
		})
	}
}
