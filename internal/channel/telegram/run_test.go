package telegram

import (
	"errors"
	"strings"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

func TestRunRefusedToken(t *testing.T) {
	tests := []struct {
		name string
		mod  func(s *tgtest.Server, o *Options)
	}{
		{"unknown token", func(s *tgtest.Server, o *Options) { o.Token = "7000000001:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB" }},
		{"revoked token", func(s *tgtest.Server, o *Options) { s.RevokeToken() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, func(o *Options) { tt.mod(s, o) })
			err := b.Run(testCtx(t), newInbox().accept)
			if !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("Run = %v, want ErrUnauthorized", err)
			}
			st := b.Status()
			if len(st.Issues) != 1 || st.Issues[0].Kind != "auth" || st.Issues[0].Fix == "" {
				t.Fatalf("issues = %+v", st.Issues)
			}
			for _, text := range []string{err.Error(), st.LastError, st.Issues[0].Message} {
				if strings.Contains(text, s.Token) || strings.Contains(text, "BBBBBBBBBB") {
					t.Fatalf("the token leaked: %q", text)
				}
			}
			if st.Connected {
				t.Fatal("connected with a refused token")
			}
		})
	}
}

func TestRunEndsOnCancel(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	stop := run(t, b, newInbox().accept)
	if err := s.WaitIdle(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if b.Status().Connected {
		t.Fatal("still connected after Run returned")
	}
	// Run is callable again once it returned.
	stop = run(t, b, newInbox().accept)
	if err := s.WaitIdle(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRunTwiceAtOnce(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	run(t, b, newInbox().accept)
	if err := s.WaitIdle(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Run(testCtx(t), newInbox().accept); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Run = %v", err)
	}
}

func TestPollRecovers(t *testing.T) {
	tests := []struct {
		name    string
		failure tgtest.Failure
		issue   string // an issue shown while failing, "" for none
		stall   time.Duration
	}{
		{"409 conflict", tgtest.Failure{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}, issuePoll, 0},
		{"502 from a proxy", tgtest.Failure{Code: 502, Description: "Bad Gateway"}, "", 0},
		{"stalled poll", tgtest.Failure{Stall: true}, "", 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, nil)
			if tt.stall > 0 {
				b.timing.stall = tt.stall
			}
			s.FailPolls(tt.failure, tt.failure)
			in := newInbox()
			run(t, b, in.accept)
			ctx := testCtx(t)
			st := waitStatus(ctx, t, b, func(st channel.Status) bool { return st.ReconnectAttempts >= 1 })
			if st.LastError == "" {
				t.Fatalf("no error shown: %+v", st)
			}
			if tt.issue != "" {
				if len(st.Issues) != 1 || !strings.HasPrefix(st.Issues[0].Message, tt.issue) || st.Issues[0].Kind != "runtime" {
					t.Fatalf("issues = %+v", st.Issues)
				}
			}
			s.UserSays(tgtest.Say{From: ann, Text: "still there?"})
			in.wait(ctx, t, 1)
			st = waitStatus(ctx, t, b, func(st channel.Status) bool { return st.Connected })
			if len(st.Issues) != 0 || st.LastError != "" {
				t.Fatalf("status after recovery = %+v", st)
			}
		})
	}
}

func TestTwoPollersConflict(t *testing.T) {
	s := tgtest.Start(t)
	one, two := newBot(t, s, nil), newBot(t, s, nil)
	run(t, one, newInbox().accept)
	run(t, two, newInbox().accept)
	ctx := testCtx(t)
	if err := s.Wait(ctx, func() bool { return s.Conflicts() > 0 }); err != nil {
		t.Fatal(err)
	}
	for {
		for _, b := range []*Bot{one, two} {
			for _, is := range b.Status().Issues {
				if strings.HasPrefix(is.Message, issuePoll) {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no poller reported the conflict: %+v / %+v", one.Status(), two.Status())
		case <-time.After(time.Millisecond):
		}
	}
}

func TestPollHonoursRetryAfter(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	waits := recordWaits(b)
	s.FailPolls(tgtest.Failure{Code: 429, Description: "Too Many Requests: retry after 3", RetryAfter: 3})
	in := newInbox()
	run(t, b, in.accept)
	s.UserSays(tgtest.Say{From: ann, Text: "x"})
	in.wait(testCtx(t), t, 1)
	if got := waits(); len(got) != 1 || got[0] != 3*time.Second {
		t.Fatalf("waits = %v, want Telegram's retry_after 3s", got)
	}
}

func TestUnusualUpdatesAreSkipped(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	s.Inject(map[string]any{"message": map[string]any{
		"message_id": 5, "date": 1700000000, "from": ann,
		"chat":               map[string]any{"id": -4001, "type": "group", "title": "Old"},
		"migrate_to_chat_id": int64(-1009999),
	}})
	s.Inject(map[string]any{"edited_message": map[string]any{"message_id": 1, "date": 1, "chat": map[string]any{"id": 42, "type": "private"}, "text": "x"}})
	s.Inject(map[string]any{"message": map[string]any{"message_id": 6, "date": 1, "text": 5, "chat": map[string]any{"id": 42, "type": "private"}}})
	s.UserSays(tgtest.Say{From: ann, Text: "after"})
	in := newInbox()
	run(t, b, in.accept)
	got := in.wait(testCtx(t), t, 1)
	if got[0].Text != "after" {
		t.Fatalf("got %+v", got)
	}
	st := b.Status()
	if len(st.Issues) != 1 || !strings.Contains(st.Issues[0].Message, "-4001") || !strings.Contains(st.Issues[0].Fix, "-1009999") {
		t.Fatalf("issues = %+v", st.Issues)
	}
}
