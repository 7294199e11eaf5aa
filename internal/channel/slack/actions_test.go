package slack

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"talon/internal/channel"
	"talon/internal/channel/slack/slacktest"
)

func TestEmojiName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"thumbsup", "thumbsup"},
		{":thumbsup:", "thumbsup"},
		{" :Tada: ", "tada"},
		{"+1", "+1"},
		{":thumbsup::skin-tone-3:", "thumbsup::skin-tone-3"},
		{"👍", "thumbsup"},
		{"👍🏽", "thumbsup::skin-tone-4"},
		{"❤️", "heart"},
		{"⚠️", "warning"},
		{"", "error: no emoji given"},
		{"::", "error: no emoji given"},
		{"thumbs up", "error: not a Slack emoji name"},
		{":thumbsup", "error: not a Slack emoji name"},
		{"thumbsup::skin-tone-9", "error: not a Slack emoji name"},
		{"🦩", "error: cannot name the emoji"},
		{"👍👍", "error: cannot name the emoji"},
		{"\xff", "error: not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := emojiName(tt.in)
			if want, isErr := strings.CutPrefix(tt.want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("emojiName(%q) = %q, %v; want error %q", tt.in, got, err, want)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("emojiName(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// actRig is an App that has had one DM from Alice and posted one reply to
// her, so there is a message of hers and one of the bot's to act on.
type actRig struct {
	*rig
	dm      channel.Target // addressed as Send addresses it: Alice's user id
	room    channel.Target
	mine    string // the bot's reply's ts
	hers    string // Alice's message's ts
	roomMsg string // the bot's message in the room
}

func startAct(t *testing.T) actRig {
	t.Helper()
	r := start(t, ModeSocket)
	r.waitReady()
	hers := r.says(slacktest.Message{Text: "hi"})[0].TS
	r.says(slacktest.Message{Kind: "channel", Text: "morning"})
	r.envelopes(2)
	ar := actRig{rig: r, hers: hers,
		dm:   channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "U0ALICE"}},
		room: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C0GENERAL"}}}
	for _, p := range []struct {
		to  channel.Target
		out *string
	}{{ar.dm, &ar.mine}, {ar.room, &ar.roomMsg}} {
		sent, err := r.app.Send(testCtx(t), channel.Outbound{Target: p.to, Text: "hello", Key: "k"})
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		*p.out = sent.MessageID
	}
	r.mu.Lock()
	r.waits = nil
	r.mu.Unlock()
	return ar
}

// actCase is one action against the fake and what Slack must have recorded.
type actCase struct {
	name    string
	method  string // whose failures fail injects
	fail    []slacktest.Failure
	do      func(r actRig) error
	wantErr string
	waits   int
	check   func(t *testing.T, r actRig, err error)
}

func runActs(t *testing.T, tests []actCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startAct(t)
			for _, f := range tt.fail {
				r.fake.Fail(tt.method, f)
			}
			err := tt.do(r)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("error = %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if got := len(r.waited()); got != tt.waits {
				t.Errorf("waited %d times, want %d", got, tt.waits)
			}
			if tt.check != nil {
				tt.check(t, r, err)
			}
		})
	}
}

// wantReactions checks the bot's reactions now on the message ts picks.
func wantReactions(channel string, ts func(actRig) string, want ...string) func(t *testing.T, r actRig, err error) {
	return func(t *testing.T, r actRig, err error) {
		if got := r.fake.ReactionsOn(channel, ts(r)); !slices.Equal(got, want) {
			t.Errorf("reactions on %s/%s = %q, want %q (log %+v)", channel, ts(r), got, want, r.fake.Reactions())
		}
	}
}

func hers(r actRig) string    { return r.hers }
func roomMsg(r actRig) string { return r.roomMsg }

func isUnconfirmed(t *testing.T, r actRig, err error) {
	var ue *UnconfirmedError
	if !errors.As(err, &ue) || !errors.Is(err, channel.ErrUnconfirmed) {
		t.Errorf("error %v is not an UnconfirmedError", err)
	}
}

func TestReact(t *testing.T) {
	runActs(t, []actCase{
		// The DM's id is known from Alice's message: conversations.open,
		// which would fail, is not asked.
		{name: "add to a DM message by user id", method: "conversations.open",
			fail: []slacktest.Failure{{Error: "missing_scope", Needed: "im:write"}}, do: func(r actRig) error {
				return r.app.React(testCtx(t), r.dm, r.hers, ":thumbsup:", false)
			}, check: wantReactions("D0ALICE", hers, "thumbsup")},
		{name: "unicode in a room", do: func(r actRig) error {
			return r.app.React(testCtx(t), r.room, r.roomMsg, "👀", false)
		}, check: wantReactions("C0GENERAL", roomMsg, "eyes")},
		{name: "already reacted counts as done", do: func(r actRig) error {
			if err := r.app.React(testCtx(t), r.room, r.roomMsg, "tada", false); err != nil {
				return err
			}
			return r.app.React(testCtx(t), r.room, r.roomMsg, "tada", false)
		}, check: func(t *testing.T, r actRig, _ error) {
			if n := len(r.fake.Reactions()); n != 1 {
				t.Errorf("Slack took %d reactions, want 1", n)
			}
		}},
		{name: "remove", do: func(r actRig) error {
			if err := r.app.React(testCtx(t), r.room, r.roomMsg, "fire", false); err != nil {
				return err
			}
			return r.app.React(testCtx(t), r.room, r.roomMsg, "fire", true)
		}, check: wantReactions("C0GENERAL", roomMsg)},
		{name: "remove what is not there counts as done", do: func(r actRig) error {
			return r.app.React(testCtx(t), r.room, r.roomMsg, "fire", true)
		}},
		{name: "unknown ts", do: func(r actRig) error {
			return r.app.React(testCtx(t), r.room, "1.000001", "eyes", false)
		}, wantErr: "slack react: slack reactions.add: message_not_found"},
		{name: "name slack has no emoji for", do: func(r actRig) error {
			return r.app.React(testCtx(t), r.room, r.roomMsg, "not_an_emoji", false)
		}, wantErr: "slack react: slack reactions.add: invalid_name"},
		{name: "unicode it cannot name is refused before calling", do: func(r actRig) error {
			return r.app.React(testCtx(t), r.room, r.roomMsg, "🦩", false)
		}, wantErr: "slack react: cannot name the emoji", check: noneTaken},
		{name: "bad ts", do: func(r actRig) error {
			return r.app.React(testCtx(t), r.room, "12345", "eyes", false)
		}, wantErr: `slack react: message id "12345" is not a Slack ts`, check: noneTaken},
		{name: "bad target", do: func(r actRig) error {
			return r.app.React(testCtx(t), channel.Target{Peer: channel.Peer{ID: "#general"}}, r.roomMsg, "eyes", false)
		}, wantErr: "slack react: target \"#general\" is not a Slack channel or user id", check: noneTaken},
		{name: "rate limited then taken", method: "reactions.add", fail: []slacktest.Failure{{Status: 429, RetryAfter: 2}},
			do: func(r actRig) error { return r.app.React(testCtx(t), r.room, r.roomMsg, "eyes", false) }, waits: 1,
			check: wantReactions("C0GENERAL", roomMsg, "eyes")},
		{name: "lost answer is not retried", method: "reactions.add", fail: []slacktest.Failure{{DropResponse: true}},
			do:      func(r actRig) error { return r.app.React(testCtx(t), r.room, r.roomMsg, "eyes", false) },
			wantErr: "slack react: slack reactions.add: unconfirmed, not resent", check: isUnconfirmed},
		{name: "revoked token", method: "reactions.add", fail: []slacktest.Failure{{Error: "token_revoked"}},
			do:      func(r actRig) error { return r.app.React(testCtx(t), r.room, r.roomMsg, "eyes", false) },
			wantErr: "slack react: slack reactions.add: token_revoked",
			check: func(t *testing.T, r actRig, _ error) {
				if st := r.app.Status(); len(st.Issues) == 0 || st.Issues[0].Kind != "auth" {
					t.Errorf("status %+v has no auth issue", st)
				}
			}},
	})
}

// noneTaken checks that Slack was asked to change nothing.
func noneTaken(t *testing.T, r actRig, _ error) {
	if n, u, d := len(r.fake.Reactions()), len(r.fake.Updates()), len(r.fake.Deletions()); n+u+d != 0 {
		t.Errorf("Slack took %d reactions, %d updates, %d deletions; want none", n, u, d)
	}
}

func TestEdit(t *testing.T) {
	runActs(t, []actCase{
		{name: "own DM message by user id", do: func(r actRig) error {
			return r.app.Edit(testCtx(t), r.dm, r.mine, "*better*", "better")
		}, check: func(t *testing.T, r actRig, _ error) {
			want := []slacktest.Update{{Channel: "D0ALICE", TS: r.mine, Text: "*better*"}}
			if got := r.fake.Updates(); !slices.Equal(got, want) {
				t.Errorf("updates %+v, want %+v", got, want)
			}
		}},
		{name: "plain when there is no text", do: func(r actRig) error {
			return r.app.Edit(testCtx(t), r.room, r.roomMsg, "", "plain")
		}, check: func(t *testing.T, r actRig, _ error) {
			if u := r.fake.Updates(); len(u) != 1 || u[0].Text != "plain" {
				t.Errorf("updates %+v", u)
			}
		}},
		{name: "someone else's message", do: func(r actRig) error {
			return r.app.Edit(testCtx(t), r.dm, r.hers, "x", "x")
		}, wantErr: "slack edit: slack chat.update: cant_update_message"},
		{name: "unknown ts", do: func(r actRig) error {
			return r.app.Edit(testCtx(t), r.room, "1.000001", "x", "x")
		}, wantErr: "slack edit: slack chat.update: message_not_found"},
		{name: "empty", do: func(r actRig) error {
			return r.app.Edit(testCtx(t), r.room, r.roomMsg, "", "")
		}, wantErr: "slack edit: the chunk has no text", check: noneTaken},
		{name: "too long", do: func(r actRig) error {
			return r.app.Edit(testCtx(t), r.room, r.roomMsg, strings.Repeat("é", 40001), "")
		}, wantErr: "slack edit: the chunk is longer than", check: noneTaken},
		{name: "server error is not retried", method: "chat.update", fail: []slacktest.Failure{{Status: 503}},
			do:      func(r actRig) error { return r.app.Edit(testCtx(t), r.room, r.roomMsg, "x", "x") },
			wantErr: "slack edit: slack chat.update: unconfirmed, not resent: HTTP 503", check: isUnconfirmed},
		{name: "rate limited three times", method: "chat.update",
			fail:    []slacktest.Failure{{Status: 429, RetryAfter: 1}, {Status: 429, RetryAfter: 1}, {Status: 429, RetryAfter: 1}},
			do:      func(r actRig) error { return r.app.Edit(testCtx(t), r.room, r.roomMsg, "x", "x") },
			wantErr: "slack edit: slack chat.update: rate limited", waits: 2, check: noneTaken},
	})
}

func TestDelete(t *testing.T) {
	runActs(t, []actCase{
		{name: "own DM message by user id", do: func(r actRig) error {
			return r.app.Delete(testCtx(t), r.dm, r.mine)
		}, check: func(t *testing.T, r actRig, _ error) {
			want := []slacktest.Deletion{{Channel: "D0ALICE", TS: r.mine}}
			if got := r.fake.Deletions(); !slices.Equal(got, want) {
				t.Errorf("deletions %+v, want %+v", got, want)
			}
		}},
		{name: "twice is message_not_found", do: func(r actRig) error {
			if err := r.app.Delete(testCtx(t), r.room, r.roomMsg); err != nil {
				return err
			}
			return r.app.Delete(testCtx(t), r.room, r.roomMsg)
		}, wantErr: "slack delete: slack chat.delete: message_not_found"},
		{name: "someone else's message", do: func(r actRig) error {
			return r.app.Delete(testCtx(t), r.dm, r.hers)
		}, wantErr: "slack delete: slack chat.delete: cant_delete_message", check: noneTaken},
		{name: "lost answer is not retried", method: "chat.delete", fail: []slacktest.Failure{{DropResponse: true}},
			do:      func(r actRig) error { return r.app.Delete(testCtx(t), r.room, r.roomMsg) },
			wantErr: "slack delete: slack chat.delete: unconfirmed", check: isUnconfirmed},
		{name: "bad ts", do: func(r actRig) error {
			return r.app.Delete(testCtx(t), r.room, "1.2.3")
		}, wantErr: "slack delete: message id \"1.2.3\" is not a Slack ts", check: noneTaken},
	})
}

func TestActOnDMNeverSeenOpensIt(t *testing.T) {
	tests := []struct {
		name    string
		fail    []slacktest.Failure
		wantErr string
	}{
		{name: "opened"},
		{name: "open refused", fail: []slacktest.Failure{{Error: "missing_scope", Needed: "im:write"}},
			wantErr: "slack delete: finding the DM with U0BOB: slack conversations.open: missing_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, ModeSocket)
			r.waitReady()
			bob := channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "U0BOB"}}
			sent, err := r.app.Send(testCtx(t), channel.Outbound{Target: bob, Text: "hello", Key: "k"})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			for _, f := range tt.fail {
				r.fake.Fail("conversations.open", f)
			}
			err = r.app.Delete(testCtx(t), bob, sent.MessageID)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if d := r.fake.Deletions(); len(d) != 1 || d[0].Channel != "D0BOB" {
				t.Errorf("deletions %+v", d)
			}
		})
	}
}
