package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// TTS is the `tts` section (OpenClaw 2026.9.6 moved it there from
// messages.tts): the speech provider of the tts tool. Talon builds the
// openai provider (any OpenAI-compatible /audio/speech endpoint) and
// elevenlabs; the other providers' blocks, auto-TTS of replies (auto,
// mode, summaryModel), personas and model directives (modelOverrides)
// are kept and reported unused (unused.go).
type TTS struct {
	// Provider is the speech provider id; "" picks the first of openai
	// and elevenlabs that has a key, as OpenClaw's auto-select does.
	Provider string `json:"provider"`
	// MaxTextLength caps the characters of one request (default 4096).
	MaxTextLength *int `json:"maxTextLength"`
	// TimeoutMs bounds one provider request (default 30000); a call's
	// own timeoutMs wins.
	TimeoutMs *int         `json:"timeoutMs"`
	Providers TTSProviders `json:"providers"`
	Rest      *Raw         `talon:"rest"`
}

// TTSProviders are `tts.providers`, keyed by speech provider id.
type TTSProviders struct {
	OpenAI     *TTSOpenAI     `json:"openai"`
	ElevenLabs *TTSElevenLabs `json:"elevenlabs"`
	Rest       *Raw           `talon:"rest"`
}

// TTSOpenAI is `tts.providers.openai`: OpenAI's speech API or any
// server that speaks it (a base URL that is not OpenAI's own accepts any
// model and voice name).
type TTSOpenAI struct {
	APIKey *Secret `json:"apiKey"`
	// BaseURL ends before /audio/speech (default
	// https://api.openai.com/v1).
	BaseURL      string   `json:"baseUrl"`
	Model        string   `json:"model"`
	SpeakerVoice string   `json:"speakerVoice"`
	Voice        string   `json:"voice"` // the legacy name of SpeakerVoice
	Speed        *float64 `json:"speed"`
	Instructions string   `json:"instructions"`
	// ResponseFormat is mp3, opus or wav; "" lets the tool choose (opus
	// for a voice note, else mp3).
	ResponseFormat string `json:"responseFormat"`
	// ExtraBody is merged into the request JSON after the fields the
	// tool sets; extra_body is its other spelling.
	ExtraBody      *Raw `json:"extraBody"`
	ExtraBodySnake *Raw `json:"extra_body"`
	Rest           *Raw `talon:"rest"`
}

// TTSElevenLabs is `tts.providers.elevenlabs`.
type TTSElevenLabs struct {
	APIKey *Secret `json:"apiKey"`
	// BaseURL is the API's origin (default https://api.elevenlabs.io).
	BaseURL        string                   `json:"baseUrl"`
	Model          string                   `json:"model"`
	ModelID        string                   `json:"modelId"` // the legacy name of Model
	SpeakerVoiceID string                   `json:"speakerVoiceId"`
	VoiceID        string                   `json:"voiceId"` // the legacy name of SpeakerVoiceID
	VoiceSettings  *ElevenLabsVoiceSettings `json:"voiceSettings"`
	// ApplyTextNormalization is auto, on or off.
	ApplyTextNormalization string `json:"applyTextNormalization"`
	// LanguageCode is ISO 639-1, two letters.
	LanguageCode string `json:"languageCode"`
	Seed         *int64 `json:"seed"`
	Rest         *Raw   `talon:"rest"`
}

// ElevenLabsVoiceSettings are ElevenLabs' voice_settings.
type ElevenLabsVoiceSettings struct {
	Stability       *float64 `json:"stability"`
	SimilarityBoost *float64 `json:"similarityBoost"`
	Style           *float64 `json:"style"`
	UseSpeakerBoost *bool    `json:"useSpeakerBoost"`
	Speed           *float64 `json:"speed"`
}

// Defaults of the tts section (OpenClaw's).
const (
	DefaultTTSMaxText      = 4096
	DefaultTTSTimeout      = 30 * time.Second
	DefaultOpenAITTSURL    = "https://api.openai.com/v1"
	DefaultOpenAITTSModel  = "gpt-4o-mini-tts"
	DefaultOpenAITTSVoice  = "coral"
	DefaultElevenLabsURL   = "https://api.elevenlabs.io"
	DefaultElevenLabsModel = "eleven_multilingual_v2"
	DefaultElevenLabsVoice = "pMsXgVXv3BLzUgSXRplE"
	// maxTTSText and maxTTSTimeout bound what a config may ask: no
	// provider takes more in one request, and a call must end.
	maxTTSText    = 100_000
	maxTTSTimeout = 10 * time.Minute
)

// TTSProviderIDs are the providers the tts tool speaks through, in
// auto-select order.
var TTSProviderIDs = []string{"openai", "elevenlabs"}

// OpenAIFormats are the response formats the tts tool asks OpenAI for.
var OpenAIFormats = []string{"mp3", "opus", "wav"}

// elevenLabsVoiceRE is ElevenLabs' voice id; it goes into the request
// path, so nothing else may.
var elevenLabsVoiceRE = regexp.MustCompile(`^[a-zA-Z0-9]{10,40}$`)

var languageRE = regexp.MustCompile(`^[a-zA-Z]{2}$`)

// ElevenLabsVoiceID says s is an ElevenLabs voice id.
func ElevenLabsVoiceID(s string) bool { return elevenLabsVoiceRE.MatchString(s) }

// MaxText is the longest text one call may speak.
func (t *TTS) MaxText() int {
	if t == nil || t.MaxTextLength == nil {
		return DefaultTTSMaxText
	}
	return *t.MaxTextLength
}

// Timeout bounds one provider request.
func (t *TTS) Timeout() time.Duration {
	if t == nil || t.TimeoutMs == nil {
		return DefaultTTSTimeout
	}
	return time.Duration(*t.TimeoutMs) * time.Millisecond
}

// URL is the base URL and whether it is OpenAI's own.
func (o *TTSOpenAI) URL() (string, bool) { return baseURL(o.base(), DefaultOpenAITTSURL) }

func (o *TTSOpenAI) base() string {
	if o == nil {
		return ""
	}
	return o.BaseURL
}

// VoiceName is the configured voice or the default.
func (o *TTSOpenAI) VoiceName() string {
	if o == nil {
		return DefaultOpenAITTSVoice
	}
	return firstOf(o.SpeakerVoice, o.Voice, DefaultOpenAITTSVoice)
}

// ModelName is the configured model or the default.
func (o *TTSOpenAI) ModelName() string {
	if o == nil {
		return DefaultOpenAITTSModel
	}
	return firstOf(o.Model, DefaultOpenAITTSModel)
}

// URL is the base URL and whether it is ElevenLabs' own.
func (e *TTSElevenLabs) URL() (string, bool) {
	if e == nil {
		return DefaultElevenLabsURL, true
	}
	return baseURL(e.BaseURL, DefaultElevenLabsURL)
}

// Voice is the configured voice id or the default.
func (e *TTSElevenLabs) Voice() string {
	if e == nil {
		return DefaultElevenLabsVoice
	}
	return firstOf(e.SpeakerVoiceID, e.VoiceID, DefaultElevenLabsVoice)
}

// ModelName is the configured model or the default; the retired turbo
// ids name their flash successors, as in OpenClaw.
func (e *TTSElevenLabs) ModelName() string {
	m := DefaultElevenLabsModel
	if e != nil {
		m = firstOf(e.Model, e.ModelID, m)
	}
	switch m {
	case "eleven_turbo_v2_5":
		return "eleven_flash_v2_5"
	case "eleven_turbo_v2":
		return "eleven_flash_v2"
	}
	return m
}

// baseURL trims a configured base URL's trailing slashes, or gives def;
// the bool says the result is def, the provider's own host.
func baseURL(configured, def string) (string, bool) {
	u := strings.TrimRight(strings.TrimSpace(configured), "/")
	if u == "" || u == def {
		return def, true
	}
	return u, false
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// tts checks the tts section.
func (k *checker) tts(t *TTS) {
	if p := t.Provider; p != "" && !slices.Contains(TTSProviderIDs, strings.ToLower(strings.TrimSpace(p))) {
		k.warns = append(k.warns, Issue{Path: "tts.provider",
			Message: fmt.Sprintf("%q is not built in Talon: the tts tool speaks through %s", p, strings.Join(TTSProviderIDs, " or "))})
	}
	if n := t.MaxTextLength; n != nil && (*n < 1 || *n > maxTTSText) {
		k.fail("tts.maxTextLength", fmt.Sprintf("expected 1 to %d characters (got %d)", maxTTSText, *n))
	}
	if n := t.TimeoutMs; n != nil && (*n < 1 || *n > int(maxTTSTimeout/time.Millisecond)) {
		k.fail("tts.timeoutMs", fmt.Sprintf("expected 1 to %d milliseconds (got %d)", maxTTSTimeout/time.Millisecond, *n))
	}
	if o := t.Providers.OpenAI; o != nil {
		const at = "tts.providers.openai"
		k.httpURL(at+".baseUrl", strings.TrimSpace(o.BaseURL), "http", "https")
		if f := o.ResponseFormat; f != "" && !slices.Contains(OpenAIFormats, strings.ToLower(f)) {
			k.fail(at+".responseFormat", fmt.Sprintf("expected one of %s (got %q)", strings.Join(OpenAIFormats, ", "), f))
		}
		if _, own := o.URL(); own && o.Speed != nil {
			k.rangeOf(at+".speed", *o.Speed, 0.25, 4)
		}
		for _, x := range []struct {
			key string
			v   *Raw
		}{{"extraBody", o.ExtraBody}, {"extra_body", o.ExtraBodySnake}} {
			if x.v != nil && x.v.Value != nil && x.v.Kind != Object {
				k.fail(at+"."+x.key, "expected an object of extra request fields")
			}
		}
	}
	if e := t.Providers.ElevenLabs; e != nil {
		k.elevenLabs("tts.providers.elevenlabs", e)
	}
}

func (k *checker) elevenLabs(at string, e *TTSElevenLabs) {
	k.httpURL(at+".baseUrl", strings.TrimSpace(e.BaseURL), "http", "https")
	for _, key := range []struct{ name, v string }{{"speakerVoiceId", e.SpeakerVoiceID}, {"voiceId", e.VoiceID}} {
		if key.v != "" && !elevenLabsVoiceRE.MatchString(key.v) {
			k.fail(at+"."+key.name, fmt.Sprintf("expected an ElevenLabs voice id: 10 to 40 letters and digits (got %q)", key.v))
		}
	}
	k.oneOf(at+".applyTextNormalization", strings.ToLower(e.ApplyTextNormalization), []string{"auto", "on", "off"})
	if c := e.LanguageCode; c != "" && !languageRE.MatchString(c) {
		k.fail(at+".languageCode", fmt.Sprintf("expected a 2-letter ISO 639-1 code such as en (got %q)", c))
	}
	if s := e.Seed; s != nil && (*s < 0 || *s > 4294967295) {
		k.fail(at+".seed", fmt.Sprintf("expected 0 to 4294967295 (got %d)", *s))
	}
	if v := e.VoiceSettings; v != nil {
		for _, f := range []struct {
			key      string
			v        *float64
			min, max float64
		}{{"stability", v.Stability, 0, 1}, {"similarityBoost", v.SimilarityBoost, 0, 1}, {"style", v.Style, 0, 1}, {"speed", v.Speed, 0.5, 2}} {
			if f.v != nil {
				k.rangeOf(at+".voiceSettings."+f.key, *f.v, f.min, f.max)
			}
		}
	}
}

func (k *checker) rangeOf(path string, v, min, max float64) {
	if v < min || v > max {
		k.fail(path, fmt.Sprintf("expected %g to %g (got %g)", min, max, v))
	}
}
