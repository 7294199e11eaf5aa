package slack

import (
	"encoding/json"
	"net/url"
	"testing"
	"unicode/utf8"

	"talon/internal/channel"
)

// FuzzPayloads: whatever bytes arrive as a button press or as a message's
// files, the mapping does not panic, and what it keeps is well formed: a
// press has a valid presser, conversation, message id and a non-empty
// UTF-8 text; a file has an absolute http(s) Ref and bounded UTF-8 text.
func FuzzPayloads(f *testing.F) {
	f.Add([]byte(`{"type":"block_actions","trigger_id":"1.2.ab","user":{"id":"U1","username":"a"},"channel":{"id":"C1"},`+
		`"container":{"message_ts":"1.1","thread_ts":"1.0"},"message":{"ts":"1.1"},`+
		`"actions":[{"type":"button","value":"/approve x deny","action_ts":"2.2"}]}`),
		[]byte(`[{"name":"a.png","mimetype":"image/png","size":3,"url_private":"https://files.slack.com/a"}]`))
	f.Add([]byte(`{"type":"block_actions","user":{"id":""},"actions":[{}]}`), []byte(`[{"mode":"tombstone"},{"url_private":"x:y"}]`))
	f.Add([]byte(`null`), []byte(`[{"name":"\xff","subtype":"slack_audio","url_private_download":"http://h/p","size":-1}]`))
	f.Fuzz(func(t *testing.T, press, files []byte) {
		var in interaction
		if json.Unmarshal(press, &in) == nil {
			for _, kind := range []channel.Kind{channel.Direct, channel.Group, channel.Room} {
				e, ok := pressEnvelope("work", in, kind)
				if !ok {
					continue
				}
				if !validID(e.Sender.ID) || !validID(e.Peer.ID) || !tsRE.MatchString(e.MessageID) || e.DeliveryID == "" ||
					e.Text == "" || !utf8.ValidString(e.Text) || !e.Pressed || !e.Mentioned ||
					(e.ThreadID != "" && !tsRE.MatchString(e.ThreadID)) {
					t.Fatalf("press envelope %+v", e)
				}
			}
		}
		var fs []file
		if json.Unmarshal(files, &fs) != nil {
			return
		}
		ms := mediaOf(fs)
		if len(ms) > maxFiles {
			t.Fatalf("%d files kept", len(ms))
		}
		for _, m := range ms {
			u, err := url.Parse(m.Ref)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || m.Size < 0 ||
				!utf8.ValidString(m.Name) || len(m.Name) > 255 || !utf8.ValidString(m.MIME) || len(m.MIME) > 255 || m.Kind == "" {
				t.Fatalf("media %+v", m)
			}
		}
	})
}
