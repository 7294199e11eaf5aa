package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"talon/internal/config"
	"talon/internal/tools"
)

// format is one audio encoding the tool asks a provider for: its name
// in the provider's request, the file's extension and MIME type, and
// whether chats take it as a voice note (Ogg Opus).
type format struct {
	wire, ext, mime string
	voice           bool
}

var (
	mp3  = format{"mp3", ".mp3", "audio/mpeg", false}
	opus = format{"opus", ".opus", "audio/ogg", true}
	wav  = format{"wav", ".wav", "audio/wav", false}
)

// voiceNoteChannels are the chats that get speech as a voice note, so
// the tool asks for Opus there, as OpenClaw does; the others get MP3.
var voiceNoteChannels = []string{"telegram", "whatsapp", "matrix", "feishu"}

// call is one provider request, built but not sent, and what it answers.
type call struct {
	provider string
	url      string
	header   http.Header
	body     []byte
	format   format
	// key is sent in header; kept to cut it out of error messages.
	key string
}

// speaker is a provider resolved from the config: where it is, whether
// that is its own default host (which alone may get the operator's key),
// and its key's config entry and fallback variables.
type speaker struct {
	id          string
	base        string
	defaultHost bool
	apiKey      *config.Secret
	fallbacks   []string
}

func openAISpeaker(c *config.TTSOpenAI) speaker {
	base, own := c.URL()
	s := speaker{id: "openai", base: base, defaultHost: own, fallbacks: []string{"OPENAI_API_KEY"}}
	if c != nil {
		s.apiKey = c.APIKey
	}
	return s
}

func elevenLabsSpeaker(c *config.TTSElevenLabs) speaker {
	base, own := c.URL()
	s := speaker{id: "elevenlabs", base: base, defaultHost: own, fallbacks: []string{"ELEVENLABS_API_KEY", "XI_API_KEY"}}
	if c != nil {
		s.apiKey = c.APIKey
	}
	return s
}

// key is the speaker's key: its apiKey, else its variables from the
// tenant, else the operator's for the provider's own host.
func (s speaker) key(o tools.Outbound) (string, error) {
	for i, v := range s.fallbacks {
		secret := s.apiKey
		if i > 0 {
			secret = nil
		}
		k, err := o.Key(secret, v, s.defaultHost)
		if err != nil {
			return "", fmt.Errorf("tts.providers.%s.apiKey: %w", s.id, err)
		}
		if k != "" {
			return k, nil
		}
	}
	return "", nil
}

// keyHelp says where a missing key goes.
func (s speaker) keyHelp() string {
	return fmt.Sprintf("set tts.providers.%s.apiKey or %s", s.id, strings.Join(s.fallbacks, " or "))
}

// pick chooses the provider: tts.provider, else the first of openai and
// elevenlabs with a key (openai when neither has one, to say so).
func pick(c *config.TTS, o tools.Outbound) (speaker, string, error) {
	all := []speaker{openAISpeaker(c.Providers.OpenAI), elevenLabsSpeaker(c.Providers.ElevenLabs)}
	if id := strings.ToLower(strings.TrimSpace(c.Provider)); id != "" {
		i := slices.IndexFunc(all, func(s speaker) bool { return s.id == id })
		if i < 0 {
			return speaker{}, "", fmt.Errorf("tts.provider %q is not built in Talon: set it to openai or elevenlabs", c.Provider)
		}
		all = all[i : i+1]
	}
	for _, s := range all {
		k, err := s.key(o)
		if err != nil || k != "" {
			return s, k, err
		}
	}
	return all[0], "", fmt.Errorf("no API key for the %s speech provider: %s", all[0].id, all[0].keyHelp())
}

// openAICall builds OpenAI's POST {base}/audio/speech.
func openAICall(c *config.TTSOpenAI, base, key, text string, voiceNote bool) (call, error) {
	f := mp3
	if voiceNote {
		f = opus
	}
	format, ok := c.Format()
	if !ok {
		return call{}, fmt.Errorf("tts.providers.openai.responseFormat %q is not one of %s: fix it in the config", format, strings.Join(config.OpenAIFormats, ", "))
	}
	switch format {
	case "mp3":
		f = mp3
	case "opus":
		f = opus
	case "wav":
		f = wav
	}
	speed, extra := c.SpeedValue(), c.Extra()
	var instructions string
	if c != nil {
		instructions = strings.TrimSpace(c.Instructions)
	}
	model := c.ModelName()
	if _, own := c.URL(); own && !strings.Contains(model, "gpt-4o-mini-tts") {
		// Only OpenAI's gpt-4o-mini-tts models take instructions.
		instructions = ""
	}
	body := map[string]any{"model": model, "input": text, "voice": c.VoiceName(), "response_format": f.wire}
	if speed != nil {
		body["speed"] = *speed
	}
	if instructions != "" {
		body["instructions"] = instructions
	}
	b, err := json.Marshal(body)
	if err != nil {
		return call{}, fmt.Errorf("encoding the request: %w", err)
	}
	if b, err = mergeExtra(b, extra); err != nil {
		return call{}, err
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+key)
	h.Set("Content-Type", "application/json")
	return call{provider: "openai", url: base + "/audio/speech", header: h, body: b, format: f, key: key}, nil
}

// mergeExtra adds extraBody's fields to the request JSON; the request's
// own fields come first and extraBody's win, as OpenClaw merges them.
func mergeExtra(b []byte, extra *config.Raw) ([]byte, error) {
	if extra == nil || extra.Value == nil || len(extra.Members) == 0 {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	for _, mem := range extra.Members {
		v, err := mem.Value.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("tts.providers.openai.extraBody.%s: %w", mem.Key, err)
		}
		m[mem.Key] = v
	}
	return json.Marshal(m)
}

// elevenLabsCall builds ElevenLabs' POST
// {base}/v1/text-to-speech/{voice_id}?output_format=….
func elevenLabsCall(c *config.TTSElevenLabs, base, key, text string, voiceNote bool) (call, error) {
	f, wire := mp3, "mp3_44100_128"
	if voiceNote {
		f, wire = opus, "opus_48000_64"
	}
	voice := c.Voice()
	if !config.ElevenLabsVoiceID(voice) {
		// The config loads a malformed id OpenClaw loads (with a
		// warning); it is refused here, before it reaches the path.
		return call{}, fmt.Errorf("the voice id %q (tts.providers.elevenlabs.speakerVoiceId) is not 10 to 40 letters and digits: fix it in the config", voice)
	}
	settings := map[string]any{"stability": 0.5, "similarity_boost": 0.75, "style": 0.0, "use_speaker_boost": true, "speed": 1.0}
	body := map[string]any{"text": text, "model_id": c.ModelName(), "voice_settings": settings}
	v := c.Settings()
	setNum(settings, "stability", v.Stability)
	setNum(settings, "similarity_boost", v.SimilarityBoost)
	setNum(settings, "style", v.Style)
	setNum(settings, "speed", v.Speed)
	if v.UseSpeakerBoost != nil {
		settings["use_speaker_boost"] = *v.UseSpeakerBoost
	}
	n, ok := c.Normalization()
	if !ok {
		return call{}, fmt.Errorf("tts.providers.elevenlabs.applyTextNormalization %q is not auto, on or off: fix it in the config", n)
	}
	if n != "" {
		body["apply_text_normalization"] = n
	}
	l, ok := c.Language()
	if !ok {
		return call{}, fmt.Errorf("tts.providers.elevenlabs.languageCode %q is not a 2-letter ISO 639-1 code: fix it in the config", l)
	}
	if l != "" {
		body["language_code"] = l
	}
	if seed, ok := c.SeedValue(); ok {
		body["seed"] = seed
	}
	b, err := json.Marshal(body)
	if err != nil {
		return call{}, fmt.Errorf("encoding the request: %w", err)
	}
	h := http.Header{}
	h.Set("xi-api-key", key)
	h.Set("Content-Type", "application/json")
	if f == mp3 {
		h.Set("Accept", "audio/mpeg")
	}
	u := base + "/v1/text-to-speech/" + url.PathEscape(voice) + "?" + url.Values{"output_format": {wire}}.Encode()
	return call{provider: "elevenlabs", url: u, header: h, body: b, format: f, key: key}, nil
}

func setNum(m map[string]any, k string, v *float64) {
	if v != nil {
		m[k] = *v
	}
}

// request is c as an HTTP request.
func (c call) request(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return nil, fmt.Errorf("%s: building the request: %w", c.provider, err)
	}
	req.Header = c.header.Clone()
	return req, nil
}
