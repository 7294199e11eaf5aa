package telegram

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

func TestSendPoll(t *testing.T) {
	yesNo := []string{"yes", "no"}
	tests := []struct {
		name      string
		target    string
		poll      channel.Poll
		want      []tgtest.SentPoll // MessageID ignored
		errMatch  string
		noRequest bool
	}{
		{
			name: "open until closed",
			poll: channel.Poll{Question: "Lunch?", Options: yesNo},
			want: []tgtest.SentPoll{{ChatID: "42", Question: "Lunch?", Options: yesNo, Anonymous: true}},
		},
		{
			name:   "multiple answers for a minute and a half, rounded up, in a topic",
			target: "-1001:topic:17",
			poll:   channel.Poll{Question: "Which?", Options: []string{"a", "b", "c"}, Multi: true, Duration: 89*time.Second + time.Millisecond},
			want: []tgtest.SentPoll{{ChatID: "-1001", ThreadID: 17, Question: "Which?", Options: []string{"a", "b", "c"},
				Multi: true, Anonymous: true, OpenPeriod: 90}},
		},
		{
			name:   "ten minutes in General",
			target: "-1001:topic:1",
			poll:   channel.Poll{Question: "Q", Options: yesNo, Duration: 10 * time.Minute},
			want:   []tgtest.SentPoll{{ChatID: "-1001", Question: "Q", Options: yesNo, Anonymous: true, OpenPeriod: 600}},
		},
		{
			name: "longer than ten minutes", poll: channel.Poll{Question: "Q", Options: yesNo, Duration: 24 * time.Hour},
			errMatch: "duration 24h0m0s is outside Telegram's open_period of 5 s to 10 min", noRequest: true,
		},
		{
			name: "shorter than five seconds", poll: channel.Poll{Question: "Q", Options: yesNo, Duration: 4 * time.Second},
			errMatch: "outside Telegram's open_period", noRequest: true,
		},
		{
			name: "negative", poll: channel.Poll{Question: "Q", Options: yesNo, Duration: -time.Second},
			errMatch: "is negative", noRequest: true,
		},
		{
			name: "question too long", poll: channel.Poll{Question: strings.Repeat("😀", 151), Options: yesNo},
			errMatch: "question must be 1-300 characters, not 302", noRequest: true,
		},
		{name: "no question", poll: channel.Poll{Options: yesNo}, errMatch: "question must be 1-300", noRequest: true},
		{
			name: "one option", poll: channel.Poll{Question: "Q", Options: []string{"only"}},
			errMatch: "a poll needs 2-12 options, not 1", noRequest: true,
		},
		{
			name: "thirteen options", poll: channel.Poll{Question: "Q", Options: strings.Split("abcdefghijklm", "")},
			errMatch: "not 13", noRequest: true,
		},
		{
			name: "option too long", poll: channel.Poll{Question: "Q", Options: []string{"a", strings.Repeat("b", 101)}},
			errMatch: "option 2 must be 1-100 characters, not 101", noRequest: true,
		},
		{
			name: "empty option", poll: channel.Poll{Question: "Q", Options: []string{"", "b"}},
			errMatch: "option 1 must be 1-100", noRequest: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, nil)
			peer := "42"
			if tt.target != "" {
				peer = tt.target
			}
			sent, err := b.SendPoll(context.Background(), to(peer), tt.poll)
			if tt.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMatch) {
					t.Fatalf("SendPoll = %v, want %q", err, tt.errMatch)
				}
			} else if err != nil {
				t.Fatalf("SendPoll: %v", err)
			}
			got := s.Polls()
			if err == nil && (len(got) != 1 || sent.MessageID != strconv.FormatInt(got[0].MessageID, 10)) {
				t.Fatalf("SendPoll returned %q; the fake has %+v", sent.MessageID, got)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(tgtest.SentPoll{}, "MessageID")); diff != "" {
				t.Fatalf("polls (-want +got):\n%s", diff)
			}
			if tt.noRequest && s.Requests() != 0 {
				t.Fatalf("asked Telegram %d times", s.Requests())
			}
		})
	}
}

func TestSendPollRefused(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	s.Fail("sendPoll", tgtest.Failure{Code: 400, Description: "Bad Request: not enough rights to send polls to the chat"})
	_, err := b.SendPoll(context.Background(), to("42"), channel.Poll{Question: "Q", Options: []string{"a", "b"}})
	if err == nil || !strings.Contains(err.Error(), "telegram: poll: telegram sendPoll: 400 Bad Request: not enough rights") {
		t.Fatalf("SendPoll = %v", err)
	}
}
