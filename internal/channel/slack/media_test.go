package slack

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/slack/slacktest"
)

func TestMediaOf(t *testing.T) {
	u := "https://files.slack.com/files-pri/T1-F1/download/a.png"
	tests := []struct {
		name  string
		files []file
		want  []channel.Media
	}{
		{"image", []file{{Name: "a.png", MIME: "image/png", Size: 10, URLDownload: u, URLPrivate: "https://files.slack.com/p"}},
			[]channel.Media{{Ref: u, Name: "a.png", MIME: "image/png", Size: 10, Kind: "image"}}},
		{"private url when no download url", []file{{Name: "a.pdf", MIME: "application/pdf", URLPrivate: u}},
			[]channel.Media{{Ref: u, Name: "a.pdf", MIME: "application/pdf", Kind: "document"}}},
		{"audio clip is voice", []file{{Name: "clip", MIME: "audio/webm", Subtype: "slack_audio", URLPrivate: u}},
			[]channel.Media{{Ref: u, Name: "clip", MIME: "audio/webm", Kind: "voice"}}},
		{"video, title when no name", []file{{Title: "movie", MIME: "Video/MP4", URLPrivate: u}},
			[]channel.Media{{Ref: u, Name: "movie", MIME: "Video/MP4", Kind: "video"}}},
		{"withheld and url-less files are left out", []file{{Mode: "hidden_by_limit", URLPrivate: u}, {Mode: "tombstone", URLPrivate: u}, {Name: "x"}, {URLPrivate: "javascript:alert(1)"}}, nil},
		{"negative size is none, bad utf-8 is replaced", []file{{Name: "a\xffb", Size: -5, URLPrivate: u}},
			[]channel.Media{{Ref: u, Name: "a\uFFFDb", Kind: "document"}}},
		{"long name is cut on a rune", []file{{Name: strings.Repeat("é", 200), URLPrivate: u}},
			[]channel.Media{{Ref: u, Name: strings.Repeat("é", 127), Kind: "document"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, mediaOf(tt.files)); d != "" {
				t.Errorf("mediaOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestInboundFiles(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake image bytes")
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := start(t, mode)
			r.waitReady()
			r.says(slacktest.Message{Kind: "channel", Mention: false, Files: []slacktest.File{
				{Name: "cat.png", MIME: "image/png", Data: png},
				{Name: "notes.txt", MIME: "text/plain", Data: []byte("hello"), Mode: "hidden_by_limit"},
			}})
			e := r.envelopes(1)[0]
			if e.Text != "" || len(e.Media) != 1 {
				t.Fatalf("envelope text %q media %+v, want no text and one file", e.Text, e.Media)
			}
			m := e.Media[0]
			if m.Name != "cat.png" || m.MIME != "image/png" || m.Size != int64(len(png)) || m.Kind != "image" || !strings.Contains(m.Ref, "/download/cat.png") {
				t.Errorf("media %+v", m)
			}
			got, err := r.app.Fetch(testCtx(t), m, 1<<20)
			if err != nil || !bytes.Equal(got, png) {
				t.Errorf("Fetch = %q, %v", got, err)
			}
		})
	}
}

func TestFetch(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 1000)
	var elsewhere, tokens atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("Authorization") != "" {
			tokens.Add(1)
		}
		w.Write(data)
	}))
	t.Cleanup(other.Close)
	// The same loopback server under another name: Go keeps the
	// Authorization header on a redirect only to the same host name.
	cdn := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/cdn/a.bin"
	tests := []struct {
		name      string
		file      slacktest.File
		max       int64
		ref       func(m channel.Media) channel.Media
		revoke    bool
		wantErr   string
		tooLarge  bool
		downloads int
		reached   int32 // requests that reached the other host
	}{
		{name: "ok", file: slacktest.File{Name: "a.bin", Data: data}, max: 1000, downloads: 1},
		{name: "announced over the limit is not downloaded", file: slacktest.File{Name: "a.bin", Data: data}, max: 999,
			wantErr: "Slack announced 1000 bytes, over the limit of 999", tooLarge: true},
		{name: "content-length over the limit", file: slacktest.File{Name: "a.bin", Data: data, Size: -1}, max: 999,
			wantErr: "the file is 1000 bytes, over the limit of 999", tooLarge: true, downloads: 1},
		{name: "over the limit while reading", file: slacktest.File{Name: "a.bin", Data: data, Size: -1, Chunked: true}, max: 999,
			wantErr: "the file is over the limit of 999 bytes", tooLarge: true, downloads: 1},
		{name: "exactly the limit while reading", file: slacktest.File{Name: "a.bin", Data: data, Size: -1, Chunked: true}, max: 1000, downloads: 1},
		{name: "another host gets no token", file: slacktest.File{Name: "a.bin", Data: data}, max: 1000,
			ref:     func(m channel.Media) channel.Media { m.Ref = other.URL + "/files-pri/x/a.bin"; return m },
			wantErr: "not on files.slack.com or the apiUrl's host"},
		{name: "plain http to slack's host is refused", file: slacktest.File{Name: "a.bin", Data: data}, max: 1000,
			ref:     func(m channel.Media) channel.Media { m.Ref = "http://files.slack.com/files-pri/x/a.bin"; return m },
			wantErr: "not on files.slack.com"},
		{name: "not a url", file: slacktest.File{Name: "a.bin", Data: data}, max: 1000,
			ref:     func(m channel.Media) channel.Media { m.Ref = "F0123"; return m },
			wantErr: "the file reference is not a URL"},
		{name: "sign-in page", file: slacktest.File{Name: "a.bin", Data: data}, max: 1000, revoke: true,
			wantErr: "lacks the files:read scope"},
		{name: "a redirect to another host carries no token", file: slacktest.File{Name: "a.bin", Data: data, RedirectTo: cdn}, max: 1000,
			downloads: 1, reached: 1},
		{name: "zero limit", file: slacktest.File{Name: "a.bin", Data: data}, max: 0, wantErr: "the size limit must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, ModeSocket)
			r.waitReady()
			r.says(slacktest.Message{Text: "see", Files: []slacktest.File{tt.file}})
			m := r.envelopes(1)[0].Media[0]
			if tt.ref != nil {
				m = tt.ref(m)
			}
			if tt.revoke {
				r.fake.Revoke(slacktest.BotToken)
			}
			before := elsewhere.Load()
			got, err := r.app.Fetch(testCtx(t), m, tt.max)
			if tt.wantErr == "" {
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("Fetch = %d bytes, %v", len(got), err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Fetch error = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, channel.ErrTooLarge) != tt.tooLarge {
				t.Errorf("errors.Is(%v, ErrTooLarge) = %v, want %v", err, !tt.tooLarge, tt.tooLarge)
			}
			if n := r.fake.Downloads("a.bin"); n != tt.downloads {
				t.Errorf("downloads = %d, want %d", n, tt.downloads)
			}
			if n := elsewhere.Load() - before; n != tt.reached {
				t.Errorf("%d requests reached the other host, want %d", n, tt.reached)
			}
			if tokens.Load() != 0 {
				t.Error("the bot token reached the other host")
			}
		})
	}
}
