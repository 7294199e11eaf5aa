package gateway

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"talon/internal/channel/telegram/tgtest"
	"talon/internal/tools/tts/ttstest"
)

// TestTTSVoiceNoteInTelegram: in a Telegram conversation the model's tts
// call asks the speech API for Ogg Opus and the audio arrives in the
// chat as a voice message (sendVoice), through the same channel path as
// the message tool's files; the model is told so.
func TestTTSVoiceNoteInTelegram(t *testing.T) {
	tg := tgtest.Start(t)
	api := ttstest.Start(t)
	_, _ = startWS(t, `,"tools":{"network":{"allowLoopback":true}},
		"tts":{"providers":{"openai":{"baseUrl":"`+api.URL+`/v1","apiKey":"sk-speech"}}},
		"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg.UserSays(tgtest.Say{From: tgtest.User{ID: 71, FirstName: "Ola"}, Text: `/call tts {"text":"Good morning, Ola."}`})
	const said = "; sent as a voice note to this telegram conversation]"
	answered := func() bool {
		for _, m := range tg.Sent() {
			if strings.Contains(m.Text, said) {
				return true
			}
		}
		return false
	}
	if err := tg.Wait(ctx, answered); err != nil {
		var got []string
		for _, m := range tg.Sent() {
			got = append(got, m.Text)
		}
		t.Fatalf("no answer saying %q: %v\n%s", said, err, strings.Join(got, "\n"))
	}
	ups := tg.Uploads()
	if len(ups) != 1 || ups[0].Method != "sendVoice" || !ups[0].Voice || ups[0].ChatID != "71" || ups[0].MIME != "audio/ogg" ||
		!strings.HasPrefix(ups[0].Name, "speech-") || !strings.HasSuffix(ups[0].Name, ".opus") || !bytes.Equal(ups[0].Data, ttstest.Opus()) {
		t.Fatalf("uploads %+v, want the speech as one voice message", ups)
	}
	reqs := api.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/audio/speech" || reqs[0].Body["response_format"] != "opus" ||
		reqs[0].Body["input"] != "Good morning, Ola." || reqs[0].Header.Get("Authorization") != "Bearer sk-speech" {
		t.Fatalf("speech requests %+v, want one for Opus", reqs)
	}
}
