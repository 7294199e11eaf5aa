package telegram

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
	"talon/internal/tools/tts/ttstest"
)

var (
	pngBytes  = []byte("\x89PNG\r\n\x1a\n fake pixels")
	jpegBytes = []byte("\xff\xd8\xff\xe0 fake pixels")
)

func TestSendFile(t *testing.T) {
	pdf := []byte("%PDF-1.7 body")
	opus, wav := ttstest.OpusLasting(50), ttstest.WAV()
	tests := []struct {
		name      string
		setup     func(s *tgtest.Server)
		target    string
		file      channel.File
		replyTo   func(s *tgtest.Server) string
		want      []tgtest.Upload // MessageID ignored
		errIs     error
		errMatch  string
		noRequest bool
	}{
		{
			name: "png is a photo with an HTML caption",
			file: channel.File{Name: "chart.png", MIME: "image/png", Data: pngBytes, Caption: "<b>up</b>", CaptionPlain: "up"},
			want: []tgtest.Upload{{Method: "sendPhoto", ChatID: "42", Name: "chart.png", MIME: "image/png", Data: pngBytes, Caption: "<b>up</b>", ParseMode: "HTML"}},
		},
		{
			name:    "jpeg in a topic, replying",
			target:  "-1001:topic:17",
			file:    channel.File{Name: "p.jpg", MIME: "image/jpeg", Data: jpegBytes},
			replyTo: func(s *tgtest.Server) string { return said(s, -1001, 17) },
			want:    []tgtest.Upload{{Method: "sendPhoto", ChatID: "-1001", ThreadID: 17, Name: "p.jpg", MIME: "image/jpeg", Data: jpegBytes, ReplyTo: 1001}},
		},
		{
			name: "pdf is a document",
			file: channel.File{Name: `q"uote.pdf`, MIME: "application/pdf", Data: pdf, CaptionPlain: "plain only"},
			want: []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: `q"uote.pdf`, MIME: "application/pdf", Data: pdf, Caption: "plain only"}},
		},
		{
			name: "no type is octet-stream",
			file: channel.File{Name: "blob", Data: pdf},
			want: []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "blob", MIME: "application/octet-stream", Data: pdf}},
		},
		{
			name: "a photo Telegram cannot process goes as a document",
			file: channel.File{Name: "fake.png", MIME: "image/png", Data: pdf, Caption: "c", CaptionPlain: "c"},
			want: []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "fake.png", MIME: "image/png", Data: pdf, Caption: "c", ParseMode: "HTML"}},
		},
		{
			name: "a photo over 10 MB is a document",
			file: channel.File{Name: "huge.png", MIME: "image/png", Data: bigPNG()},
			want: []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "huge.png", MIME: "image/png", Data: bigPNG()}},
		},
		{
			name: "a caption Telegram cannot parse goes as plain text",
			file: channel.File{Name: "a.pdf", MIME: "application/pdf", Data: pdf, Caption: "<b>open", CaptionPlain: "open"},
			want: []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "a.pdf", MIME: "application/pdf", Data: pdf, Caption: "open"}},
		},
		{
			name:    "reply to a vanished message is sent without it",
			file:    channel.File{Name: "a.pdf", Data: pdf},
			replyTo: func(*tgtest.Server) string { return "999" },
			want:    []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "a.pdf", MIME: "application/octet-stream", Data: pdf}},
		},
		{
			name:   "ogg opus asked as a voice note is one, in a topic, replying",
			target: "-1001:topic:17", replyTo: func(s *tgtest.Server) string { return said(s, -1001, 17) },
			file: channel.File{Name: "speech.opus", MIME: "audio/ogg", Data: opus, Voice: true, Caption: "<i>hi</i>", CaptionPlain: "hi"},
			want: []tgtest.Upload{{Method: "sendVoice", ChatID: "-1001", ThreadID: 17, Name: "speech.opus", MIME: "audio/ogg", Data: opus,
				Caption: "<i>hi</i>", ParseMode: "HTML", ReplyTo: 1001, Voice: true}},
		},
		{
			name: "a voice note of generic type is told by its name",
			file: channel.File{Name: "note.ogg", MIME: "application/octet-stream", Data: opus, Voice: true},
			want: []tgtest.Upload{{Method: "sendVoice", ChatID: "42", Name: "note.ogg", MIME: "application/octet-stream", Data: opus, Voice: true}},
		},
		{
			name: "ogg opus not asked as a voice note is a document",
			file: channel.File{Name: "speech.opus", MIME: "audio/ogg", Data: opus},
			want: []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "speech.opus", MIME: "audio/ogg", Data: opus}},
		},
		{
			name: "wav asked as a voice note is a document: Telegram plays none",
			file: channel.File{Name: "speech.wav", MIME: "audio/wav", Data: wav, Voice: true},
			want: []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "speech.wav", MIME: "audio/wav", Data: wav}},
		},
		{
			name: "a recipient who refuses voice notes gets a document",
			setup: func(s *tgtest.Server) {
				s.Fail("sendVoice", tgtest.Failure{Code: 400, Description: "Bad Request: VOICE_MESSAGES_FORBIDDEN"})
			},
			file: channel.File{Name: "speech.opus", MIME: "audio/ogg", Data: opus, Voice: true, CaptionPlain: "c"},
			want: []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "speech.opus", MIME: "audio/ogg", Data: opus, Caption: "c"}},
		},
		{
			name: "another refusal of a voice note is the error",
			setup: func(s *tgtest.Server) {
				s.Fail("sendVoice", tgtest.Failure{Code: 403, Description: "Forbidden: bot was blocked by the user"})
			},
			file:     channel.File{Name: "speech.opus", MIME: "audio/ogg", Data: opus, Voice: true},
			errMatch: "bot was blocked by the user",
		},
		{
			name:  "answer lost is unconfirmed",
			setup: func(s *tgtest.Server) { s.Fail("sendDocument", tgtest.Failure{Drop: true}) },
			file:  channel.File{Name: "a.pdf", Data: pdf},
			want:  []tgtest.Upload{{Method: "sendDocument", ChatID: "42", Name: "a.pdf", MIME: "application/octet-stream", Data: pdf}},
			errIs: channel.ErrUnconfirmed, errMatch: "no answer came",
		},
		{
			name: "over 50 MB", file: channel.File{Name: "a.bin", Data: make([]byte, 50<<20+1)},
			errIs: channel.ErrTooLarge, errMatch: "at most 52428800", noRequest: true,
		},
		{name: "empty", file: channel.File{Name: "a.bin"}, errMatch: "the file is empty", noRequest: true},
		{name: "no name", file: channel.File{Data: pdf}, errMatch: "file name must be 1-255 bytes", noRequest: true},
		{name: "a line break in the name", file: channel.File{Name: "a\r\nX-Evil: 1", Data: pdf}, errMatch: "control character", noRequest: true},
		{name: "a type that is none", file: channel.File{Name: "a", MIME: "pdf\r\nX: y", Data: pdf}, errMatch: "is not a media type", noRequest: true},
		{
			name: "caption too long", file: channel.File{Name: "a", Data: pdf, CaptionPlain: strings.Repeat("é", 1025)},
			errMatch: "caption is longer than Telegram's 1024", noRequest: true,
		},
		{name: "bad target", target: "nowhere", file: channel.File{Name: "a", Data: pdf}, errMatch: "is not a chat id", noRequest: true},
		{
			name: "bad reply id", file: channel.File{Name: "a", Data: pdf}, replyTo: func(*tgtest.Server) string { return "x" },
			errMatch: `reply id "x" is not a message id`, noRequest: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, nil)
			if tt.setup != nil {
				tt.setup(s)
			}
			peer, reply := "42", ""
			if tt.target != "" {
				peer = tt.target
			}
			if tt.replyTo != nil {
				reply = tt.replyTo(s)
			}
			before := s.Requests()
			sent, err := b.SendFile(context.Background(), to(peer), tt.file, reply)
			if tt.errMatch != "" {
				if err == nil || tt.errIs != nil && !errors.Is(err, tt.errIs) || !strings.Contains(err.Error(), tt.errMatch) {
					t.Fatalf("SendFile = %v, want %v %q", err, tt.errIs, tt.errMatch)
				}
			} else if err != nil {
				t.Fatalf("SendFile: %v", err)
			}
			got := s.Uploads()
			if err == nil && (len(got) == 0 || sent.MessageID != strconv.FormatInt(got[len(got)-1].MessageID, 10)) {
				t.Fatalf("SendFile returned %q; the fake has %+v", sent.MessageID, got)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(bytes.Equal), cmpopts.IgnoreFields(tgtest.Upload{}, "MessageID")); diff != "" {
				t.Fatalf("uploads (-want +got):\n%s", diff)
			}
			if asked := s.Requests() > before; asked == tt.noRequest {
				t.Fatalf("asked Telegram: %v, want %v", asked, !tt.noRequest)
			}
		})
	}
}

// said makes Ann say something in chat (in topic, when not 0) and
// returns its id.
func said(s *tgtest.Server, chat, topic int64) string {
	m, _ := s.UserSays(tgtest.Say{From: ann, Chat: chat, Topic: topic, Text: "q"})
	return strconv.FormatInt(m.MessageID, 10)
}

// bigPNG is a PNG over sendPhoto's 10 MB.
func bigPNG() []byte {
	return append(bytes.Clone(pngBytes), make([]byte, 10<<20)...)
}
