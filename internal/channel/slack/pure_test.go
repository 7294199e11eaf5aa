package slack

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
)

func TestNewValidates(t *testing.T) {
	client := &http.Client{}
	ok := Options{BotToken: "xoxb-1", AppToken: "xapp-1", HTTPClient: client}
	tests := []struct {
		name string
		edit func(*Options)
		want string // substring of the error, "" for none
	}{
		{"socket default", func(o *Options) {}, ""},
		{"http", func(o *Options) { o.Mode, o.AppToken, o.SigningSecret = "http", "", "s" }, ""},
		{"relay not built", func(o *Options) { o.Mode = "relay" }, `mode "relay" is not supported`},
		{"no bot token", func(o *Options) { o.BotToken = "" }, "botToken is required"},
		{"user token as bot token", func(o *Options) { o.BotToken = "xoxp-1" }, `botToken must start with "xoxb-"`},
		{"token with newline", func(o *Options) { o.BotToken = "xoxb-1\r\nX: y" }, "not printable ASCII"},
		{"socket without app token", func(o *Options) { o.AppToken = "" }, "appToken is required"},
		{"bot token as app token", func(o *Options) { o.AppToken = "xoxb-2" }, `appToken must start with "xapp-"`},
		{"http without secret", func(o *Options) { o.Mode, o.SigningSecret = "http", "" }, "signingSecret is required"},
		{"no client", func(o *Options) { o.HTTPClient = nil }, "HTTP client is required"},
		{"api url scheme", func(o *Options) { o.APIURL = "file:///etc/passwd" }, "scheme must be https or http"},
		{"api url credentials", func(o *Options) { o.APIURL = "https://u:p@proxy.example/api/" }, "credentials"},
		{"api url query", func(o *Options) { o.APIURL = "https://proxy.example/api/?x=1" }, "query"},
		{"api url no host", func(o *Options) { o.APIURL = "https:///api" }, "no host"},
		{"api url without slash", func(o *Options) { o.APIURL = "https://proxy.example/api" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.edit(&o)
			a, err := New(o)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if !strings.HasSuffix(a.apiURL, "/") {
					t.Errorf("apiURL %q does not end in /", a.apiURL)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "xoxb-1") || strings.Contains(err.Error(), "xoxp-1") {
				t.Errorf("error quotes a token: %v", err)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	secret := []byte("s3cret")
	now := time.Unix(1_777_000_000, 0)
	body := []byte(`{"type":"event_callback"}`)
	header := func(ts int64, sig string) http.Header {
		h := http.Header{}
		if ts != 0 {
			h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
		}
		if sig != "" {
			h.Set("X-Slack-Signature", sig)
		}
		return h
	}
	ts := now.Unix()
	good := Sign(secret, strconv.FormatInt(ts, 10), body)
	tests := []struct {
		name string
		h    http.Header
		body []byte
		want string
	}{
		{"good", header(ts, good), body, ""},
		{"299 s old", header(ts-299, Sign(secret, strconv.FormatInt(ts-299, 10), body)), body, ""},
		{"301 s old", header(ts-301, Sign(secret, strconv.FormatInt(ts-301, 10), body)), body, "more than 5m0s"},
		{"301 s ahead", header(ts+301, Sign(secret, strconv.FormatInt(ts+301, 10), body)), body, "more than 5m0s"},
		{"no timestamp", header(0, good), body, "missing or not a number"},
		{"no signature", header(ts, ""), body, "X-Slack-Signature is missing"},
		{"other secret", header(ts, Sign([]byte("other"), strconv.FormatInt(ts, 10), body)), body, "does not match"},
		{"body changed", header(ts, good), []byte(`{"type":"event_callback "}`), "does not match"},
		{"timestamp changed", header(ts-1, good), body, "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(secret, tt.h, tt.body, now)
			if tt.want == "" && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Verify = %v, want %q", err, tt.want)
			}
		})
	}
}

// Sign must be Slack's documented example.
func TestSignMatchesSlacksExample(t *testing.T) {
	// From Slack's "Verifying requests from Slack" page.
	secret := []byte("8f742231b10e8888abcd99yyyzzz85a5")
	body := []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
	got := Sign(secret, "1531420618", body)
	want := "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	if got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestEnvelope(t *testing.T) {
	bot := identity{UserID: "UBOT", BotID: "BBOT", User: "talon", TeamID: "T1"}
	base := message{Type: "message", Channel: "C1", ChannelType: "channel", User: "U1", Text: "hello", TS: "1777000001.000100", Team: "T1"}
	with := func(f func(*message)) message { m := base; f(&m); return m }
	tests := []struct {
		name   string
		m      message
		kind   channel.Kind
		joined bool
		want   func(*channel.Envelope)
	}{
		{"channel message", base, channel.Room, false, func(e *channel.Envelope) {}},
		{"dm peer is the user", with(func(m *message) { m.Channel, m.ChannelType = "D1", "im" }), channel.Direct, false,
			func(e *channel.Envelope) { e.Peer = channel.Peer{Kind: channel.Direct, ID: "U1"} }},
		{"mpim is a group", with(func(m *message) { m.Channel, m.ChannelType = "G1", "mpim" }), channel.Group, false,
			func(e *channel.Envelope) { e.Peer = channel.Peer{Kind: channel.Group, ID: "G1"} }},
		{"mention of the bot", with(func(m *message) { m.Text = "<@UBOT> hi" }), channel.Room, false,
			func(e *channel.Envelope) { e.Text, e.Mentioned = "<@UBOT> hi", true }},
		{"mention with label", with(func(m *message) { m.Text = "hey <@UBOT|talon>" }), channel.Room, false,
			func(e *channel.Envelope) { e.Text, e.Mentioned = "hey <@UBOT|talon>", true }},
		{"mention of someone else", with(func(m *message) { m.Text = "<@U2> look" }), channel.Room, false,
			func(e *channel.Envelope) { e.Text, e.MentionsOthers = "<@U2> look", true }},
		{"user group mention", with(func(m *message) { m.Text = "<!subteam^S1|@ops> ping" }), channel.Room, false,
			func(e *channel.Envelope) { e.Text, e.MentionsOthers = "<!subteam^S1|@ops> ping", true }},
		{"app_mention", with(func(m *message) { m.Type, m.ChannelType = "app_mention", "" }), channel.Room, false,
			func(e *channel.Envelope) { e.Mentioned = true }},
		{"reply in the bot's thread", with(func(m *message) { m.ThreadTS, m.ParentUserID = "1777000000.000001", "UBOT" }), channel.Room, false,
			func(e *channel.Envelope) {
				e.ThreadID, e.Mentioned = "1777000000.000001", true
				e.ReplyTo = &channel.Quote{ID: "1777000000.000001", SenderID: "UBOT", FromBot: true}
			}},
		{"reply in someone's thread", with(func(m *message) { m.ThreadTS, m.ParentUserID = "1777000000.000001", "U9" }), channel.Room, false,
			func(e *channel.Envelope) {
				e.ThreadID = "1777000000.000001"
				e.ReplyTo = &channel.Quote{ID: "1777000000.000001", SenderID: "U9"}
			}},
		{"reply in a thread the bot posted in", with(func(m *message) { m.ThreadTS = "1777000000.000001" }), channel.Room, true,
			func(e *channel.Envelope) { e.ThreadID, e.Mentioned = "1777000000.000001", true }},
		{"thread parent is not a reply", with(func(m *message) { m.ThreadTS = m.TS }), channel.Room, false, func(e *channel.Envelope) {}},
		{"another bot", with(func(m *message) { m.Subtype, m.User, m.BotID = "bot_message", "", "B2" }), channel.Room, false,
			func(e *channel.Envelope) { e.Sender = channel.Sender{ID: "B2", IsBot: true} }},
		{"profile names", with(func(m *message) {
			m.UserProfile = &struct {
				Name        string `json:"name"`
				DisplayName string `json:"display_name"`
				RealName    string `json:"real_name"`
			}{Name: "alice", RealName: "Alice A"}
		}), channel.Room, false, func(e *channel.Envelope) { e.Sender.Username, e.Sender.Name = "alice", "Alice A" }},
	}
	cb := callback{Type: "event_callback", TeamID: "T1", EventID: "Ev1"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := channel.Envelope{
				Channel: "slack", AccountID: "work", DeliveryID: "Ev1", MessageID: "1777000001.000100",
				Peer: channel.Peer{Kind: channel.Room, ID: "C1"}, Sender: channel.Sender{ID: "U1"},
				Text: "hello", TeamID: "T1", Time: time.Unix(1777000001, 100000).UTC(),
			}
			tt.want(&want)
			if why := skipReason(tt.m, bot); why != "" {
				t.Fatalf("skipped: %s", why)
			}
			got, err := envelope("work", bot, cb, tt.m, tt.kind, tt.joined)
			if err != nil {
				t.Fatalf("envelope: %v", err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("envelope (-want +got):\n%s", d)
			}
		})
	}
}

func TestSkipReason(t *testing.T) {
	bot := identity{UserID: "UBOT", BotID: "BBOT"}
	tests := []struct {
		name string
		m    message
		want string
	}{
		{"plain", message{User: "U1", Text: "hi"}, ""},
		{"thread broadcast", message{Subtype: "thread_broadcast", User: "U1", Text: "hi"}, ""},
		{"edit", message{Subtype: "message_changed", Text: "hi"}, "subtype message_changed"},
		{"delete", message{Subtype: "message_deleted"}, "subtype message_deleted"},
		{"join", message{Subtype: "channel_join", User: "U1", Text: "<@U1> has joined"}, "subtype channel_join"},
		{"own by user id", message{User: "UBOT", Text: "hi"}, "own message"},
		{"own by bot id", message{Subtype: "bot_message", BotID: "BBOT", Text: "hi"}, "own message"},
		{"hidden", message{User: "U1", Text: "x", Hidden: true}, "hidden"},
		{"no text, no file", message{User: "U1"}, "no text and no file to fetch"},
		{"files only", message{Subtype: "file_share", User: "U1", Files: []file{{URLPrivate: "https://files.slack.com/files-pri/T1-F1/a.png"}}}, ""},
		{"only a withheld file", message{Subtype: "file_share", User: "U1", Files: []file{{Mode: "hidden_by_limit", URLPrivate: "https://files.slack.com/x"}}}, "no text and no file to fetch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skipReason(tt.m, bot); got != tt.want {
				t.Errorf("skipReason = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvelopeRefusesBadFields(t *testing.T) {
	bot := identity{UserID: "UBOT"}
	base := message{Type: "message", Channel: "C1", User: "U1", Text: "hi", TS: "1777000001.000100"}
	tests := []struct {
		name string
		cb   callback
		edit func(*message)
	}{
		{"no event id", callback{}, func(*message) {}},
		{"event id with quote", callback{EventID: `Ev"1`}, func(*message) {}},
		{"channel path", callback{EventID: "Ev1"}, func(m *message) { m.Channel = "../C1" }},
		{"bad ts", callback{EventID: "Ev1"}, func(m *message) { m.TS = "now" }},
		{"bad thread ts", callback{EventID: "Ev1"}, func(m *message) { m.ThreadTS = "1.2.3" }},
		{"no user", callback{EventID: "Ev1"}, func(m *message) { m.User = "" }},
		{"text too long", callback{EventID: "Ev1"}, func(m *message) { m.Text = strings.Repeat("x", maxText+1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base
			tt.edit(&m)
			if _, err := envelope("default", bot, tt.cb, m, channel.Room, false); err == nil {
				t.Fatal("envelope accepted it")
			}
		})
	}
}

func TestBuildPost(t *testing.T) {
	tests := []struct {
		name string
		m    channel.Outbound
		want string // JSON, or the error's substring prefixed "error: "
	}{
		{"channel", channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C1"}}, Text: "*hi*"},
			`{"channel":"C1","text":"*hi*","mrkdwn":true,"unfurl_links":false,"unfurl_media":false}`},
		{"thread", channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C1"}, ThreadID: "1.2"}, Text: "x"},
			`{"channel":"C1","text":"x","thread_ts":"1.2","mrkdwn":true,"unfurl_links":false,"unfurl_media":false}`},
		{"reply becomes thread", channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C1"}}, ReplyTo: "3.4", Text: "x"},
			`{"channel":"C1","text":"x","thread_ts":"3.4","mrkdwn":true,"unfurl_links":false,"unfurl_media":false}`},
		{"dm to user id", channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "U1"}}, Plain: "plain"},
			`{"channel":"U1","text":"plain","mrkdwn":true,"unfurl_links":false,"unfurl_media":false}`},
		{"bad target", channel.Outbound{Target: channel.Target{Peer: channel.Peer{ID: "#general"}}, Text: "x"}, "error: not a Slack channel or user id"},
		{"bad thread", channel.Outbound{Target: channel.Target{Peer: channel.Peer{ID: "C1"}, ThreadID: "x"}, Text: "x"}, "error: not a Slack ts"},
		{"empty", channel.Outbound{Target: channel.Target{Peer: channel.Peer{ID: "C1"}}}, "error: no text"},
		{"too long", channel.Outbound{Target: channel.Target{Peer: channel.Peer{ID: "C1"}}, Text: strings.Repeat("é", 40001)}, "error: longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := buildPost(tt.m)
			if want, isErr := strings.CutPrefix(tt.want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("buildPost error = %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("buildPost: %v", err)
			}
			b, _ := json.Marshal(p)
			if string(b) != tt.want {
				t.Errorf("request = %s\nwant      %s", b, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{2, 4, 8, 16, 30, 30}
	for i, w := range want {
		if got := backoff(i); got != w*time.Second {
			t.Errorf("backoff(%d) = %s, want %s", i, got, w*time.Second)
		}
	}
}
