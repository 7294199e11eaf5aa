package config

import (
	"fmt"
	"math"
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
	// Seed is a number so that any OpenClaw loads loads here; only an
	// integer of 0 to 2³²−1 is sent (SeedValue).
	Seed *float64 `json:"seed"`
	Rest *Raw     `talon:"rest"`
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

// MaxText is the longest text one call may speak: maxTextLength, at
// most Talon's bound.
func (t *TTS) MaxText() int {
	if t == nil || t.MaxTextLength == nil {
		return DefaultTTSMaxText
	}
	return min(*t.MaxTextLength, maxTTSText)
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

// SpeedValue is the speed sent to the provider: OpenAI's own host takes
// 0.25 to 4, so another value there is left out, as OpenClaw leaves it
// out; a compatible server gets any.
func (o *TTSOpenAI) SpeedValue() *float64 {
	if o == nil || o.Speed == nil {
		return nil
	}
	if _, own := o.URL(); own && (*o.Speed < 0.25 || *o.Speed > 4) {
		return nil
	}
	return o.Speed
}

// Extra is the object merged into the request: extraBody, else
// extra_body; one that is not an object with fields is passed over, as
// OpenClaw passes it over.
func (o *TTSOpenAI) Extra() *Raw {
	if o == nil {
		return nil
	}
	for _, r := range []*Raw{o.ExtraBody, o.ExtraBodySnake} {
		if r != nil && r.Value != nil && r.Kind == Object && len(r.Members) > 0 {
			return r
		}
	}
	return nil
}

// Format is the configured response format, lower case; ok is false for
// one the tool cannot ask for (the call is refused, as OpenClaw refuses
// it).
func (o *TTSOpenAI) Format() (f string, ok bool) {
	if o == nil {
		return "", true
	}
	f = strings.ToLower(strings.TrimSpace(o.ResponseFormat))
	return f, f == "" || slices.Contains(OpenAIFormats, f)
}

// voiceSettingRanges are ElevenLabs' bounds of each voice setting.
var voiceSettingRanges = map[string][2]float64{"stability": {0, 1}, "similarityBoost": {0, 1}, "style": {0, 1}, "speed": {0.5, 2}}

// Settings are the voice settings sent: each one outside ElevenLabs'
// range is left at its default, as OpenClaw leaves it.
func (e *TTSElevenLabs) Settings() ElevenLabsVoiceSettings {
	if e == nil || e.VoiceSettings == nil {
		return ElevenLabsVoiceSettings{}
	}
	v := *e.VoiceSettings
	for key, p := range v.numbers() {
		if r := voiceSettingRanges[key]; *p != nil && (**p < r[0] || **p > r[1]) {
			*p = nil
		}
	}
	return v
}

// numbers are v's numeric settings by key.
func (v *ElevenLabsVoiceSettings) numbers() map[string]**float64 {
	return map[string]**float64{"stability": &v.Stability, "similarityBoost": &v.SimilarityBoost, "style": &v.Style, "speed": &v.Speed}
}

// SeedValue is the seed sent: an integer of 0 to 2³²−1; another value
// is left out, as OpenClaw leaves it out.
func (e *TTSElevenLabs) SeedValue() (int64, bool) {
	if e == nil || e.Seed == nil {
		return 0, false
	}
	s := *e.Seed
	if s != math.Trunc(s) || s < 0 || s > math.MaxUint32 {
		return 0, false
	}
	return int64(s), true
}

// Normalization is applyTextNormalization, lower case; ok is false for
// a value ElevenLabs does not take (the call is refused, as OpenClaw
// refuses it).
func (e *TTSElevenLabs) Normalization() (n string, ok bool) {
	if e == nil {
		return "", true
	}
	n = strings.ToLower(strings.TrimSpace(e.ApplyTextNormalization))
	return n, n == "" || n == "auto" || n == "on" || n == "off"
}

// Language is languageCode, lower case; ok is false for one that is not
// two letters (the call is refused, as OpenClaw refuses it).
func (e *TTSElevenLabs) Language() (l string, ok bool) {
	if e == nil {
		return "", true
	}
	l = strings.ToLower(strings.TrimSpace(e.LanguageCode))
	return l, l == "" || languageRE.MatchString(l)
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

// tts checks the tts section. Talon loads every tts section OpenClaw
// loads: a value OpenClaw passes over, or refuses only when it speaks,
// is a warning naming the key and what happens to it; only one that
// would be unsafe to load (a URL that is not http, a voice id that
// would change the request's path) is an error.
func (k *checker) tts(t *TTS) {
	if p := t.Provider; p != "" && !slices.Contains(TTSProviderIDs, strings.ToLower(strings.TrimSpace(p))) {
		k.warn("tts.provider", fmt.Sprintf("%q is not built in Talon: the tts tool speaks through %s", p, strings.Join(TTSProviderIDs, " or ")))
	}
	switch n := t.MaxTextLength; {
	case n == nil:
	case *n < 1:
		k.fail("tts.maxTextLength", fmt.Sprintf("expected 1 to %d characters (got %d)", maxTTSText, *n))
	case *n > maxTTSText:
		k.warn("tts.maxTextLength", fmt.Sprintf("%d is over Talon's %d characters a call: %d apply", *n, maxTTSText, maxTTSText))
	}
	if n := t.TimeoutMs; n != nil && (*n < 1 || *n > int(maxTTSTimeout/time.Millisecond)) {
		k.fail("tts.timeoutMs", fmt.Sprintf("expected 1 to %d milliseconds (got %d)", maxTTSTimeout/time.Millisecond, *n))
	}
	if o := t.Providers.OpenAI; o != nil {
		k.openAITTS("tts.providers.openai", o)
	}
	if e := t.Providers.ElevenLabs; e != nil {
		k.elevenLabs("tts.providers.elevenlabs", e)
	}
}

// refused is the warning's tail for a value OpenClaw loads but refuses
// when it speaks; the tool refuses it the same way.
const refused = ": the tts tool refuses to speak through this provider until it is fixed, as OpenClaw does"

func (k *checker) openAITTS(at string, o *TTSOpenAI) {
	k.httpURL(at+".baseUrl", strings.TrimSpace(o.BaseURL), "http", "https")
	if f, ok := o.Format(); !ok {
		k.warn(at+".responseFormat", fmt.Sprintf("expected one of %s (got %q)%s", strings.Join(OpenAIFormats, ", "), f, refused))
	}
	if o.Speed != nil && o.SpeedValue() == nil {
		k.warn(at+".speed", fmt.Sprintf("OpenAI's own API takes 0.25 to 4 (got %g): ignored, the request goes without a speed", *o.Speed))
	}
	for _, x := range []struct {
		key string
		v   *Raw
	}{{"extraBody", o.ExtraBody}, {"extra_body", o.ExtraBodySnake}} {
		if x.v != nil && x.v.Value != nil && x.v.Kind != Object {
			k.warn(at+"."+x.key, "not an object of extra request fields: ignored")
		}
	}
}

// voiceIDSafeRE is what a voice id may hold to be loaded at all: it
// goes into the request path, which nothing else may change.
var voiceIDSafeRE = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)

func (k *checker) elevenLabs(at string, e *TTSElevenLabs) {
	k.httpURL(at+".baseUrl", strings.TrimSpace(e.BaseURL), "http", "https")
	for _, key := range []struct{ name, v string }{{"speakerVoiceId", e.SpeakerVoiceID}, {"voiceId", e.VoiceID}} {
		switch {
		case key.v == "" || elevenLabsVoiceRE.MatchString(key.v):
		case !voiceIDSafeRE.MatchString(key.v):
			k.fail(at+"."+key.name, fmt.Sprintf("expected an ElevenLabs voice id: 10 to 40 letters and digits (got %q, which would change the request's path)", key.v))
		default:
			k.warn(at+"."+key.name, fmt.Sprintf("expected an ElevenLabs voice id: 10 to 40 letters and digits (got %q)%s", key.v, refused))
		}
	}
	if n, ok := e.Normalization(); !ok {
		k.warn(at+".applyTextNormalization", fmt.Sprintf("expected one of auto, on, off (got %q)%s", n, refused))
	}
	if l, ok := e.Language(); !ok {
		k.warn(at+".languageCode", fmt.Sprintf("expected a 2-letter ISO 639-1 code such as en (got %q)%s", l, refused))
	}
	if _, ok := e.SeedValue(); e.Seed != nil && !ok {
		k.warn(at+".seed", fmt.Sprintf("expected an integer from 0 to 4294967295 (got %g): ignored, the request goes without a seed", *e.Seed))
	}
	if e.VoiceSettings != nil {
		kept := e.Settings()
		given := *e.VoiceSettings
		for _, key := range []string{"stability", "similarityBoost", "style", "speed"} {
			if p, r := *given.numbers()[key], voiceSettingRanges[key]; p != nil && *kept.numbers()[key] == nil {
				k.warn(at+".voiceSettings."+key, fmt.Sprintf("expected %g to %g (got %g): ignored, ElevenLabs' default applies", r[0], r[1], *p))
			}
		}
	}
}

// warn records a value that loads but is ignored or refused later.
func (k *checker) warn(path, msg string) {
	k.warns = append(k.warns, Issue{Path: path, Message: msg})
}
