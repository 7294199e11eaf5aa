package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/tools"
	"talon/internal/tools/tts/ttstest"
)

// messenger plays the gateway: a dry run says which chat the session
// has (or that it has none), a send is recorded.
type messenger struct {
	mu              sync.Mutex
	channel         string
	dryErr, sendErr error
	sent            []tools.OutMessage
}

func (m *messenger) Send(_ context.Context, _ string, out tools.OutMessage) (json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if out.DryRun {
		if m.dryErr != nil {
			return nil, m.dryErr
		}
		return json.Marshal(map[string]any{"dryRun": true, "action": out.Action, "channel": m.channel})
	}
	if m.sendErr != nil {
		return nil, m.sendErr
	}
	m.sent = append(m.sent, out)
	return json.RawMessage(`{"ok":true,"messageId":"9"}`), nil
}

var noChat = fmt.Errorf("this session did not come from a chat: %w", tools.ErrNoChat)

// now is the fake clock: every file of a test is of this second.
var now = time.Date(2026, 5, 1, 12, 30, 5, 0, time.UTC)

const day = "tts/2026-05-01/"

func parseConfig(t *testing.T, src string) *config.Config {
	t.Helper()
	f, err := config.Parse("talon.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if errs := config.Validate(f.Config); len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	return f.Config
}

type rig struct {
	api  *ttstest.Server
	dir  string
	env  *tools.Env
	msgr *messenger
}

func newRig(t *testing.T, ttsSection string) *rig {
	t.Helper()
	r := &rig{api: ttstest.Start(t), dir: t.TempDir(), msgr: &messenger{dryErr: noChat}}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	cfg := parseConfig(t, "{tts: "+strings.ReplaceAll(ttsSection, "FAKE", r.api.URL)+"}")
	r.env = &tools.Env{SessionKey: "agent:main:main", Workspace: root, AllowLoopback: true, Config: cfg, Messenger: r.msgr,
		Outbound: tools.Outbound{Env: func(k string) string { return map[string]string{"TENANT_KEY": "sk-tenant"}[k] }}}
	return r
}

func (r *rig) run(t *testing.T, ctx context.Context, args string) tools.Result {
	t.Helper()
	res, err := (&tool{now: func() time.Time { return now }}).Run(ctx, r.env, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func (r *rig) file(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		t.Fatalf("the audio file: %v", err)
	}
	return b
}

const openAI = `{providers: {openai: {baseUrl: "FAKE/v1", apiKey: "${TENANT_KEY}"}}}`
const elevenLabs = `{provider: "elevenlabs", providers: {elevenlabs: {baseUrl: "FAKE", apiKey: "xi-literal", voiceId: "EXAVITQu4vr4xnSDxMaL", modelId: "eleven_turbo_v2_5"}}}`

// TestSpeak: each provider gets its real request (path, key header,
// JSON body, format) for the conversation it speaks in, the audio is
// saved under tts/<day>/ without replacing a file, and in a chat it is
// sent there once.
func TestSpeak(t *testing.T) {
	tests := []struct {
		name    string
		tts     string
		args    string
		chat    string // the session's chat channel; "" for none
		file    string // the file written
		want    string // in the result
		check   func(t *testing.T, s ttstest.Request)
		sentAs  string // the MIME type of the file sent to the chat; "" when none
		voice   bool   // sent as a voice note
		wantMP3 bool
	}{
		{name: "openai, defaults, no chat", tts: openAI, args: `{"text":"Hello there."}`, file: "speech-123005.mp3",
			want: "(spoken) Hello there.\n[audio: " + day + "speech-123005.mp3 (openai, audio/mpeg, 834 B)]",
			check: func(t *testing.T, s ttstest.Request) {
				wantRequest(t, s, "/v1/audio/speech", "", map[string]any{"model": "gpt-4o-mini-tts", "input": "Hello there.", "voice": "coral", "response_format": "mp3"})
				if h := s.Header.Get("Authorization"); h != "Bearer sk-tenant" {
					t.Errorf("Authorization %q", h)
				}
			}},
		{name: "openai, a telegram chat gets opus and the file", tts: openAI, args: `{"text":"Voice note."}`, chat: "telegram", file: "speech-123005.opus",
			want: "(openai, audio/ogg, ", sentAs: "audio/ogg", voice: true,
			check: func(t *testing.T, s ttstest.Request) {
				wantRequest(t, s, "/v1/audio/speech", "", map[string]any{"model": "gpt-4o-mini-tts", "input": "Voice note.", "voice": "coral", "response_format": "opus"})
			}},
		{name: "openai, slack gets mp3", tts: openAI, args: `{"text":"Hi"}`, chat: "slack", file: "speech-123005.mp3",
			want: "; sent to this slack conversation]", sentAs: "audio/mpeg"},
		{name: "opus asked for in slack is a file, not a voice note", tts: `{providers: {openai: {baseUrl: "FAKE/v1", apiKey: "k", responseFormat: "opus"}}}`,
			args: `{"text":"Hi"}`, chat: "slack", file: "speech-123005.opus", want: "; sent to this slack conversation]", sentAs: "audio/ogg"},
		{name: "mp3 asked for in telegram is a file, not a voice note", tts: `{providers: {openai: {baseUrl: "FAKE/v1", apiKey: "k", responseFormat: "mp3"}}}`,
			args: `{"text":"Hi"}`, chat: "telegram", file: "speech-123005.mp3", want: "; sent to this telegram conversation]", sentAs: "audio/mpeg"},
		{name: "channel argument is a format hint", tts: openAI, args: `{"text":"Hi","channel":"Telegram"}`, file: "speech-123005.opus", want: "audio/ogg"},
		{name: "openai-compatible server: its model, voice, wav, speed, instructions, extra body",
			tts: `{providers: {openai: {baseUrl: "FAKE/v1/", apiKey: "local", model: "tts-1", speakerVoice: "af_sky", responseFormat: "wav",
				speed: 5, instructions: "calm", extraBody: {lang: "en-us", voice: "override"}}}}`,
			args: `{"text":"Local."}`, file: "speech-123005.wav", want: "(openai, audio/wav, ",
			check: func(t *testing.T, s ttstest.Request) {
				wantRequest(t, s, "/v1/audio/speech", "", map[string]any{"model": "tts-1", "input": "Local.", "voice": "override",
					"response_format": "wav", "speed": 5.0, "instructions": "calm", "lang": "en-us"})
			}},
		{name: "elevenlabs, legacy keys, mp3", tts: elevenLabs, args: `{"text":"Eleven."}`, file: "speech-123005.mp3", want: "(elevenlabs, audio/mpeg, ",
			check: func(t *testing.T, s ttstest.Request) {
				wantRequest(t, s, "/v1/text-to-speech/EXAVITQu4vr4xnSDxMaL", "output_format=mp3_44100_128", map[string]any{"text": "Eleven.", "model_id": "eleven_flash_v2_5",
					"voice_settings": map[string]any{"stability": 0.5, "similarity_boost": 0.75, "style": 0.0, "use_speaker_boost": true, "speed": 1.0}})
				if s.Header.Get("xi-api-key") != "xi-literal" || s.Header.Get("Accept") != "audio/mpeg" || s.Header.Get("Authorization") != "" {
					t.Errorf("headers %v", s.Header)
				}
			}},
		{name: "elevenlabs, canonical keys, settings, telegram opus",
			tts: `{provider: "ElevenLabs", providers: {elevenlabs: {baseUrl: "FAKE", apiKey: "${TENANT_KEY}", speakerVoiceId: "pMsXgVXv3BLzUgSXRplE", model: "eleven_v3",
				voiceSettings: {stability: 0.2, useSpeakerBoost: false}, applyTextNormalization: "off", languageCode: "DE", seed: 42}}}`,
			args: `{"text":"Guten Tag."}`, chat: "telegram", file: "speech-123005.opus", want: "(elevenlabs, audio/ogg, ", sentAs: "audio/ogg", voice: true,
			check: func(t *testing.T, s ttstest.Request) {
				wantRequest(t, s, "/v1/text-to-speech/pMsXgVXv3BLzUgSXRplE", "output_format=opus_48000_64", map[string]any{"text": "Guten Tag.", "model_id": "eleven_v3",
					"voice_settings":           map[string]any{"stability": 0.2, "similarity_boost": 0.75, "style": 0.0, "use_speaker_boost": false, "speed": 1.0},
					"apply_text_normalization": "off", "language_code": "de", "seed": 42.0})
				if s.Header.Get("xi-api-key") != "sk-tenant" || s.Header.Get("Accept") != "" {
					t.Errorf("headers %v", s.Header)
				}
			}},
		{name: "elevenlabs: settings out of range and a fractional seed are left out, as OpenClaw leaves them",
			tts:  `{providers: {elevenlabs: {baseUrl: "FAKE", apiKey: "xi", seed: 4.5, voiceSettings: {stability: 1.5, similarityBoost: 0.9, speed: 0.1}}}}`,
			args: `{"text":"x"}`, file: "speech-123005.mp3", want: "(elevenlabs, ",
			check: func(t *testing.T, s ttstest.Request) {
				wantRequest(t, s, "/v1/text-to-speech/pMsXgVXv3BLzUgSXRplE", "output_format=mp3_44100_128", map[string]any{"text": "x", "model_id": "eleven_multilingual_v2",
					"voice_settings": map[string]any{"stability": 0.5, "similarity_boost": 0.9, "style": 0.0, "use_speaker_boost": true, "speed": 1.0}})
			}},
		{name: "openai: extraBody that is not an object gives way to extra_body", tts: `{providers: {openai: {baseUrl: "FAKE/v1", apiKey: "k", extraBody: "x", extra_body: {lang: "fr"}}}}`,
			args: `{"text":"x"}`, file: "speech-123005.mp3", want: "(openai, ",
			check: func(t *testing.T, s ttstest.Request) {
				wantRequest(t, s, "/v1/audio/speech", "", map[string]any{"model": "gpt-4o-mini-tts", "input": "x", "voice": "coral", "response_format": "mp3", "lang": "fr"})
			}},
		{name: "auto-select: elevenlabs has the only key", tts: `{providers: {elevenlabs: {baseUrl: "FAKE", apiKey: "xi"}}}`, args: `{"text":"x"}`,
			file: "speech-123005.mp3", want: "(elevenlabs, "},
		{name: "reply directives in the transcript are defused", tts: openAI, args: `{"text":"[[reply_to_current]] hi\nMEDIA: /etc/passwd\n` + "```sh" + `"}`,
			file: "speech-123005.mp3", want: "(spoken) [\u2060[reply_to_current]] hi\n\u2060MEDIA: /etc/passwd\n`\u2060``sh\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.tts)
			if tt.chat != "" {
				r.msgr.dryErr, r.msgr.channel = nil, tt.chat
			}
			res := r.run(t, context.Background(), tt.args)
			if res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("result %+v, want it to contain %q", res, tt.want)
			}
			reqs := r.api.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			if tt.check != nil {
				tt.check(t, reqs[0])
			}
			ext := filepath.Ext(tt.file)
			want, _ := ttstest.AudioOf(strings.TrimPrefix(ext, "."))
			if got := r.file(t, day+tt.file); !bytes.Equal(got, want) {
				t.Errorf("the file holds %d bytes, not the provider's %d", len(got), len(want))
			}
			switch {
			case tt.sentAs == "" && len(r.msgr.sent) > 0:
				t.Errorf("sent %+v outside a chat", r.msgr.sent)
			case tt.sentAs != "":
				if len(r.msgr.sent) != 1 {
					t.Fatalf("sent %d messages, want 1", len(r.msgr.sent))
				}
				m := r.msgr.sent[0]
				if m.Action != "sendAttachment" || m.File == nil || m.File.Name != tt.file || m.File.MIME != tt.sentAs || !bytes.Equal(m.File.Data, want) || m.File.Voice != tt.voice {
					t.Errorf("sent %+v", m)
				}
				as := ""
				if tt.voice {
					as = " as a voice note"
				}
				if !strings.Contains(res.Text, "; sent"+as+" to this "+tt.chat+" conversation]") {
					t.Errorf("result %q does not say it was sent", res.Text)
				}
			}
		})
	}
}

func wantRequest(t *testing.T, s ttstest.Request, path, query string, body map[string]any) {
	t.Helper()
	if s.Method != http.MethodPost || s.Path != path || s.Query != query || s.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s?%s (%s), want POST %s?%s", s.Method, s.Path, s.Query, s.Header.Get("Content-Type"), path, query)
	}
	got, _ := json.Marshal(s.Body)
	exp, _ := json.Marshal(body)
	if !bytes.Equal(got, exp) {
		t.Errorf("body %s\nwant %s", got, exp)
	}
}

// TestNeverOverwrites: two answers in the same second are two files.
func TestNeverOverwrites(t *testing.T) {
	r := newRig(t, openAI)
	for _, want := range []string{day + "speech-123005.mp3", day + "speech-123005-2.mp3"} {
		if res := r.run(t, context.Background(), `{"text":"again"}`); !strings.Contains(res.Text, "[audio: "+want+" ") {
			t.Errorf("result %q, want the file %s", res.Text, want)
		}
		r.file(t, want)
	}
}

// TestRefusals: what the tool refuses, and how a provider's refusal
// reaches the model; a refusal before the request sends none, and no
// refusal leaves a file or quotes a key.
func TestRefusals(t *testing.T) {
	status := func(code int, header, body string) func(http.ResponseWriter, *http.Request) bool {
		return func(w http.ResponseWriter, _ *http.Request) bool {
			if k, v, ok := strings.Cut(header, ": "); ok {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprint(w, body)
			return true
		}
	}
	tests := []struct {
		name     string
		tts      string
		args     string
		env      func(*tools.Env)
		answer   func(http.ResponseWriter, *http.Request) bool
		want     string
		requests int
	}{
		{name: "no text", tts: openAI, args: `{}`, want: `tts: missing required argument "text"`},
		{name: "blank text", tts: openAI, args: `{"text":"  "}`, want: `argument "text" is empty`},
		{name: "an argument OpenClaw's tool lacks", tts: openAI, args: `{"text":"x","voice":"nova"}`, want: `"voice"`},
		{name: "timeoutMs zero", tts: openAI, args: `{"text":"x","timeoutMs":0}`, want: `argument "timeoutMs" must be an integer from 1 to 600000`},
		{name: "text over maxTextLength", tts: `{maxTextLength: 5, providers: {openai: {baseUrl: "FAKE/v1", apiKey: "k"}}}`, args: `{"text":"123456"}`,
			want: "the text is 6 characters; at most 5 are spoken in one call (tts.maxTextLength)"},
		{name: "read-only sandbox", tts: openAI, args: `{"text":"x"}`, env: func(e *tools.Env) { e.ReadOnly = true }, want: `the workspace is read-only in this sandbox`},
		{name: "no workspace", tts: openAI, args: `{"text":"x"}`, env: func(e *tools.Env) { e.Workspace = nil }, want: "no workspace"},
		{name: "a provider Talon lacks", tts: `{provider: "microsoft"}`, args: `{"text":"x"}`, want: `tts.provider "microsoft" is not built in Talon`},
		{name: "a response format OpenClaw loads but refuses", tts: `{providers: {openai: {baseUrl: "FAKE/v1", apiKey: "k", responseFormat: "flac"}}}`, args: `{"text":"x"}`,
			want: `tts: openai: tts.providers.openai.responseFormat "flac" is not one of mp3, opus, wav: fix it in the config`},
		{name: "a malformed voice id", tts: `{providers: {elevenlabs: {baseUrl: "FAKE", apiKey: "k", voiceId: "short"}}}`, args: `{"text":"x"}`,
			want: `tts: elevenlabs: the voice id "short" (tts.providers.elevenlabs.speakerVoiceId) is not 10 to 40 letters and digits: fix it in the config`},
		{name: "a text normalization ElevenLabs lacks", tts: `{providers: {elevenlabs: {baseUrl: "FAKE", apiKey: "k", applyTextNormalization: "maybe"}}}`, args: `{"text":"x"}`,
			want: `tts: elevenlabs: tts.providers.elevenlabs.applyTextNormalization "maybe" is not auto, on or off: fix it in the config`},
		{name: "a language code of three letters", tts: `{providers: {elevenlabs: {baseUrl: "FAKE", apiKey: "k", languageCode: "deu"}}}`, args: `{"text":"x"}`,
			want: `tts: elevenlabs: tts.providers.elevenlabs.languageCode "deu" is not a 2-letter ISO 639-1 code: fix it in the config`},
		{name: "no key anywhere", tts: `{providers: {openai: {baseUrl: "FAKE/v1"}}}`, args: `{"text":"x"}`,
			want: "no API key for the openai speech provider: set tts.providers.openai.apiKey or OPENAI_API_KEY"},
		{name: "the operator's key never goes to a tenant's base URL", tts: `{provider: "openai", providers: {openai: {baseUrl: "FAKE/v1"}}}`, args: `{"text":"x"}`,
			env:  func(e *tools.Env) { e.Outbound.Builtin = func(string) string { return "sk-operator" } },
			want: "no API key for the openai speech provider"},
		{name: "a key variable the tenant lacks", tts: `{providers: {openai: {baseUrl: "FAKE/v1", apiKey: "${NOPE}"}}}`, args: `{"text":"x"}`,
			want: "tts.providers.openai.apiKey: reading secret: environment variable NOPE is not set"},
		{name: "a private address is refused by the network guard", tts: openAI, args: `{"text":"x"}`, env: func(e *tools.Env) { e.AllowLoopback = false },
			want: "tts: openai: sending the request: "},
		{name: "401 says the key was refused, without the key", tts: openAI, args: `{"text":"x"}`, requests: 1,
			answer: status(401, "", `{"error":{"message":"Incorrect API key provided: sk-tenant. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`),
			want:   "tts: openai: the API key was refused (HTTP 401): Incorrect API key provided: [redacted]. You can find"},
		{name: "429 with Retry-After", tts: elevenLabs, args: `{"text":"x"}`, requests: 1,
			answer: status(429, "Retry-After: 7", `{"detail":{"status":"too_many_concurrent_requests","message":"Too many concurrent requests."}}`),
			want:   "tts: elevenlabs: rate limited (HTTP 429): the account's request rate or quota is used up; retry after 7 seconds: Too many concurrent requests."},
		{name: "4xx message", tts: elevenLabs, args: `{"text":"x"}`, requests: 1,
			answer: status(400, "", `{"detail":{"status":"voice_not_found","message":"A voice with the voice_id EXAVITQu4vr4xnSDxMaL was not found."}}`),
			want:   "tts: elevenlabs: the request was refused (HTTP 400): A voice with the voice_id EXAVITQu4vr4xnSDxMaL was not found."},
		{name: "5xx", tts: openAI, args: `{"text":"x"}`, requests: 1, answer: status(503, "", `<html>busy</html>`),
			want: "tts: openai: the service failed (HTTP 503); try again later"},
		{name: "an answer that is not the audio asked for", tts: openAI, args: `{"text":"x"}`, requests: 1,
			answer: func(w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Content-Type", "audio/mpeg")
				w.Write(ttstest.WAV())
				return true
			},
			want: fmt.Sprintf("tts: openai: the answer (%d bytes, audio/wave) is not mp3 audio", len(ttstest.WAV()))},
		{name: "over the audio cap, unannounced", tts: openAI, args: `{"text":"x"}`, requests: 1,
			answer: func(w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Content-Type", "audio/mpeg")
				w.(http.Flusher).Flush()
				w.Write(bytes.Repeat(ttstest.MP3(), MaxAudio/834+1))
				return true
			},
			want: "tts: openai: the audio is over 16 MiB"},
		{name: "JSON instead of audio", tts: openAI, args: `{"text":"x"}`, requests: 1,
			answer: func(w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"ok":true}`)
				return true
			},
			want: "tts: openai: answered with application/json instead of audio"},
		{name: "over the audio cap", tts: openAI, args: `{"text":"x"}`, requests: 1,
			answer: func(w http.ResponseWriter, _ *http.Request) bool {
				big := bytes.Repeat(ttstest.MP3(), MaxAudio/834+1)
				w.Header().Set("Content-Type", "audio/mpeg")
				w.Header().Set("Content-Length", fmt.Sprint(len(big)))
				w.Write(big)
				return true
			},
			want: fmt.Sprintf("tts: openai: the audio is %d bytes, over 16 MiB", 834*(MaxAudio/834+1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.tts)
			r.api.Answer(tt.answer)
			if tt.env != nil {
				tt.env(r.env)
			}
			res := r.run(t, context.Background(), tt.args)
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("result %+v, want an error containing %q", res, tt.want)
			}
			if strings.Contains(res.Text, "sk-tenant") || strings.Contains(res.Text, "sk-operator") {
				t.Errorf("the result quotes a key: %q", res.Text)
			}
			if n := len(r.api.Requests()); n != tt.requests {
				t.Errorf("%d requests reached the provider, want %d", n, tt.requests)
			}
			if _, err := os.Stat(filepath.Join(r.dir, Dir)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused call left %s: %v", Dir, err)
			}
			if len(r.msgr.sent) > 0 {
				t.Errorf("a refused call sent %+v", r.msgr.sent)
			}
		})
	}
}

// TestDelivery: a chat that refuses the file, or fails to take it,
// still leaves the file, and the result says why it was not sent.
func TestDelivery(t *testing.T) {
	tests := []struct {
		name            string
		dryErr, sendErr error
		file, want      string
	}{
		{"sendAttachment turned off", errors.New("channels.telegram.actions.sendAttachment is false"), nil, "speech-123005.mp3",
			"; not sent to the chat: channels.telegram.actions.sendAttachment is false]"},
		{"the platform fails", nil, errors.New("telegram: send file: Bad Request: chat not found"), "speech-123005.opus",
			"; not sent to the chat: telegram: send file: Bad Request: chat not found]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, openAI)
			r.msgr.dryErr, r.msgr.sendErr, r.msgr.channel = tt.dryErr, tt.sendErr, "telegram"
			res := r.run(t, context.Background(), `{"text":"x"}`)
			if res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("result %+v, want %q", res, tt.want)
			}
			r.file(t, day+tt.file)
		})
	}
}

// TestTimeoutAndCancel: a provider that does not answer is given up on
// after the call's timeoutMs, and a cancelled run stops the request; the
// fake holds each request until its client goes.
func TestTimeoutAndCancel(t *testing.T) {
	hold := func(w http.ResponseWriter, r *http.Request) bool {
		<-r.Context().Done()
		return true
	}
	t.Run("timeout", func(t *testing.T) {
		r := newRig(t, openAI)
		r.api.Answer(hold)
		res := r.run(t, context.Background(), `{"text":"x","timeoutMs":20}`)
		if want := "tts: openai: no audio within 20ms (tts.timeoutMs, or the call's timeoutMs)"; !res.IsError || res.Text != want {
			t.Errorf("result %+v, want %q", res, want)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		r := newRig(t, openAI)
		ctx, cancel := context.WithCancel(context.Background())
		r.api.Answer(func(w http.ResponseWriter, req *http.Request) bool {
			cancel()
			return hold(w, req)
		})
		res := r.run(t, ctx, `{"text":"x"}`)
		if !res.IsError || !strings.Contains(res.Text, "context canceled") {
			t.Errorf("result %+v, want the cancellation", res)
		}
	})
}

// TestOperatorKeyOnlyToOwnHost: without a base URL the provider is its
// own host, where the operator's key may go; with any base URL it never
// does, and the tenant's own variable is used first.
func TestOperatorKeyOnlyToOwnHost(t *testing.T) {
	operator := func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "op-openai", "XI_API_KEY": "op-xi"}[k]
	}
	tests := []struct {
		name, tts string
		tenant    map[string]string
		provider  string
		key       string
	}{
		{"openai's own host", `{}`, nil, "openai", "op-openai"},
		{"https://api.openai.com/v1/ is the own host", `{providers: {openai: {baseUrl: "https://api.openai.com/v1/"}}}`, nil, "openai", "op-openai"},
		{"a tenant's base URL", `{provider: "openai", providers: {openai: {baseUrl: "https://tts.example/v1"}}}`, nil, "openai", ""},
		{"the tenant's variable first", `{}`, map[string]string{"OPENAI_API_KEY": "t-openai"}, "openai", "t-openai"},
		{"elevenlabs' second variable", `{provider: "elevenlabs"}`, nil, "elevenlabs", "op-xi"},
		{"elevenlabs elsewhere", `{provider: "elevenlabs", providers: {elevenlabs: {baseUrl: "https://xi.example"}}}`, nil, "elevenlabs", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseConfig(t, "{tts: "+tt.tts+"}")
			o := tools.Outbound{Builtin: operator, Env: func(k string) string { return tt.tenant[k] }}
			sp, key, err := pick(&cfg.TTS, o)
			if sp.id != tt.provider || key != tt.key || (err != nil) != (tt.key == "") {
				t.Errorf("pick = %s, %q, %v; want %s, %q", sp.id, key, err, tt.provider, tt.key)
			}
		})
	}
}
