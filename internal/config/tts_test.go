package config

import (
	"strings"
	"testing"
)

// TestTTSCheck: the tts section's values are checked with errors naming
// the key; a provider Talon lacks is a warning (OpenClaw has it), and
// the defaults and legacy names read as OpenClaw reads them.
func TestTTSCheck(t *testing.T) {
	tests := []struct {
		name, src string
		errs      []string // "path: part of the message"
		warn      string
	}{
		{name: "both providers, legacy names", src: `{tts: {provider: "openai", maxTextLength: 4000, timeoutMs: 30000, providers: {
			openai: {apiKey: "${OPENAI_API_KEY}", baseUrl: "http://127.0.0.1:8080/v1", voice: "alloy", responseFormat: "WAV", speed: 9, extra_body: {lang: "en"}},
			elevenlabs: {apiKey: {source: "env", id: "XI"}, voiceId: "EXAVITQu4vr4xnSDxMaL", modelId: "eleven_turbo_v2", voiceSettings: {stability: 0, speed: 2}, seed: 0}}}}`},
		{name: "a provider Talon lacks", src: `{tts: {provider: "microsoft", providers: {microsoft: {speakerVoice: "en-US-MichelleNeural"}}}}`,
			warn: `tts.provider: "microsoft" is not built in Talon`},
		{name: "bounds", src: `{tts: {maxTextLength: 0, timeoutMs: 600001}}`,
			errs: []string{"tts.maxTextLength: expected 1 to 100000 characters (got 0)", "tts.timeoutMs: expected 1 to 600000 milliseconds (got 600001)"}},
		{name: "openai values", src: `{tts: {providers: {openai: {baseUrl: "file:///etc", responseFormat: "flac", extraBody: "lang=en"}}}}`,
			errs: []string{`tts.providers.openai.baseUrl: expected a http:// or https:// URL with a host (got "file:///etc")`,
				"tts.providers.openai.responseFormat: expected one of mp3, opus, wav", "tts.providers.openai.extraBody: expected an object"}},
		{name: "openai's own speed range", src: `{tts: {providers: {openai: {speed: 5}}}}`, errs: []string{"tts.providers.openai.speed: expected 0.25 to 4 (got 5)"}},
		{name: "elevenlabs values", src: `{tts: {providers: {elevenlabs: {baseUrl: "ftp://x", speakerVoiceId: "../../v1/user", applyTextNormalization: "maybe",
			languageCode: "eng", seed: -1, voiceSettings: {similarityBoost: 1.5, speed: 0.1}}}}}`,
			errs: []string{"tts.providers.elevenlabs.baseUrl: expected a http:// or https:// URL",
				`tts.providers.elevenlabs.speakerVoiceId: expected an ElevenLabs voice id: 10 to 40 letters and digits (got "../../v1/user")`,
				"tts.providers.elevenlabs.applyTextNormalization: expected one of auto, on, off", "tts.providers.elevenlabs.languageCode: expected a 2-letter",
				"tts.providers.elevenlabs.seed: expected 0 to 4294967295 (got -1)", "tts.providers.elevenlabs.voiceSettings.similarityBoost: expected 0 to 1 (got 1.5)",
				"tts.providers.elevenlabs.voiceSettings.speed: expected 0.5 to 2 (got 0.1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			if _, err := Decode(mustJSON5(t, tt.src), &c); err != nil && len(tt.errs) == 0 {
				t.Fatal(err)
			}
			errs, warns := check(&c)
			if len(errs) != len(tt.errs) {
				t.Fatalf("errors %v, want %d: %v", errs, len(tt.errs), tt.errs)
			}
			for i, want := range tt.errs {
				if got := errs[i].Path + ": " + errs[i].Message; !strings.Contains(got, want) {
					t.Errorf("error %q, want %q", got, want)
				}
			}
			if tt.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0].Path+": "+warns[0].Message, tt.warn)) {
				t.Errorf("warnings %v, want %q", warns, tt.warn)
			}
		})
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
