package discord

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

// TestMediaEnvelope: attachments become the envelope's media with kind,
// name, MIME and size; a message with a file and no text is accepted.
func TestMediaEnvelope(t *testing.T) {
	ctx := testCtx(t)
	fake, r := startReady(t, nil)
	tests := []struct {
		name string
		say  discordtest.Say
		text string
		want []channel.Media
	}{
		{
			name: "photo without text",
			say:  discordtest.Say{Files: []discordtest.File{{Name: "cat.png", MIME: "image/png", Data: []byte("png bytes")}}},
			want: []channel.Media{{Name: "cat.png", MIME: "image/png", Size: 9, Kind: "image"}},
		},
		{
			name: "document and video with a caption, in a channel",
			say: discordtest.Say{ChannelID: discordtest.ChannelID, Text: "look", Files: []discordtest.File{
				{Name: "report final.pdf", MIME: "application/pdf", Data: []byte("%PDF")},
				{Name: "clip.mp4", MIME: "video/mp4", Data: []byte("mp4")},
			}},
			text: "look",
			want: []channel.Media{
				{Name: "report final.pdf", MIME: "application/pdf", Size: 4, Kind: "document"},
				{Name: "clip.mp4", MIME: "video/mp4", Size: 3, Kind: "video"},
			},
		},
		{
			name: "voice message",
			say:  discordtest.Say{Voice: true, Files: []discordtest.File{{Name: "voice-message.ogg", MIME: "audio/ogg", Data: []byte("ogg")}}},
			want: []channel.Media{{Name: "voice-message.ogg", MIME: "audio/ogg", Size: 3, Kind: "voice"}},
		},
		{
			name: "audio file, no MIME",
			say: discordtest.Say{Files: []discordtest.File{
				{Name: "song.mp3", MIME: "audio/mpeg", Data: []byte("id3")},
				{Name: "blob", Data: []byte("?")},
			}},
			want: []channel.Media{{Name: "song.mp3", MIME: "audio/mpeg", Size: 3, Kind: "audio"}, {Name: "blob", Size: 1, Kind: "document"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fake.UserSays(tt.say)
			got := r.in.wait(t, ctx, id)
			if got.Text != tt.text {
				t.Errorf("text = %q, want %q", got.Text, tt.text)
			}
			if diff := cmp.Diff(tt.want, got.Media, cmpopts.IgnoreFields(channel.Media{}, "Ref")); diff != "" {
				t.Errorf("media (-want +got):\n%s", diff)
			}
			for i, m := range got.Media {
				data, err := r.bot.Fetch(ctx, m, 1<<20)
				if err != nil {
					t.Fatalf("fetching media %d: %v", i, err)
				}
				if !bytes.Equal(data, tt.say.Files[i].Data) {
					t.Errorf("media %d fetched %q", i, data)
				}
			}
		})
	}
}

func TestMediaOfDropsBadAttachments(t *testing.T) {
	m := &message{Attachments: []attachment{
		{Filename: "a", URL: "file:///etc/passwd"},
		{Filename: "b", URL: "https://u:p@cdn.example/x"},
		{Filename: strings.Repeat("n", 2000), URL: "https://cdn.discordapp.com/attachments/1/2/n", Size: -5},
	}}
	for range 20 {
		m.Attachments = append(m.Attachments, attachment{Filename: "x", URL: "https://cdn.discordapp.com/attachments/1/3/x"})
	}
	got := mediaOf(m)
	if len(got) != maxAttachments {
		t.Fatalf("%d media, want %d", len(got), maxAttachments)
	}
	if len(got[0].Name) != maxMediaText || got[0].Size != 0 {
		t.Errorf("first media: name of %d bytes, size %d", len(got[0].Name), got[0].Size)
	}
}

// TestFetch: the limit is kept whether the size is announced, sent as
// Content-Length or only counted; no token goes to the file host; a
// reference that is not https (or the apiUrl's host) is refused.
func TestFetch(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 100)
	tests := []struct {
		name    string
		file    discordtest.File
		edit    func(m *channel.Media) // what the stored reference says
		limit   int64
		want    []byte
		tooBig  bool
		fetched bool // the CDN was asked
	}{
		{name: "ok", file: discordtest.File{Name: "a.txt", MIME: "text/plain", Data: big}, limit: 100, want: big, fetched: true},
		{name: "announced over the limit", file: discordtest.File{Name: "a.txt", Data: big}, limit: 99, tooBig: true},
		{name: "size unknown, Content-Length over the limit", file: discordtest.File{Name: "a.txt", Data: big},
			edit: func(m *channel.Media) { m.Size = 0 }, limit: 99, tooBig: true, fetched: true},
		{name: "announced small, counted over the limit", file: discordtest.File{Name: "a.txt", Data: big, Announce: 10},
			limit: 50, tooBig: true, fetched: true},
		{name: "not https, not the api host", file: discordtest.File{Name: "a.txt", Data: big},
			edit: func(m *channel.Media) { m.Ref = strings.Replace(m.Ref, "127.0.0.1", "localhost", 1) }, limit: 100},
		{name: "forged signature", file: discordtest.File{Name: "a.txt", Data: big},
			edit: func(m *channel.Media) { m.Ref = strings.Replace(m.Ref, "hm=", "hm=0", 1) }, limit: 100, fetched: true},
		{name: "no limit", file: discordtest.File{Name: "a.txt", Data: big}, limit: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake, r := startReady(t, nil)
			e := r.in.wait(t, ctx, fake.UserSays(discordtest.Say{Files: []discordtest.File{tt.file}}))
			if len(e.Media) != 1 {
				t.Fatalf("media %+v", e.Media)
			}
			m := e.Media[0]
			if tt.edit != nil {
				tt.edit(&m)
			}
			got, err := r.bot.Fetch(ctx, m, tt.limit)
			switch {
			case tt.want != nil && err != nil:
				t.Fatal(err)
			case tt.want == nil && err == nil:
				t.Fatalf("fetched %d bytes, want an error", len(got))
			case errors.Is(err, channel.ErrTooLarge) != tt.tooBig:
				t.Errorf("err = %v, too large: %v", err, tt.tooBig)
			case !bytes.Equal(got, tt.want):
				t.Errorf("fetched %q", got)
			}
			if err != nil && strings.Contains(err.Error(), "hm=") {
				t.Errorf("the error shows the signed URL: %v", err)
			}
			dl := fake.Downloads()
			if (len(dl) > 0) != tt.fetched {
				t.Errorf("downloads %+v, want fetched %v", dl, tt.fetched)
			}
			for _, d := range dl {
				if d.Authorization != "" {
					t.Errorf("the CDN got Authorization %q", d.Authorization)
				}
			}
		})
	}
}
