package telegram

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

// saidMedia is what the adapter reads from a message the fake built.
func saidMedia(t *testing.T, m tgtest.Message) []channel.Media {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var msg message
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatal(err)
	}
	return mediaOf(&msg)
}

func TestPollingTakesMedia(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	in := newInbox()
	run(t, b, in.accept)
	s.UserSays(tgtest.Say{From: ann, File: &tgtest.Attachment{Kind: "voice", MIME: "audio/ogg", Data: []byte("OggS voice")}})
	s.UserSays(tgtest.Say{From: ann, Chat: -1001, Text: "see @talon_test_bot",
		File: &tgtest.Attachment{Kind: "document", Name: "a.txt", MIME: "text/plain", Data: []byte("hello")}})
	got := in.wait(testCtx(t), t, 2)
	if got[0].Text != "" || len(got[0].Media) != 1 || got[0].Media[0].Kind != "voice" || got[0].Media[0].Size != 10 {
		t.Fatalf("voice envelope = %+v", got[0])
	}
	m := got[1].Media
	if got[1].Text != "see @talon_test_bot" || !got[1].Mentioned || len(m) != 1 ||
		m[0] != (channel.Media{Ref: m[0].Ref, Name: "a.txt", MIME: "text/plain", Size: 5, Kind: "document"}) {
		t.Fatalf("document envelope = %+v", got[1])
	}
	data, err := b.Fetch(testCtx(t), m[0], 100)
	if err != nil || string(data) != "hello" {
		t.Fatalf("Fetch = %q, %v", data, err)
	}
}

func TestFetch(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1000)
	jpeg := append([]byte("\xff\xd8\xff\xe0"), big...)
	tests := []struct {
		name      string
		file      tgtest.Attachment
		max       int64
		media     func(m channel.Media) channel.Media // changes what the envelope said
		want      []byte
		errIs     error
		errMatch  string
		noRequest bool // refused before asking Telegram
	}{
		{name: "document", file: tgtest.Attachment{Kind: "document", Name: "b.bin", Data: big}, max: 1000, want: big},
		{name: "photo is the largest size", file: tgtest.Attachment{Kind: "photo", Data: jpeg}, max: 2000, want: jpeg},
		{name: "sticker", file: tgtest.Attachment{Kind: "sticker", Data: []byte("RIFFwebp")}, max: 8, want: []byte("RIFFwebp")},
		{
			name: "announced over the limit", file: tgtest.Attachment{Kind: "document", Name: "b.bin", Data: big}, max: 999,
			errIs: channel.ErrTooLarge, errMatch: "announced 1000 bytes", noRequest: true,
		},
		{
			name: "getFile says over the limit", file: tgtest.Attachment{Kind: "document", Name: "b.bin", Data: big}, max: 999,
			media: func(m channel.Media) channel.Media { m.Size = 0; return m },
			errIs: channel.ErrTooLarge, errMatch: "getFile says 1000 bytes",
		},
		{
			name: "Content-Length over the limit", file: tgtest.Attachment{Kind: "document", Name: "b.bin", Data: big, Size: 10}, max: 999,
			errIs: channel.ErrTooLarge, errMatch: "the server sends 1000 bytes",
		},
		{
			name: "over the limit while reading", file: tgtest.Attachment{Kind: "audio", Name: "s.mp3", Data: big, Size: 10, Chunked: true}, max: 999,
			errIs: channel.ErrTooLarge, errMatch: "more than 999 bytes",
		},
		{
			name: "exactly the limit while reading", file: tgtest.Attachment{Kind: "audio", Name: "s.mp3", Data: big, Size: 10, Chunked: true}, max: 1000,
			want: big,
		},
		{
			name: "over the Bot API's 20 MB", file: tgtest.Attachment{Kind: "video", Data: make([]byte, 20<<20+1), Size: 10}, max: 100 << 20,
			errIs: channel.ErrTooLarge, errMatch: "file is too big",
		},
		{
			name: "unknown file id", file: tgtest.Attachment{Kind: "document", Name: "b.bin", Data: big}, max: 1000,
			media:    func(m channel.Media) channel.Media { m.Ref = "gone"; return m },
			errMatch: "invalid file_id",
		},
		{
			name: "no file id", file: tgtest.Attachment{Kind: "document", Name: "b.bin", Data: big}, max: 1000,
			media:    func(m channel.Media) channel.Media { m.Ref = ""; return m },
			errMatch: "without a file id", noRequest: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, nil)
			said, _ := s.UserSays(tgtest.Say{From: ann, File: &tt.file})
			ms := saidMedia(t, said)
			if len(ms) != 1 {
				t.Fatalf("media = %+v", ms)
			}
			m := ms[0]
			if tt.media != nil {
				m = tt.media(m)
			}
			before := s.Requests()
			got, err := b.Fetch(testCtx(t), m, tt.max)
			if tt.errMatch != "" {
				if err == nil || tt.errIs != nil && !errors.Is(err, tt.errIs) || !strings.Contains(err.Error(), tt.errMatch) {
					t.Fatalf("Fetch = %v, want %v %q", err, tt.errIs, tt.errMatch)
				}
				if strings.Contains(err.Error(), s.Token) {
					t.Fatalf("the error shows the token: %v", err)
				}
			} else if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("Fetch = %d bytes, %v; want %d bytes", len(got), err, len(tt.want))
			}
			if asked := s.Requests() > before; asked == tt.noRequest {
				t.Fatalf("asked Telegram: %v, want %v", asked, !tt.noRequest)
			}
		})
	}
}

func TestFileURL(t *testing.T) {
	c := client{files: "https://api.test/file/bot1:x/"}
	tests := []struct {
		path, want, err string
	}{
		{path: "documents/file_1.pdf", want: "https://api.test/file/bot1:x/documents/file_1.pdf"},
		{path: "photos/a b?.jpg", want: "https://api.test/file/bot1:x/photos/a%20b%3F.jpg"},
		{path: "", err: "no file_path"},
		{path: "../bot2:y/getMe", err: "not a relative path"},
		{path: "/etc/passwd", err: "not a relative path"},
		{path: "a//b", err: "not a relative path"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := c.fileURL(tt.path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("fileURL(%q) = %q, %v; want error %q", tt.path, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("fileURL(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}
