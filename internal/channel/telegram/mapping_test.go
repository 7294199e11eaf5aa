package telegram

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/channel"
)

var testBot = Info{ID: 99, Username: "talon_bot", Name: "Talon"}

// dm is a private message from Ann (in TestToEnvelope's updates).
func dm(update, msg, text string, media ...channel.Media) *channel.Envelope {
	return &channel.Envelope{DeliveryID: update, MessageID: msg, Peer: channel.Peer{Kind: channel.Direct, ID: "42"},
		Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: text, Media: media}
}

func media(ref, name, mime string, size int64, kind string) channel.Media {
	return channel.Media{Ref: ref, Name: name, MIME: mime, Size: size, Kind: kind}
}

func TestToEnvelope(t *testing.T) {
	ann := `"from":{"id":42,"is_bot":false,"first_name":"Ann","last_name":"Lee","username":"ann"}`
	tests := []struct {
		name   string
		update string
		bot    Info
		want   *channel.Envelope // nil: ignored
	}{
		{
			name:   "private",
			update: `{"update_id":7,"message":{"message_id":3,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"text":"hello"}}`,
			want: &channel.Envelope{DeliveryID: "7", MessageID: "3", Peer: channel.Peer{Kind: channel.Direct, ID: "42"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "hello"},
		},
		{
			name:   "group mention after an emoji counts UTF-16 units",
			update: `{"update_id":8,"message":{"message_id":4,` + ann + `,"chat":{"id":-100200,"type":"supergroup","title":"Ops"},"date":1700000000,"text":"😀 @Talon_Bot hi","entities":[{"type":"mention","offset":3,"length":10}]}}`,
			want: &channel.Envelope{DeliveryID: "8", MessageID: "4", Peer: channel.Peer{Kind: channel.Group, ID: "-100200"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "😀 @Talon_Bot hi", Mentioned: true, RoomLabel: "Ops"},
		},
		{
			name:   "mention of someone else",
			update: `{"update_id":9,"message":{"message_id":5,` + ann + `,"chat":{"id":-5,"type":"group","title":"G"},"date":1700000000,"text":"@someone_else hi","entities":[{"type":"mention","offset":0,"length":13}]}}`,
			want: &channel.Envelope{DeliveryID: "9", MessageID: "5", Peer: channel.Peer{Kind: channel.Group, ID: "-5"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "@someone_else hi", MentionsOthers: true, RoomLabel: "G"},
		},
		{
			name:   "text_mention of the bot and a command to it",
			update: `{"update_id":10,"message":{"message_id":6,` + ann + `,"chat":{"id":-5,"type":"group"},"date":1700000000,"text":"/status@talon_bot Talon","entities":[{"type":"bot_command","offset":0,"length":17},{"type":"text_mention","offset":18,"length":5,"user":{"id":99,"is_bot":true,"first_name":"Talon"}}]}}`,
			want: &channel.Envelope{DeliveryID: "10", MessageID: "6", Peer: channel.Peer{Kind: channel.Group, ID: "-5"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "/status@talon_bot Talon", Mentioned: true},
		},
		{
			name:   "reply to the bot is a mention",
			update: `{"update_id":11,"message":{"message_id":8,` + ann + `,"chat":{"id":-5,"type":"group"},"date":1700000000,"text":"and then?","reply_to_message":{"message_id":7,"from":{"id":99,"is_bot":true,"first_name":"Talon"},"chat":{"id":-5,"type":"group"},"date":1,"text":"earlier answer"}}}`,
			want: &channel.Envelope{DeliveryID: "11", MessageID: "8", Peer: channel.Peer{Kind: channel.Group, ID: "-5"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "and then?", Mentioned: true,
				ReplyTo: &channel.Quote{ID: "7", Body: "earlier answer", SenderID: "99", FromBot: true}},
		},
		{
			name:   "forum topic; the topic root is not a reply",
			update: `{"update_id":12,"message":{"message_id":30,"message_thread_id":17,"is_topic_message":true,` + ann + `,"chat":{"id":-1001,"type":"supergroup","is_forum":true},"date":1700000000,"text":"in topic","reply_to_message":{"message_id":17,"chat":{"id":-1001,"type":"supergroup"},"date":1,"forum_topic_created":{"name":"T"}}}}`,
			want: &channel.Envelope{DeliveryID: "12", MessageID: "30", Peer: channel.Peer{Kind: channel.Group, ID: "-1001:topic:17"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "in topic"},
		},
		{
			name:   "forum General topic",
			update: `{"update_id":13,"message":{"message_id":31,` + ann + `,"chat":{"id":-1001,"type":"supergroup","is_forum":true},"date":1700000000,"text":"general"}}`,
			want: &channel.Envelope{DeliveryID: "13", MessageID: "31", Peer: channel.Peer{Kind: channel.Group, ID: "-1001:topic:1"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "general"},
		},
		{
			name:   "DM thread with topics enabled",
			bot:    Info{ID: 99, Username: "talon_bot", HasTopicsEnabled: true},
			update: `{"update_id":14,"message":{"message_id":32,"message_thread_id":5,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"text":"dm topic"}}`,
			want: &channel.Envelope{DeliveryID: "14", MessageID: "32", Peer: channel.Peer{Kind: channel.Direct, ID: "42:topic:5"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "dm topic"},
		},
		{
			name:   "DM thread without topics is the plain DM",
			update: `{"update_id":15,"message":{"message_id":33,"message_thread_id":5,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"text":"dm"}}`,
			want: &channel.Envelope{DeliveryID: "15", MessageID: "33", Peer: channel.Peer{Kind: channel.Direct, ID: "42"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "dm"},
		},
		{
			name:   "caption",
			update: `{"update_id":16,"message":{"message_id":34,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"caption":"look @talon_bot","caption_entities":[{"type":"mention","offset":5,"length":10}]}}`,
			want: &channel.Envelope{DeliveryID: "16", MessageID: "34", Peer: channel.Peer{Kind: channel.Direct, ID: "42"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "look @talon_bot", Mentioned: true},
		},
		{
			name:   "another bot",
			update: `{"update_id":17,"message":{"message_id":35,"from":{"id":55,"is_bot":true,"first_name":"B"},"chat":{"id":-5,"type":"group"},"date":1700000000,"text":"beep"}}`,
			want: &channel.Envelope{DeliveryID: "17", MessageID: "35", Peer: channel.Peer{Kind: channel.Group, ID: "-5"},
				Sender: channel.Sender{ID: "55", Name: "B", IsBot: true}, Text: "beep"},
		},
		{name: "entity out of range", update: `{"update_id":18,"message":{"message_id":36,` + ann + `,"chat":{"id":-5,"type":"group"},"date":1700000000,"text":"hi","entities":[{"type":"mention","offset":1,"length":40}]}}`,
			want: &channel.Envelope{DeliveryID: "18", MessageID: "36", Peer: channel.Peer{Kind: channel.Group, ID: "-5"},
				Sender: channel.Sender{ID: "42", Username: "ann", Name: "Ann Lee"}, Text: "hi"}},
		{name: "edited message", update: `{"update_id":20,"edited_message":{"message_id":3,` + ann + `,"chat":{"id":42,"type":"private"},"date":1,"text":"x"}}`},
		{name: "channel post", update: `{"update_id":21,"channel_post":{"message_id":3,"chat":{"id":-100,"type":"channel"},"date":1,"text":"x"}}`},
		{
			name:   "sticker without text is taken with Text empty",
			update: `{"update_id":22,"message":{"message_id":3,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"sticker":{"file_id":"f","width":512,"height":512,"is_animated":true,"file_size":900}}}`,
			want:   dm("22", "3", "", media("f", "", "application/x-tgsticker", 900, "sticker")),
		},
		{
			name:   "photo: the largest size, with its caption",
			update: `{"update_id":26,"message":{"message_id":4,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"caption":"cat","photo":[{"file_id":"s","width":90,"height":60,"file_size":900},{"file_id":"l","width":1280,"height":853,"file_size":90000},{"file_id":"m","width":320,"height":213,"file_size":9000}]}}`,
			want:   dm("26", "4", "cat", media("l", "", "image/jpeg", 90000, "image")),
		},
		{
			name:   "document keeps its name and type",
			update: `{"update_id":27,"message":{"message_id":5,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"document":{"file_id":"d","file_name":"r\u00e9sum\u00e9.pdf","mime_type":"application/pdf","file_size":1234}}}`,
			want:   dm("27", "5", "", media("d", "résumé.pdf", "application/pdf", 1234, "document")),
		},
		{
			name:   "audio",
			update: `{"update_id":28,"message":{"message_id":6,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"audio":{"file_id":"a","duration":3,"file_name":"song.mp3","mime_type":"audio/mpeg","file_size":40}}}`,
			want:   dm("28", "6", "", media("a", "song.mp3", "audio/mpeg", 40, "audio")),
		},
		{
			name:   "voice without a type is Ogg",
			update: `{"update_id":29,"message":{"message_id":7,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"voice":{"file_id":"v","duration":2}}}`,
			want:   dm("29", "7", "", media("v", "", "audio/ogg", 0, "voice")),
		},
		{
			name:   "video and video note",
			update: `{"update_id":30,"message":{"message_id":8,` + ann + `,"chat":{"id":42,"type":"private"},"date":1700000000,"video":{"file_id":"vi","mime_type":"video/quicktime","file_size":-3},"video_note":{"file_id":"vn","length":240}}}`,
			want: dm("30", "8", "", media("vi", "", "video/quicktime", 0, "video"),
				media("vn", "", "video/mp4", 0, "video")),
		},
		{name: "file without an id", update: `{"update_id":31,"message":{"message_id":9,` + ann + `,"chat":{"id":42,"type":"private"},"date":1,"document":{"file_name":"x"},"photo":[{"width":1,"height":1}]}}`},
		{name: "service message", update: `{"update_id":23,"message":{"message_id":3,` + ann + `,"chat":{"id":-5,"type":"group"},"date":1,"new_chat_members":[{"id":1,"is_bot":false,"first_name":"x"}]}}`},
		{name: "no sender", update: `{"update_id":24,"message":{"message_id":3,"chat":{"id":-5,"type":"group"},"date":1,"text":"x"}}`},
		{name: "channel chat type", update: `{"update_id":25,"message":{"message_id":3,` + ann + `,"chat":{"id":-100,"type":"channel"},"date":1,"text":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u update
			if err := json.Unmarshal([]byte(tt.update), &u); err != nil {
				t.Fatal(err)
			}
			bot := tt.bot
			if bot.ID == 0 {
				bot = testBot
			}
			got, ok := toEnvelope(u, bot, "main")
			if tt.want == nil {
				if ok {
					t.Fatalf("taken, want ignored: %+v", got)
				}
				return
			}
			if !ok {
				t.Fatal("ignored, want taken")
			}
			want := *tt.want
			want.Channel, want.AccountID = "telegram", "main"
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(channel.Envelope{}, "Time")); diff != "" {
				t.Fatalf("envelope (-want +got):\n%s", diff)
			}
			if got.Time.Unix() != u.Message.Date {
				t.Fatalf("time = %v", got.Time)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		id   string
		want target
		bad  bool
	}{
		{id: "42", want: target{chat: int64(42)}},
		{id: "-1001234", want: target{chat: int64(-1001234)}},
		{id: "-1001234:topic:17", want: target{chat: int64(-1001234), thread: 17}},
		{id: "-1001234:17", want: target{chat: int64(-1001234), thread: 17}},
		{id: "@my_channel", want: target{chat: "@my_channel"}},
		{id: "", bad: true},
		{id: "0", bad: true},
		{id: "@ab", bad: true},
		{id: "-100:topic:0", bad: true},
		{id: "-100:topic:x", bad: true},
		{id: "42; drop", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got, err := parseTarget(channel.Target{Peer: channel.Peer{Kind: channel.Group, ID: tt.id}})
			if tt.bad != (err != nil) || !tt.bad && got != tt.want {
				t.Fatalf("parseTarget(%q) = %+v, %v", tt.id, got, err)
			}
		})
	}
}

func TestPrivacyIssue(t *testing.T) {
	if _, ok := (Info{ID: 1, Username: "b", CanReadAllGroupMessages: true}).PrivacyIssue(); ok {
		t.Fatal("issue with privacy mode off")
	}
	if _, ok := (Info{}).PrivacyIssue(); ok {
		t.Fatal("issue before getMe")
	}
	is, ok := (Info{ID: 1, Username: "b"}).PrivacyIssue()
	if !ok || is.Kind != "config" || is.Fix == "" {
		t.Fatalf("issue = %+v, %v", is, ok)
	}
}
