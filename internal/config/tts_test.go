package config

import (
	"strings"
	"testing"
)

// TestTTSCheck: Talon loads every tts section OpenClaw loads. A value
// OpenClaw passes over or refuses only when it speaks is a warning
// naming the key and what happens to it; only a value unsafe to load
// (a URL that is not http, a voice id that would change the request
// path) is an error. The defaults and legacy names read as OpenClaw
// reads them.
func TestTTSCheck(t *testing.T) {
	tests := []struct {
		name, src string
		errs      []string // "path: part of the message"
		warns     []string
	}{
		{name: "both providers, legacy names", src: `{tts: {provider: "openai", maxTextLength: 4000, timeoutMs: 30000, providers: {
			openai: {apiKey: "${OPENAI_API_KEY}", baseUrl: "http://127.0.0.1:8080/v1", voice: "alloy", responseFormat: "WAV", speed: 9, extra_body: {lang: "en"}},
			elevenlabs: {apiKey: {source: "env", id: "XI"}, voiceId: "EXAVITQu4vr4xnSDxMaL", modelId: "eleven_turbo_v2", voiceSettings: {stability: 0, speed: 2}, seed: 0}}}}`},
		{name: "a provider Talon lacks", src: `{tts: {provider: "microsoft", providers: {microsoft: {speakerVoice: "en-US-MichelleNeural"}}}}`,
			warns: []string{`tts.provider: "microsoft" is not built in Talon`}},
		{name: "bounds", src: `{tts: {maxTextLength: 0, timeoutMs: 600001}}`,
			errs: []string{"tts.maxTextLength: expected 1 to 100000 characters (got 0)", "tts.timeoutMs: expected 1 to 600000 milliseconds (got 600001)"}},
		{name: "a text bound over Talon's", src: `{tts: {maxTextLength: 250000}}`,
			warns: []string{"tts.maxTextLength: 250000 is over Talon's 100000 characters a call: 100000 apply"}},
		{name: "openai: a URL that is not http is an error, the rest warnings",
			src:  `{tts: {providers: {openai: {baseUrl: "file:///etc", responseFormat: "flac", extraBody: "lang=en"}}}}`,
			errs: []string{`tts.providers.openai.baseUrl: expected a http:// or https:// URL with a host (got "file:///etc")`},
			warns: []string{`tts.providers.openai.responseFormat: expected one of mp3, opus, wav (got "flac"): the tts tool refuses`,
				"tts.providers.openai.extraBody: not an object of extra request fields: ignored"}},
		{name: "openai's own speed range", src: `{tts: {providers: {openai: {speed: 5}}}}`,
			warns: []string{"tts.providers.openai.speed: OpenAI's own API takes 0.25 to 4 (got 5): ignored, the request goes without a speed"}},
		{name: "elevenlabs: a path escape is an error, the rest warnings",
			src: `{tts: {providers: {elevenlabs: {baseUrl: "ftp://x", speakerVoiceId: "../../v1/user", voiceId: "short", applyTextNormalization: "maybe",
			languageCode: "eng", seed: -1, voiceSettings: {similarityBoost: 1.5, speed: 0.1, style: 1}}}}}`,
			errs: []string{"tts.providers.elevenlabs.baseUrl: expected a http:// or https:// URL",
				`tts.providers.elevenlabs.speakerVoiceId: expected an ElevenLabs voice id: 10 to 40 letters and digits (got "../../v1/user", which would change the request's path)`},
			warns: []string{`tts.providers.elevenlabs.voiceId: expected an ElevenLabs voice id: 10 to 40 letters and digits (got "short"): the tts tool refuses`,
				`tts.providers.elevenlabs.applyTextNormalization: expected one of auto, on, off (got "maybe"): the tts tool refuses`,
				`tts.providers.elevenlabs.languageCode: expected a 2-letter ISO 639-1 code such as en (got "eng"): the tts tool refuses`,
				"tts.providers.elevenlabs.seed: expected an integer from 0 to 4294967295 (got -1): ignored",
				"tts.providers.elevenlabs.voiceSettings.similarityBoost: expected 0 to 1 (got 1.5): ignored, ElevenLabs' default applies",
				"tts.providers.elevenlabs.voiceSettings.speed: expected 0.5 to 2 (got 0.1): ignored"}},
		{name: "a seed that is not an integer loads", src: `{tts: {providers: {elevenlabs: {seed: 4.5}}}}`,
			warns: []string{"tts.providers.elevenlabs.seed: expected an integer from 0 to 4294967295 (got 4.5): ignored"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			if _, err := Decode(mustJSON5(t, tt.src), &c); err != nil && len(tt.errs) == 0 {
				t.Fatal(err)
			}
			errs, warns := check(&c)
			for _, x := range []struct {
				kind string
				got  []Issue
				want []string
			}{{"errors", errs, tt.errs}, {"warnings", warns, tt.warns}} {
				if len(x.got) != len(x.want) {
					t.Fatalf("%s %v, want %d: %v", x.kind, x.got, len(x.want), x.want)
				}
				for i, want := range x.want {
					if got := x.got[i].Path + ": " + x.got[i].Message; !strings.Contains(got, want) {
						t.Errorf("%s %d: %q, want %q", x.kind, i, got, want)
					}
				}
			}
		})
	}
}

// TestTTSIgnored: what a warned-about value gives the tool: nothing in
// its place, or the bound.
func TestTTSIgnored(t *testing.T) {
	c, _, err := decodeJSON5(t, `{tts: {maxTextLength: 250000, providers: {
		openai: {speed: 5, extraBody: "x", extra_body: {lang: "en"}, responseFormat: "FLAC"},
		elevenlabs: {seed: 4.5, applyTextNormalization: "On", languageCode: "eng", voiceSettings: {stability: 0.3, similarityBoost: 1.5, speed: 0.1}}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	o, e := c.TTS.Providers.OpenAI, c.TTS.Providers.ElevenLabs
	format, formatOK := o.Format()
	_, seedOK := e.SeedValue()
	norm, normOK := e.Normalization()
	_, langOK := e.Language()
	v := e.Settings()
	got := []any{c.TTS.MaxText(), o.SpeedValue() == nil, string(o.Extra().Members[0].Key), format, formatOK, seedOK, norm, normOK, langOK,
		*v.Stability, v.SimilarityBoost == nil, v.Speed == nil, *e.VoiceSettings.SimilarityBoost}
	want := []any{100000, true, "lang", "flac", false, false, "on", true, false, 0.3, true, true, 1.5}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d: %v, want %v", i, got[i], want[i])
		}
	}
	// A compatible server takes any speed.
	c, _, _ = decodeJSON5(t, `{tts: {providers: {openai: {baseUrl: "http://127.0.0.1:8880/v1", speed: 5}}}}`)
	if s := c.TTS.Providers.OpenAI.SpeedValue(); s == nil || *s != 5 {
		t.Errorf("speed on a compatible server: %v, want 5", s)
	}
}

// TestTTSDefaults: what the tool gets from an empty section and from
// OpenClaw's legacy names.
func TestTTSDefaults(t *testing.T) {
	c, _, err := decodeJSON5(t, `{tts: {providers: {openai: {voice: "alloy", baseUrl: "https://api.openai.com/v1/"},
		elevenlabs: {voiceId: "EXAVITQu4vr4xnSDxMaL", modelId: "eleven_turbo_v2_5", baseUrl: "https://xi.example/"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	var empty TTS
	o, e := c.TTS.Providers.OpenAI, c.TTS.Providers.ElevenLabs
	ou, own := o.URL()
	eu, eOwn := e.URL()
	got := []any{empty.MaxText(), empty.Timeout().String(), empty.Providers.OpenAI.VoiceName(), empty.Providers.OpenAI.ModelName(),
		empty.Providers.ElevenLabs.Voice(), empty.Providers.ElevenLabs.ModelName(),
		o.VoiceName(), ou, own, e.Voice(), e.ModelName(), eu, eOwn}
	want := []any{4096, "30s", "coral", "gpt-4o-mini-tts", "pMsXgVXv3BLzUgSXRplE", "eleven_multilingual_v2",
		"alloy", "https://api.openai.com/v1", true, "EXAVITQu4vr4xnSDxMaL", "eleven_flash_v2_5", "https://xi.example", false}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d: %v, want %v", i, got[i], want[i])
		}
	}
}
