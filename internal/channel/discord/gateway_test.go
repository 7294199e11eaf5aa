package discord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

// settle injects a DM and waits for it: every event before it has been
// handled when it returns.
func settle(t *testing.T, fake *discordtest.Server, r *running) {
	t.Helper()
	id := fake.UserSays(discordtest.Say{Text: "sync"})
	r.in.wait(t, testCtx(t), id)
}

func TestIdentify(t *testing.T) {
	base := discordtest.IntentGuilds | discordtest.IntentGuildMessages | discordtest.IntentDirectMessages |
		discordtest.IntentGuildMessageReactions | discordtest.IntentDirectMessageReactions
	tests := []struct {
		name      string
		intents   Intents
		want      int
		wantIssue bool
	}{
		{"default asks for message content", Intents{}, base | discordtest.IntentMessageContent, false},
		{"message content off", Intents{MessageContent: ptr(false)}, base, true},
		{"guild members when configured", Intents{GuildMembers: true}, base | discordtest.IntentMessageContent | discordtest.IntentGuildMembers, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, r := startReady(t, func(o *Options) { o.Intents = tt.intents })
			settle(t, fake, r)
			ids := fake.Identifies()
			if len(ids) != 1 || ids[0].Intents != tt.want || ids[0].Token != discordtest.Token {
				t.Fatalf("identifies = %+v, want one with intents %d", ids, tt.want)
			}
			st := r.bot.Status()
			if !st.Connected || st.Mode != "gateway" || st.BotID != discordtest.BotID || st.BotName != discordtest.BotName || st.LastConnectedAt.IsZero() {
				t.Errorf("status = %+v", st)
			}
			if got := len(st.Issues) == 1 && st.Issues[0].Kind == "intent"; got != tt.wantIssue {
				t.Errorf("issues = %+v, want an intent issue: %v", st.Issues, tt.wantIssue)
			}
		})
	}
}

// TestHeartbeats: the bot beats at the interval HELLO names, each beat
// carrying the last sequence number it handled.
func TestHeartbeats(t *testing.T) {
	ctx := testCtx(t)
	fake := discordtest.Start(t)
	fake.SetHeartbeat(minHeartbeat)
	r := run(t, newBot(t, fake, nil))
	if err := fake.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}
	settle(t, fake, r)
	n, _ := fake.Heartbeats()
	if err := fake.WaitHeartbeats(ctx, n+2); err != nil {
		t.Fatal(err)
	}
	if _, seq := fake.Heartbeats(); seq == nil || *seq != fake.Seq() {
		t.Errorf("heartbeat carried %v, want the last sequence %d", seq, fake.Seq())
	}
}

func TestPermanentRefusals(t *testing.T) {
	tests := []struct {
		name      string
		token     string
		setup     func(*discordtest.Server)
		intents   Intents
		after     func(*discordtest.Server) // once READY
		kind      string
		wantInFix []string
	}{
		{name: "bad token", token: "wrong", kind: "auth", wantInFix: []string{"channels.discord.token"}},
		{
			name: "message content not enabled (4014)", setup: func(s *discordtest.Server) { s.SetPrivileged(false, true) },
			kind: "intent", wantInFix: []string{"enable Message Content Intent", "Developer Portal", "intents.messageContent: false", "requireMention: true"},
		},
		{
			name: "server members not enabled (4014)", setup: func(s *discordtest.Server) { s.SetPrivileged(true, false) },
			intents: Intents{GuildMembers: true}, kind: "intent", wantInFix: []string{"enable Server Members Intent"},
		},
		{
			name: "gateway refuses the token (4004)", after: func(s *discordtest.Server) { s.CloseWith(4004, "Authentication failed.") },
			kind: "auth", wantInFix: []string{"Reset Token"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake := discordtest.Start(t)
			if tt.setup != nil {
				tt.setup(fake)
			}
			r := run(t, newBot(t, fake, func(o *Options) {
				if tt.token != "" {
					o.Token = tt.token
				}
				o.Intents = tt.intents
			}))
			if tt.after != nil {
				if err := fake.WaitReady(ctx, 1); err != nil {
					t.Fatal(err)
				}
				tt.after(fake)
			}
			err := r.result(t, ctx)
			if err == nil {
				t.Fatal("Run returned nil, want a permanent error")
			}
			st := r.bot.Status()
			var iss *channel.Issue
			for i := range st.Issues {
				if st.Issues[i].Kind == tt.kind {
					iss = &st.Issues[i]
				}
			}
			if iss == nil {
				t.Fatalf("no %s issue in %+v (err %v)", tt.kind, st.Issues, err)
			}
			for _, w := range tt.wantInFix {
				if !strings.Contains(iss.Fix, w) {
					t.Errorf("fix %q lacks %q", iss.Fix, w)
				}
			}
			if st.Connected || st.LastError == "" {
				t.Errorf("status = %+v, want disconnected with an error", st)
			}
			if strings.Contains(err.Error()+st.LastError+iss.Message+iss.Fix, discordtest.Token) {
				t.Error("the token leaked into an error or the status")
			}
		})
	}
}

// TestReconnects drops the connection in the ways Discord does and checks
// that no message is lost: one written while the bot was away arrives
// after the RESUME (or, for a lost session, the bot identifies again).
func TestReconnects(t *testing.T) {
	tests := []struct {
		name          string
		drop          func(*discordtest.Server)
		heartbeat     time.Duration
		wantResume    bool
		wantIdentify  int
		keepsWhileOff bool // a message sent while away arrives
	}{
		{name: "network drop", drop: (*discordtest.Server).Kick, wantResume: true, wantIdentify: 1, keepsWhileOff: true},
		{name: "server close 4000", drop: func(s *discordtest.Server) { s.CloseWith(4000, "Unknown error.") }, wantResume: true, wantIdentify: 1, keepsWhileOff: true},
		{name: "op 7 reconnect", drop: (*discordtest.Server).Reconnect, wantResume: true, wantIdentify: 1},
		{name: "resumable invalid session", drop: func(s *discordtest.Server) { s.InvalidateSession(true) }, wantResume: true, wantIdentify: 1},
		{name: "invalid session", drop: func(s *discordtest.Server) { s.InvalidateSession(false) }, wantIdentify: 2},
		{name: "session timed out (4009)", drop: func(s *discordtest.Server) { s.CloseWith(4009, "Session timed out.") }, wantIdentify: 2},
		{name: "expired session", drop: func(s *discordtest.Server) { s.ExpireSession(); s.Kick() }, wantIdentify: 2},
		{name: "missed heartbeat ACK", heartbeat: 5 * time.Millisecond, drop: (*discordtest.Server).StopACKs, wantResume: true, wantIdentify: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake := discordtest.Start(t)
			if tt.heartbeat > 0 {
				fake.SetHeartbeat(tt.heartbeat)
			}
			r := run(t, newBot(t, fake, nil))
			if err := fake.WaitReady(ctx, 1); err != nil {
				t.Fatal(err)
			}
			before := fake.UserSays(discordtest.Say{Text: "before"})
			r.in.wait(t, ctx, before)
			var away string
			if tt.keepsWhileOff {
				release := fake.Hold()
				tt.drop(fake)
				away = fake.UserSays(discordtest.Say{Text: "while away"})
				release()
			} else {
				tt.drop(fake)
			}
			if tt.wantResume {
				if err := fake.WaitResumed(ctx, 1); err != nil {
					t.Fatal(err)
				}
				fake.ResumeACKs()
			} else if err := fake.WaitReady(ctx, tt.wantIdentify); err != nil {
				t.Fatal(err)
			}
			after := fake.UserSays(discordtest.Say{Text: "after"})
			got := r.in.wait(t, ctx, after)
			if got.Text != "after" {
				t.Errorf("text = %q", got.Text)
			}
			all := r.in.waitFor(t, ctx, "all", func(g []channel.Envelope, _ int) bool { return find(g, after) >= 0 })
			if away != "" && find(all, away) < 0 {
				t.Errorf("the message sent while away was lost: %+v", all)
			}
			seen := map[string]int{}
			for _, e := range all {
				seen[e.MessageID]++
			}
			for id, n := range seen {
				if n > 1 {
					t.Errorf("message %s accepted %d times", id, n)
				}
			}
			if n := len(fake.Identifies()); n != tt.wantIdentify {
				t.Errorf("identifies = %d, want %d", n, tt.wantIdentify)
			}
		})
	}
}

// TestFailedAcceptIsReplayed: while accept fails the sequence does not
// advance; the stalled connection is dropped (no heartbeat ACK is read)
// and resumed, Discord replays the message, and it is accepted once the
// store is back — before the message that followed it.
func TestFailedAcceptIsReplayed(t *testing.T) {
	ctx := testCtx(t)
	fake := discordtest.Start(t)
	fake.SetHeartbeat(10 * time.Millisecond)
	r := run(t, newBot(t, fake, nil))
	if err := fake.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.in.setFailing(true)
	first := fake.UserSays(discordtest.Say{Text: "first"})
	r.in.waitFor(t, ctx, "a failed try", func(_ []channel.Envelope, tries int) bool { return tries >= 2 })
	if err := fake.WaitResumed(ctx, 1); err != nil {
		t.Fatal(err)
	}
	second := fake.UserSays(discordtest.Say{Text: "second"})
	r.in.setFailing(false)
	got := r.in.waitFor(t, ctx, "both", func(g []channel.Envelope, _ int) bool { return find(g, second) >= 0 })
	if i, j := find(got, first), find(got, second); i < 0 || i > j {
		t.Fatalf("got %d envelopes, first at %d, second at %d", len(got), i, j)
	}
	if n := len(fake.Identifies()); n != 1 {
		t.Errorf("identifies = %d, want 1 (resumed, not re-identified)", n)
	}
	if st := r.bot.Status(); !st.Connected {
		t.Errorf("status = %+v", st)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx := testCtx(t)
	fake, r := startReady(t, nil)
	settle(t, fake, r)
	r.stop()
	if err := r.result(t, ctx); err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
	if r.bot.Status().Connected {
		t.Error("still connected after Run returned")
	}
	if err := fake.WaitDisconnected(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRunTwice(t *testing.T) {
	fake, r := startReady(t, nil)
	settle(t, fake, r)
	err := r.bot.Run(context.Background(), r.in.accept)
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Run = %v", err)
	}
}

func TestRunRetriesAnUnreachableAPI(t *testing.T) {
	ctx := testCtx(t)
	fake := discordtest.Start(t)
	// 429s are transient: the login waits them out.
	fake.RateLimitNext(discordtest.RateLimit{RetryAfter: time.Millisecond}, discordtest.RateLimit{RetryAfter: time.Millisecond})
	r := run(t, newBot(t, fake, nil))
	if err := fake.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}
	settle(t, fake, r)
	want := []string{"GET /users/@me", "GET /users/@me", "GET /users/@me"}
	if diff := cmp.Diff(want, fake.Requests()[:3]); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestMalformedEvents: dispatches with invalid fields are dropped
// without ending the connection; the next message arrives.
func TestMalformedEvents(t *testing.T) {
	tests := []struct {
		name, t, d string
	}{
		{"message id not a snowflake", "MESSAGE_CREATE", `{"id":"abc","channel_id":"1","author":{"id":"2"},"content":"x"}`},
		{"path in channel id", "MESSAGE_CREATE", `{"id":"1","channel_id":"../users/@me","author":{"id":"2"},"content":"x"}`},
		{"no author", "MESSAGE_CREATE", `{"id":"1","channel_id":"1","content":"x"}`},
		{"message is an array", "MESSAGE_CREATE", `[1,2,3]`},
		{"message is null", "MESSAGE_CREATE", `null`},
		{"content is a number", "MESSAGE_CREATE", `{"id":"1","channel_id":"1","author":{"id":"2"},"content":5}`},
		{"guild create garbage", "GUILD_CREATE", `{"id":{"x":1},"channels":"no"}`},
		{"thread with a path parent", "THREAD_CREATE", `{"id":"` + discordtest.ChannelID + `","type":11,"parent_id":"../x"}`},
		{"member update garbage", "GUILD_MEMBER_UPDATE", `"x"`},
		{"unknown event", "SOMETHING_NEW", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake, r := startReady(t, nil)
			fake.Dispatch(tt.t, []byte(tt.d))
			id := fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "next", MentionBot: true})
			all := r.in.waitFor(t, ctx, "the valid message", func(g []channel.Envelope, _ int) bool { return find(g, id) >= 0 })
			got := all[find(all, id)]
			if got.Peer.ID != discordtest.ChannelID || got.ParentPeer != nil {
				t.Errorf("peer = %+v parent %+v", got.Peer, got.ParentPeer)
			}
			if n := len(all); n != 1 {
				t.Errorf("accepted %d envelopes, want only the valid one", n)
			}
			if n, d := len(fake.Identifies()), len(fake.Dials()); n != 1 || d != 1 {
				t.Errorf("identifies %d, dials %d: the connection was dropped", n, d)
			}
		})
	}
}

// TestBrokenFrames: a frame that is no gateway payload ends the
// connection; the bot resumes and loses nothing.
func TestBrokenFrames(t *testing.T) {
	for _, frame := range []string{`{{{`, `"just a string"`, `{"op":0,"s":"seven","t":"MESSAGE_CREATE","d":{}}`} {
		t.Run(frame, func(t *testing.T) {
			ctx := testCtx(t)
			fake, r := startReady(t, nil)
			fake.SendRaw(frame)
			if err := fake.WaitResumed(ctx, 1); err != nil {
				t.Fatal(err)
			}
			settle(t, fake, r)
		})
	}
}

// TestResumeURL: a RESUME dials READY's resume_gateway_url, and the main
// gateway when that one cannot be reached.
func TestResumeURL(t *testing.T) {
	tests := []struct {
		name   string
		broken bool
		want   []string
	}{
		{"resume url", false, []string{"/gateway", "/gateway-resume"}},
		{"resume url down", true, []string{"/gateway", "/gateway-resume", "/gateway"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake, r := startReady(t, nil)
			settle(t, fake, r)
			if tt.broken {
				fake.BreakResumeURL()
			}
			fake.Kick()
			if err := fake.WaitResumed(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, fake.Dials()); diff != "" {
				t.Errorf("dials (-want +got):\n%s", diff)
			}
			if n := len(fake.Identifies()); n != 1 {
				t.Errorf("identifies = %d, want 1", n)
			}
		})
	}
}
