package discord

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

func TestSendFile(t *testing.T) {
	mentions := &discordtest.AllowedMentions{Parse: []string{"users"}, RepliedUser: true}
	tests := []struct {
		name    string
		target  channel.Target
		file    channel.File
		replyTo bool
		want    discordtest.Sent // ID and ChannelID filled in
	}{
		{
			name:    "photo with a caption, replying",
			target:  room(discordtest.ChannelID),
			file:    channel.File{Name: "cat.png", MIME: "image/png", Data: []byte("\x89PNG"), Caption: "**the cat**", CaptionPlain: "the cat"},
			replyTo: true,
			want: discordtest.Sent{Content: "**the cat**", Flags: 4, AllowedMentions: mentions,
				Files: []discordtest.File{{Name: "cat.png", MIME: "image/png", Data: []byte("\x89PNG")}}},
		},
		{
			name:   "document without MIME or caption, to a user",
			target: dm(discordtest.OtherUserID),
			file:   channel.File{Name: `odd "name" é.bin`, Data: []byte{0, 1, 2}},
			want: discordtest.Sent{Flags: 4, AllowedMentions: mentions,
				Files: []discordtest.File{{Name: `odd "name" é.bin`, MIME: "application/octet-stream", Data: []byte{0, 1, 2}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			replyTo := ""
			if tt.replyTo {
				replyTo = fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "show me"})
				no := false
				tt.want.ReplyTo, tt.want.FailIfNotExists = replyTo, &no
			}
			got, err := b.SendFile(ctx, tt.target, tt.file, replyTo)
			if err != nil {
				t.Fatal(err)
			}
			sent := fake.Sent()
			if len(sent) != 1 {
				t.Fatalf("sent %d messages", len(sent))
			}
			tt.want.ID, tt.want.ChannelID = got.MessageID, sent[0].ChannelID
			if diff := cmp.Diff(tt.want, sent[0]); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if tt.target.Peer.Kind == channel.Room && sent[0].ChannelID != tt.target.Peer.ID {
				t.Errorf("posted into %s", sent[0].ChannelID)
			}
		})
	}
}

func TestSendFileRefused(t *testing.T) {
	ok := channel.File{Name: "a.txt", MIME: "text/plain", Data: []byte("a")}
	with := func(edit func(f *channel.File)) channel.File {
		f := ok
		edit(&f)
		return f
	}
	tests := []struct {
		name     string
		file     channel.File
		replyTo  string
		limit    int64 // the fake's upload limit, when not Discord's default
		fail     discordtest.SendFailure
		tooLarge bool
		unknown  bool // ErrUnconfirmed
		request  bool // a post reached the fake
	}{
		{name: "over 25 MB", file: with(func(f *channel.File) { f.Data = make([]byte, MaxUpload+1) }), tooLarge: true},
		{name: "over the server's limit", file: with(func(f *channel.File) { f.Data = bytes.Repeat([]byte("x"), 2000) }), limit: 1000, tooLarge: true, request: true},
		{name: "no name", file: with(func(f *channel.File) { f.Name = "" })},
		{name: "name with a slash", file: with(func(f *channel.File) { f.Name = "../etc/passwd" })},
		{name: "name with a newline", file: with(func(f *channel.File) { f.Name = "a\r\nContent-Type: x" })},
		{name: "name too long", file: with(func(f *channel.File) { f.Name = strings.Repeat("n", 300) })},
		{name: "caption too long", file: with(func(f *channel.File) { f.Caption = strings.Repeat("é", 2001) })},
		{name: "MIME not a media type", file: with(func(f *channel.File) { f.MIME = "text/plain; \r\nx" })},
		{name: "reply id not a snowflake", file: ok, replyTo: "../1"},
		{name: "missing permissions", file: ok, fail: discordtest.Forbidden, request: true},
		{name: "answer lost", file: ok, fail: discordtest.LoseAnswer, unknown: true, request: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			if tt.limit > 0 {
				fake.SetUploadLimit(tt.limit)
			}
			if tt.fail != 0 {
				fake.FailNextSend(tt.fail)
			}
			b := newBot(t, fake, nil)
			_, err := b.SendFile(testCtx(t), room(discordtest.ChannelID), tt.file, tt.replyTo)
			if err == nil {
				t.Fatal("SendFile succeeded")
			}
			if errors.Is(err, channel.ErrTooLarge) != tt.tooLarge || errors.Is(err, channel.ErrUnconfirmed) != tt.unknown {
				t.Errorf("err = %v", err)
			}
			if got := len(fake.Requests()) > 0; got != tt.request {
				t.Errorf("requests %v", fake.Requests())
			}
			if n := len(fake.Sent()); tt.unknown && n != 1 || !tt.unknown && n != 0 {
				t.Errorf("posted %d messages", n)
			}
		})
	}
}
