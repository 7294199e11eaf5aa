package discord

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

func TestSendPoll(t *testing.T) {
	tests := []struct {
		name string
		poll channel.Poll
		want *discordtest.Poll // nil: refused before any request
	}{
		{
			name: "default duration",
			poll: channel.Poll{Question: "Lunch?", Options: []string{"pizza", "ramen"}},
			want: &discordtest.Poll{Question: "Lunch?", Answers: []string{"pizza", "ramen"}},
		},
		{
			name: "90 minutes round up to 2 hours, several answers",
			poll: channel.Poll{Question: "When?", Options: []string{"1", "2", "3"}, Duration: 90 * time.Minute, Multi: true},
			want: &discordtest.Poll{Question: "When?", Answers: []string{"1", "2", "3"}, Duration: 2, Multi: true},
		},
		{
			name: "32 days",
			poll: channel.Poll{Question: "q", Options: []string{"a", "b"}, Duration: 768 * time.Hour},
			want: &discordtest.Poll{Question: "q", Answers: []string{"a", "b"}, Duration: 768},
		},
		{name: "over 32 days", poll: channel.Poll{Question: "q", Options: []string{"a", "b"}, Duration: 768*time.Hour + time.Second}},
		{name: "negative duration", poll: channel.Poll{Question: "q", Options: []string{"a", "b"}, Duration: -time.Hour}},
		{name: "empty question", poll: channel.Poll{Question: " ", Options: []string{"a", "b"}}},
		{name: "question over 300", poll: channel.Poll{Question: strings.Repeat("é", 301), Options: []string{"a", "b"}}},
		{name: "answer over 55", poll: channel.Poll{Question: "q", Options: []string{"a", strings.Repeat("b", 56)}}},
		{name: "empty answer", poll: channel.Poll{Question: "q", Options: []string{"a", ""}}},
		{name: "11 answers", poll: channel.Poll{Question: "q", Options: strings.Split("a b c d e f g h i j k", " ")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			got, err := b.SendPoll(testCtx(t), room(discordtest.ChannelID), tt.poll)
			if tt.want == nil {
				if err == nil {
					t.Fatal("SendPoll accepted it")
				}
				if r := fake.Requests(); len(r) != 0 {
					t.Errorf("requests made: %v", r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sent := fake.Sent()
			if len(sent) != 1 || sent[0].ID != got.MessageID || sent[0].ChannelID != discordtest.ChannelID {
				t.Fatalf("sent %+v, answer %+v", sent, got)
			}
			if diff := cmp.Diff(tt.want, sent[0].Poll); diff != "" {
				t.Errorf("poll (-want +got):\n%s", diff)
			}
		})
	}
}
