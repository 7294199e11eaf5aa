package slack

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/slack/slacktest"
)

// readRig is an App whose room holds, oldest first: one (with a thread of
// r1 and r2), two, a file, three, and the bot's own post; and a DM.
type readRig struct {
	*rig
	ts map[string]string // text → ts
}

func startRead(t *testing.T) readRig {
	t.Helper()
	r := start(t, ModeSocket)
	r.waitReady()
	rr := readRig{rig: r, ts: map[string]string{}}
	say := func(m slacktest.Message) {
		m.Kind = "channel"
		rr.ts[cmpOr(m.Text, "file")] = r.says(m)[0].TS
	}
	say(slacktest.Message{Text: "one"})
	say(slacktest.Message{Text: "r1", ThreadTS: rr.ts["one"]})
	say(slacktest.Message{User: "U0BOB", Text: "r2", ThreadTS: rr.ts["one"]})
	say(slacktest.Message{Text: "two"})
	say(slacktest.Message{Files: []slacktest.File{{Name: "cat.png", MIME: "image/png", Data: []byte("png")}}})
	say(slacktest.Message{Text: "three"})
	rr.ts["dm"] = r.says(slacktest.Message{Text: "dm"})[0].TS
	r.envelopes(7)
	sent, err := r.app.Send(testCtx(t), channel.Outbound{Target: room, Text: "bot says", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	rr.ts["bot says"] = sent.MessageID
	r.mu.Lock()
	r.waits = nil
	r.mu.Unlock()
	return rr
}

var room = channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C0GENERAL"}}

func TestRead(t *testing.T) {
	rr := startRead(t)
	thread := channel.Target{Peer: room.Peer, ThreadID: rr.ts["one"]}
	dm := channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "U0ALICE"}}
	tests := []struct {
		name    string
		to      channel.Target
		q       channel.ReadQuery
		fail    []slacktest.Failure
		method  string
		want    []string // texts, newest first
		wantErr string
	}{
		{name: "newest first, top level only", to: room, want: []string{"bot says", "three", "", "two", "one"}},
		{name: "limit", to: room, q: channel.ReadQuery{Limit: 2}, want: []string{"bot says", "three"}},
		{name: "before", to: room, q: channel.ReadQuery{Before: rr.ts["two"]}, want: []string{"one"}},
		{name: "after", to: room, q: channel.ReadQuery{After: rr.ts["two"], Limit: 2}, want: []string{"bot says", "three"}},
		{name: "thread with its parent", to: thread, want: []string{"r2", "r1", "one"}},
		{name: "thread before", to: thread, q: channel.ReadQuery{Before: rr.ts["r2"]}, want: []string{"r1", "one"}},
		{name: "dm by the user's id", to: dm, want: []string{"dm"}},
		{name: "rate limited is offered again", to: room, q: channel.ReadQuery{Limit: 1}, method: "conversations.history",
			fail: []slacktest.Failure{{Status: 429, RetryAfter: 1}}, want: []string{"bot says"}},
		{name: "around", to: room, q: channel.ReadQuery{Around: rr.ts["two"]}, wantErr: "around is not supported"},
		{name: "two anchors", to: room, q: channel.ReadQuery{Before: rr.ts["two"], After: rr.ts["one"]}, wantErr: "at most one of before, after and around"},
		{name: "limit too high", to: room, q: channel.ReadQuery{Limit: 101}, wantErr: "limit 101 is outside 1–100"},
		{name: "bad anchor", to: room, q: channel.ReadQuery{Before: "yesterday"}, wantErr: `before "yesterday" is not a Slack message ts`},
		{name: "bad thread", to: channel.Target{Peer: room.Peer, ThreadID: "x"}, wantErr: "is not a Slack ts"},
		{name: "unknown channel", to: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C0NOPE"}}, wantErr: "conversations.history: channel_not_found"},
		{name: "missing scope", to: room, method: "conversations.history", fail: []slacktest.Failure{{Error: "missing_scope", Needed: "channels:history"}},
			wantErr: "needed scope: channels:history"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range tt.fail {
				rr.fake.Fail(tt.method, f)
			}
			got, err := rr.app.Read(testCtx(t), tt.to, tt.q)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Read error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			var texts []string
			for _, m := range got {
				texts = append(texts, m.Text)
			}
			if d := cmp.Diff(tt.want, texts); d != "" {
				t.Errorf("texts (-want +got):\n%s", d)
			}
		})
	}
}

func TestReadMapsMessages(t *testing.T) {
	rr := startRead(t)
	got, err := rr.app.Read(testCtx(t), room, channel.ReadQuery{})
	if err != nil {
		t.Fatal(err)
	}
	byText := map[string]channel.Message{}
	for _, m := range got {
		byText[cmpOr(m.Text, "file")] = m
	}
	one, bot, file := byText["one"], byText["bot says"], byText["file"]
	if one.ID != rr.ts["one"] || one.SenderID != "U0ALICE" || one.IsBot || one.ThreadID != "" || !one.Time.Equal(tsTime(rr.ts["one"])) {
		t.Errorf("one: %+v", one)
	}
	if bot.SenderID != slacktest.BotUserID || !bot.IsBot {
		t.Errorf("bot's: %+v", bot)
	}
	if len(file.Media) != 1 || file.Media[0].Name != "cat.png" || !cmp.Equal(file.Attachments, []string{"cat.png"}) {
		t.Errorf("file: %+v", file)
	}
	thread, err := rr.app.Read(testCtx(t), channel.Target{Peer: room.Peer, ThreadID: rr.ts["one"]}, channel.ReadQuery{Limit: 1})
	if err != nil || len(thread) != 1 || thread[0].SenderID != "U0BOB" || thread[0].ThreadID != rr.ts["one"] {
		t.Errorf("thread: %+v, %v", thread, err)
	}
}

// A thread comes oldest first, 200 to a page: its newest replies are on
// the last page.
func TestReadLongThread(t *testing.T) {
	r := start(t, ModeSocket)
	r.waitReady()
	parent := r.fake.Hold(slacktest.Message{Kind: "channel", Text: "parent"})
	for i := range 450 {
		r.fake.Hold(slacktest.Message{Kind: "channel", Text: fmt.Sprint("r", i), ThreadTS: parent})
	}
	got, err := r.app.Read(testCtx(t), channel.Target{Peer: room.Peer, ThreadID: parent}, channel.ReadQuery{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Text)
	}
	if d := cmp.Diff([]string{"r449", "r448", "r447"}, texts); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
}

func TestReactions(t *testing.T) {
	rr := startRead(t)
	one := rr.ts["one"]
	for _, r := range []struct{ name, user string }{{"eyes", "U0BOB"}, {"thumbsup", "U0ALICE"}} {
		if err := rr.fake.UserReacts("C0GENERAL", one, r.name, r.user); err != nil {
			t.Fatal(err)
		}
	}
	if err := rr.app.React(testCtx(t), room, one, "👍", false); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		to      channel.Target
		ts      string
		want    []channel.Reaction
		wantErr string
	}{
		{name: "people's and the bot's", to: room, ts: one, want: []channel.Reaction{
			{Emoji: "thumbsup", Count: 2, Users: []string{slacktest.BotUserID, "U0ALICE"}, Me: true},
			{Emoji: "eyes", Count: 1, Users: []string{"U0BOB"}},
		}},
		{name: "none", to: room, ts: rr.ts["two"]},
		{name: "no such message", to: room, ts: "1700000000.000001", wantErr: "reactions.get: message_not_found"},
		{name: "bad ts", to: room, ts: "one", wantErr: `message id "one" is not a Slack ts`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rr.app.Reactions(testCtx(t), tt.to, tt.ts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Reactions error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("reactions (-want +got):\n%s", d)
			}
		})
	}
}

func TestReactionsMapping(t *testing.T) {
	got := reactions([]reaction{
		{Name: "tada", Count: 3, Users: []string{"U1", "bad id!", "UBOT"}},
		{Name: "<script>", Count: 1, Users: []string{"U1"}},
		{Name: "x", Count: -2},
	}, "UBOT")
	want := []channel.Reaction{{Emoji: "tada", Count: 3, Users: []string{"U1", "UBOT"}, Me: true}, {Emoji: "x"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reactions (-want +got):\n%s", d)
	}
}
