package discord

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzPayloads: whatever JSON a gateway sends as an INTERACTION_CREATE
// or a MESSAGE_CREATE, mapping it never panics; a press that maps has
// snowflake ids and a custom_id within Discord's limit as its text, and
// every attachment that becomes media has a fetchable http(s) URL and
// bounded name and MIME type.
func FuzzPayloads(f *testing.F) {
	f.Add([]byte(`{"id":"1","type":3,"token":"t","guild_id":"2","channel_id":"3","member":{"user":{"id":"4"},"roles":["5"]},"message":{"id":"6"},"data":{"custom_id":"/approve 1 deny","component_type":2}}`))
	f.Add([]byte(`{"id":"1","type":3,"token":"t","channel_id":"3","user":{"id":"4"},"message":{"id":"6","channel_id":"3"},"data":{"custom_id":"x","component_type":2}}`))
	f.Add([]byte(`{"id":"1","channel_id":"2","author":{"id":"3"},"flags":8192,"attachments":[{"id":"9","filename":"a.ogg","content_type":"audio/ogg","size":3,"url":"https://cdn.discordapp.com/attachments/2/9/a.ogg"}]}`))
	f.Add([]byte(`{"attachments":[{"url":"file:///etc/passwd","size":-1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var in interaction
		if json.Unmarshal(data, &in) == nil {
			if m, err := pressMessage(&in); err == nil {
				e, err := toEnvelope(&m, where{account: "a", botID: "99", ch: chanInfo{typ: chanGuildText}})
				if err == nil && (!snowflake(e.MessageID) || !snowflake(e.Peer.ID) || !snowflake(e.Sender.ID)) {
					t.Fatalf("press envelope with bad ids: %+v", e)
				}
				if err == nil && (e.Text == "" || utf8.RuneCountInString(e.Text) > maxCustomID) {
					t.Fatalf("press text %q", e.Text)
				}
			}
		}
		var m message
		if json.Unmarshal(data, &m) != nil {
			return
		}
		media := mediaOf(&m)
		if len(media) > maxAttachments {
			t.Fatalf("%d media", len(media))
		}
		for _, md := range media {
			if checkURL(md.Ref, "http", "https") != nil || len(md.Name) > maxMediaText || len(md.MIME) > maxMediaText || md.Size < 0 {
				t.Fatalf("media %+v", md)
			}
		}
	})
}
