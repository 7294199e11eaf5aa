package telegram

import (
	"testing"
	"time"
)

// FuzzUpdate feeds raw updates, as Telegram or anyone posting to the
// webhook with the secret might send them, through decoding and mapping:
// nothing may panic, and what is taken keeps the Envelope's promises.
func FuzzUpdate(f *testing.F) {
	for _, seed := range []string{
		`{"update_id":1,"message":{"message_id":2,"from":{"id":3,"first_name":"A"},"chat":{"id":3,"type":"private"},"date":1,"text":"hi"}}`,
		`{"update_id":1,"message":{"message_id":2,"from":{"id":3},"chat":{"id":-5,"type":"supergroup","is_forum":true},"date":1,"caption":"@b x","caption_entities":[{"type":"mention","offset":0,"length":2}],"photo":[{"file_id":"a","width":1,"height":1},{"file_id":"b","width":9,"height":9,"file_size":-1}]}}`,
		`{"update_id":1,"message":{"message_id":2,"from":{"id":3},"chat":{"id":3,"type":"private"},"date":1,"sticker":{"file_id":"s","is_video":true},"voice":{"file_id":"v"}}}`,
		`{"update_id":1,"callback_query":{"id":"q","from":{"id":3},"data":"/approve x deny","message":{"message_id":2,"chat":{"id":-5,"type":"group"},"date":1,"message_thread_id":4,"is_topic_message":true}}}`,
		`{"update_id":1,"callback_query":{"id":"q","from":{"id":3},"data":"d","message":{"message_id":2,"chat":{"id":3,"type":"private"},"date":0}}}`,
	} {
		f.Add([]byte(seed))
	}
	bot := Info{ID: 9, Username: "talon_bot", HasTopicsEnabled: true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		u, err := decodeUpdate(raw)
		if err != nil {
			return
		}
		if q := u.CallbackQuery; q != nil {
			e, ok := pressEnvelope(u.UpdateID, q, bot, "a", time.Unix(1, 0))
			if ok && (!e.Pressed || !e.Mentioned || e.Text == "" || e.MessageID == "" || e.Sender.ID == "" || e.Peer.ID == "") {
				t.Fatalf("press envelope %+v", e)
			}
			return
		}
		e, ok := toEnvelope(u, bot, "a")
		if !ok {
			return
		}
		if e.Text == "" && len(e.Media) == 0 || e.Peer.ID == "" || e.Sender.ID == "" {
			t.Fatalf("envelope %+v", e)
		}
		for _, m := range e.Media {
			if m.Ref == "" || m.Size < 0 || m.Kind == "" {
				t.Fatalf("media %+v", m)
			}
		}
	})
}
