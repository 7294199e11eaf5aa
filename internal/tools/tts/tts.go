// Package tts is the tts tool, OpenClaw's text to speech: the model gives
// text, a speech provider of the tts config section (OpenAI's
// /audio/speech or any server that speaks it, or ElevenLabs'
// /v1/text-to-speech/{voice}) turns it into audio, the audio is written
// as a new file into the workspace under tts/<day>/, and in a chat
// conversation it is sent there too, through tools.Env.Messenger as the
// message tool's sendAttachment sends a file. Keys come from
// tools.Outbound.Key and requests go through tools.Outbound.Client, so a
// tenant's provider is held to its network rule and the operator's key
// goes only to the provider's own host. A read-only workspace refuses
// the call before any request is made.
//
// The tool is stateless and safe for concurrent use.
package tts

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/config"
	"talon/internal/tools"
)

// MaxAudio is the largest audio answer the tool keeps (OpenClaw's 16 MiB).
const MaxAudio = 16 << 20

// Dir is the workspace directory speech goes to, one directory per day.
const Dir = "tts"

// maxEcho bounds the transcript the result repeats: the model has the
// text already.
const maxEcho = 4096

// maxCallTimeout bounds a call's own timeoutMs, as the config's is.
const maxCallTimeout = 10 * time.Minute

type tool struct{ now func() time.Time }

var _ tools.Tool = (*tool)(nil)

// New returns the tts tool.
func New() tools.Tool { return &tool{now: time.Now} }

func (*tool) Name() string { return "tts" }

func (*tool) Description() string {
	return "Convert text to spoken audio (text to speech) with the configured voice provider. " +
		"Only when the user asks for voice, speech or audio, or the setup calls for it; never instead of an ordinary text reply. " +
		"The audio is saved in the workspace and, in a chat, delivered there automatically: afterwards do not send the audio or its text again."
}

var schema = tools.Object(
	tools.Prop{Name: "text", Type: tools.TypeString, Required: true, Description: "Text to speak."},
	tools.Prop{Name: "channel", Type: tools.TypeString, Description: "Channel id (telegram, slack, discord, …); output-format hint: a voice-note channel gets Opus, others MP3. Default: this conversation's."},
	tools.Prop{Name: "timeoutMs", Type: tools.TypeInteger, Description: "Provider timeout in milliseconds; default tts.timeoutMs (30000)."},
)

func (*tool) Schema() json.RawMessage { return schema }

// input is a checked call.
type input struct {
	text, channel string
	timeout       time.Duration
}

func parse(raw json.RawMessage) (input, error) {
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return input{}, err
	}
	var in input
	if in.text, err = a.String("text", true); err != nil {
		return input{}, err
	}
	if strings.TrimSpace(in.text) == "" {
		return input{}, errors.New(`argument "text" is empty: give the words to speak`)
	}
	if in.channel, err = a.String("channel", false); err != nil {
		return input{}, err
	}
	in.channel = strings.ToLower(strings.TrimSpace(in.channel))
	ms, err := a.Int("timeoutMs", false, 1, int(maxCallTimeout/time.Millisecond))
	if err != nil {
		return input{}, err
	}
	in.timeout = time.Duration(ms) * time.Millisecond
	return in, nil
}

func (t *tool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	in, err := parse(raw)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("tts: %w", err)), nil
	}
	cfg := &config.TTS{}
	if env.Config != nil {
		cfg = &env.Config.TTS
	}
	if n := utf8.RuneCountInString(in.text); n > cfg.MaxText() {
		return tools.Errorf("tts: the text is %d characters; at most %d are spoken in one call (tts.maxTextLength): shorten it or split it into several calls", n, cfg.MaxText()), nil
	}
	switch {
	case env.Workspace == nil:
		return tools.Errorf("tts: this run has no workspace to save the audio in"), nil
	case env.ReadOnly:
		return tools.Errorf("tts: the workspace is read-only in this sandbox (workspaceAccess \"ro\"), and the audio is saved there: nothing was spoken"), nil
	}
	chat := route(ctx, env)
	sp, key, err := pick(cfg, env.Outbound)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("tts: %w", err)), nil
	}
	voiceNote := slices.Contains(voiceNoteChannels, cmp.Or(in.channel, chat.channel))
	var c call
	if sp.id == "elevenlabs" {
		c, err = elevenLabsCall(cfg.Providers.ElevenLabs, sp.base, key, in.text, voiceNote)
	} else {
		c, err = openAICall(cfg.Providers.OpenAI, sp.base, key, in.text, voiceNote)
	}
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("tts: %s: %w", sp.id, err)), nil
	}
	timeout := cfg.Timeout()
	if in.timeout > 0 {
		timeout = in.timeout
	}
	audio, err := synthesize(ctx, env, c, timeout)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("tts: %w", err)), nil
	}
	now := t.now().UTC()
	p, err := tools.CreateNew(env.Workspace, path.Join(Dir, now.Format("2006-01-02")), "speech-"+now.Format("150405")+c.format.ext, audio)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("tts: saving the audio: %w", tools.FSError(err))), nil
	}
	sent := deliver(ctx, env, chat, p, c.format, audio)
	return tools.Result{Text: "(spoken) " + transcript(in.text) + "\n" +
		fmt.Sprintf("[audio: %s (%s, %s, %s)%s]", p, c.provider, c.format.mime, tools.ByteSize(len(audio)), sent)}, nil
}

// chat is where the session's conversation is, if it has one: its
// channel, or why a file cannot go there.
type chat struct {
	ok      bool
	channel string
	refusal string
}

// route asks the gateway, with a dry run of the file's sendAttachment,
// whether the session has a chat and which; a session without one (the
// API, Studio, a cron run) just keeps the file.
func route(ctx context.Context, env *tools.Env) chat {
	if env.Messenger == nil {
		return chat{}
	}
	out, err := env.Messenger.Send(ctx, env.SessionKey, tools.OutMessage{Action: "sendAttachment", DryRun: true})
	switch {
	case errors.Is(err, tools.ErrNoChat):
		return chat{}
	case err != nil:
		return chat{refusal: err.Error()}
	}
	var r struct {
		Channel string `json:"channel"`
	}
	_ = json.Unmarshal(out, &r) // the channel only picks the format
	return chat{ok: true, channel: strings.ToLower(r.Channel)}
}

// deliver sends the audio to the session's chat and says how it went,
// as the tail of the result's audio line. A chat with voice notes gets
// Ogg Opus as one, as OpenClaw delivers it; anything else goes as a file.
func deliver(ctx context.Context, env *tools.Env, c chat, p string, f format, audio []byte) string {
	switch {
	case c.refusal != "":
		return "; not sent to the chat: " + c.refusal
	case !c.ok:
		return ""
	}
	voice := f.voice && slices.Contains(voiceNoteChannels, c.channel)
	m := tools.OutMessage{Action: "sendAttachment", File: &tools.Attachment{Name: path.Base(p), MIME: f.mime, Data: audio, Voice: voice}}
	if _, err := env.Messenger.Send(ctx, env.SessionKey, m); err != nil {
		return "; not sent to the chat: " + err.Error()
	}
	as := ""
	if voice {
		as = " as a voice note"
	}
	return "; sent" + as + " to this " + cmp.Or(c.channel, "chat") + " conversation"
}

// synthesize sends c and returns the audio, checked to be of the format
// asked for and at most MaxAudio bytes.
func synthesize(parent context.Context, env *tools.Env, c call, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	// failed words a transport error; running out of time is the
	// timeout's doing unless the caller gave up first.
	failed := func(step string, err error) error {
		var ne net.Error
		if parent.Err() == nil && (ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout()) {
			return fmt.Errorf("%s: no audio within %s (tts.timeoutMs, or the call's timeoutMs)", c.provider, timeout)
		}
		return fmt.Errorf("%s: %s: %w", c.provider, step, err)
	}
	req, err := c.request(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := env.Outbound.Client(env.AllowLoopback, timeout).Do(req)
	if err != nil {
		return nil, failed("sending the request", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, tools.APIError(c.provider, resp, c.key)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" || strings.HasPrefix(mt, "text/") {
		return nil, fmt.Errorf("%s: answered with %s instead of audio", c.provider, mt)
	}
	if resp.ContentLength > MaxAudio {
		return nil, fmt.Errorf("%s: the audio is %d bytes, over %d MiB", c.provider, resp.ContentLength, MaxAudio>>20)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAudio+1))
	if err != nil {
		return nil, failed("reading the audio", err)
	}
	if len(data) > MaxAudio {
		return nil, fmt.Errorf("%s: the audio is over %d MiB", c.provider, MaxAudio>>20)
	}
	if !c.format.is(data) {
		return nil, fmt.Errorf("%s: the answer (%d bytes, %s) is not %s audio", c.provider, len(data), http.DetectContentType(data), c.format.wire)
	}
	return data, nil
}

// is says data starts as audio of format f does: an ID3 tag or an MPEG
// frame sync (MP3), an Ogg page with an Opus header, a RIFF WAVE header.
func (f format) is(data []byte) bool {
	switch f.wire {
	case "mp3":
		return len(data) >= 4 && (string(data[:3]) == "ID3" || data[0] == 0xFF && data[1]&0xE0 == 0xE0)
	case "opus":
		return len(data) >= 36 && string(data[:4]) == "OggS" && string(data[28:36]) == "OpusHead"
	case "wav":
		return len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WAVE"
	}
	return false
}

var (
	fenceRE = regexp.MustCompile("(?m)^([ \t]*)`(`{2,})")
	mediaRE = regexp.MustCompile(`(?mi)^(\s*)(MEDIA:)`)
)

// transcript is the spoken text as the result repeats it, at most
// maxEcho characters, with what would read as a reply directive
// ([[reply_to_current]]), a MEDIA: line or a code fence broken by a word
// joiner, as OpenClaw does: the model may echo its tool results.
func transcript(s string) string {
	if r := []rune(s); len(r) > maxEcho {
		s = string(r[:maxEcho]) + "…"
	}
	s = strings.ReplaceAll(s, "[[", "[\u2060[")
	s = mediaRE.ReplaceAllString(s, "$1\u2060$2")
	return fenceRE.ReplaceAllString(s, "$1`\u2060$2")
}
