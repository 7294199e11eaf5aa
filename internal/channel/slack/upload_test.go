package slack

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"talon/internal/channel"
	"talon/internal/channel/slack/slacktest"
)

func TestSendFile(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nimage")
	room := channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C0GENERAL"}}
	dm := channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "U0ALICE"}}
	tests := []struct {
		name     string
		to       channel.Target
		file     channel.File
		replyTo  string
		method   string
		fail     []slacktest.Failure
		wantErr  string
		tooLarge bool
		want     slacktest.Uploaded // Data, Name, MIME, Channel, ThreadTS, Comment
	}{
		{name: "image with caption in a room", to: room, file: channel.File{Name: "cat.png", MIME: "image/png", Data: png, Caption: "*a cat*", CaptionPlain: "a cat"},
			want: slacktest.Uploaded{Name: "cat.png", MIME: "image/png", Data: png, Channel: "C0GENERAL", Comment: "*a cat*"}},
		{name: "document to a dm goes to the dm's id, in a thread", to: dm, replyTo: "1777000001.000001",
			file: channel.File{Name: "r.pdf", Data: []byte("%PDF"), CaptionPlain: "report"},
			want: slacktest.Uploaded{Name: "r.pdf", MIME: "application/octet-stream", Data: []byte("%PDF"), Channel: "D0ALICE", ThreadTS: "1777000001.000001", Comment: "report"}},
		{name: "thread id wins over reply", to: channel.Target{Peer: room.Peer, ThreadID: "1777000002.000002"}, replyTo: "1777000001.000001",
			file: channel.File{Name: "a.txt", Data: []byte("a")},
			want: slacktest.Uploaded{Name: "a.txt", MIME: "application/octet-stream", Data: []byte("a"), Channel: "C0GENERAL", ThreadTS: "1777000002.000002"}},
		{name: "empty file", to: room, file: channel.File{Name: "a.txt"}, wantErr: "slack send file: the file is empty"},
		{name: "no name", to: room, file: channel.File{Data: png}, wantErr: "the file name must be 1 to 255 bytes"},
		{name: "bad target", to: channel.Target{Peer: channel.Peer{ID: "#general"}}, file: channel.File{Name: "a", Data: png}, wantErr: "is not a Slack channel or user id"},
		{name: "bad thread", to: room, replyTo: "yesterday", file: channel.File{Name: "a", Data: png}, wantErr: "is not a Slack ts"},
		{name: "unknown channel", to: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C0NOPE"}}, file: channel.File{Name: "a", Data: png},
			wantErr: "files.completeUploadExternal: channel_not_found"},
		{name: "upload url refused", to: room, file: channel.File{Name: "a", Data: png}, method: "files.getUploadURLExternal",
			fail: []slacktest.Failure{{Error: "missing_scope", Needed: "files:write"}}, wantErr: "needed scope: files:write"},
		{name: "rate limited completion is offered again", to: room, file: channel.File{Name: "a", Data: png}, method: "files.completeUploadExternal",
			fail: []slacktest.Failure{{Status: 429, RetryAfter: 2}},
			want: slacktest.Uploaded{Name: "a", MIME: "application/octet-stream", Data: png, Channel: "C0GENERAL"}},
		{name: "lost completion is unconfirmed", to: room, file: channel.File{Name: "a", Data: png}, method: "files.completeUploadExternal",
			fail: []slacktest.Failure{{DropResponse: true}}, wantErr: "unconfirmed, not resent",
			want: slacktest.Uploaded{Name: "a", MIME: "application/octet-stream", Data: png, Channel: "C0GENERAL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, ModeSocket)
			r.waitReady()
			r.says(slacktest.Message{Kind: "channel", Text: "hi"})
			r.envelopes(1)
			for _, f := range tt.fail {
				r.fake.Fail(tt.method, f)
			}
			sent, err := r.app.SendFile(testCtx(t), tt.to, tt.file, tt.replyTo)
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("SendFile error = %v, want %q", err, tt.wantErr)
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("SendFile: %v", err)
			}
			if errors.Is(err, channel.ErrTooLarge) != tt.tooLarge {
				t.Errorf("ErrTooLarge = %v, want %v", !tt.tooLarge, tt.tooLarge)
			}
			ups := r.fake.Uploads()
			if tt.want.Name == "" {
				if len(ups) != 0 {
					t.Errorf("uploads %+v, want none", ups)
				}
				return
			}
			if len(ups) != 1 {
				t.Fatalf("uploads %+v, want one", ups)
			}
			u := ups[0]
			if u.Name != tt.want.Name || u.MIME != tt.want.MIME || !bytes.Equal(u.Data, tt.want.Data) || u.Channel != tt.want.Channel ||
				u.ThreadTS != tt.want.ThreadTS || u.Comment != tt.want.Comment || u.Title != tt.want.Name {
				t.Errorf("uploaded %+v, want %+v", u, tt.want)
			}
			if err == nil && sent.MessageID != u.FileID {
				t.Errorf("sent %+v, want the file id %s", sent, u.FileID)
			}
		})
	}
}

func TestCheckFileRefusesOverTheLimit(t *testing.T) {
	room := channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C1"}}
	tests := []struct {
		size     int
		tooLarge bool
	}{{10, false}, {11, true}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			_, _, err := checkFile(room, channel.File{Name: "a", Data: make([]byte, tt.size)}, "", 10)
			if errors.Is(err, channel.ErrTooLarge) != tt.tooLarge || (err != nil) != tt.tooLarge {
				t.Errorf("checkFile(%d bytes) = %v, want too large %v", tt.size, err, tt.tooLarge)
			}
		})
	}
}
