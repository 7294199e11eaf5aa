package tgtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"
	"time"

	"talon/internal/tools/tts/ttstest"
)

func TestParseHTML(t *testing.T) {
	tests := []struct {
		in, text, refusal string
	}{
		{in: "<b>bold</b> &amp; <i>it</i>", text: "bold & it"},
		{in: `<a href="https://x.test/?a=1&amp;b=2">link</a>`, text: "link"},
		{in: `<pre><code class="language-go">x &lt; y</code></pre>`, text: "x < y"},
		{in: `<span class="tg-spoiler">s</span><tg-spoiler>t</tg-spoiler>`, text: "st"},
		{in: `<blockquote expandable>q</blockquote>`, text: "q"},
		{in: "AT&T &#60; &#x3e; &nbsp;", text: "AT&T < > &nbsp;"},
		{in: "<B>upper</B>", text: "upper"},
		{in: "a < b", refusal: `Unsupported start tag "" at byte offset 2`},
		{in: "x<br>y", refusal: `Unsupported start tag "br" at byte offset 1`},
		{in: "<b>open", refusal: `Can't find end tag corresponding to start tag "b"`},
		{in: "text</b>", refusal: "Unexpected end tag at byte offset 4"},
		{in: "<b><i>x</b></i>", refusal: `Unmatched end tag at byte offset 7, expected "</i>", found "</b>"`},
		{in: `<span>x</span>`, refusal: `Tag "span" must have class "tg-spoiler" at byte offset 0`},
		{in: `<a href="x`, refusal: "Unclosed start tag at byte offset 0"},
		{in: `<b`, refusal: "Unclosed start tag at byte offset 0"},
		{in: `<a href>x</a>`, refusal: `Expected equal sign in declaration of an attribute of the tag "a" at byte offset 3`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			text, refusal := parseHTML(tt.in)
			if refusal != tt.refusal || text != tt.text {
				t.Fatalf("parseHTML(%q) = %q, %q; want %q, %q", tt.in, text, refusal, tt.text, tt.refusal)
			}
		})
	}
}

func TestEntitiesCountUTF16(t *testing.T) {
	// 😀 is two UTF-16 units, é one: the mention starts at unit 5.
	got := entities("😀 é @talon_test_bot hi", nil)
	if len(got) != 1 || got[0] != (Entity{Type: "mention", Offset: 5, Length: 15}) {
		t.Fatalf("entities = %+v", got)
	}
	got = entities("/start@talon_test_bot", nil)
	if len(got) != 1 || got[0].Type != "bot_command" || got[0].Length != 21 {
		t.Fatalf("command entities = %+v", got)
	}
}

// call posts a JSON request to the fake as a Bot API client would.
func call(t *testing.T, s *Server, token, method string, params any) (int, map[string]any) {
	t.Helper()
	code, out, err := post(s, token, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return code, out
}

// post is call for a goroutine, which must not end the test.
func post(s *Server, token, method string, params any) (int, map[string]any, error) {
	body, _ := json.Marshal(params)
	resp, err := http.Post(s.URL+"/bot"+token+"/"+method, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	err = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, err
}

func TestFakeAPI(t *testing.T) {
	s := Start(t)
	tests := []struct {
		name   string
		token  string
		method string
		params any
		code   int
		desc   string
	}{
		{"wrong token", "1:bad", "getMe", nil, 401, "Unauthorized"},
		{"unknown method", s.Token, "sendPigeon", nil, 404, "Not Found: method not found"},
		{"bad html", s.Token, "sendMessage", map[string]any{"chat_id": 5, "text": "<x>", "parse_mode": "HTML"}, 400,
			`Bad Request: can't parse entities: Unsupported start tag "x" at byte offset 0`},
		{"general topic", s.Token, "sendMessage", map[string]any{"chat_id": -100, "text": "hi", "message_thread_id": 1}, 400,
			"Bad Request: message thread not found"},
		{"empty", s.Token, "sendMessage", map[string]any{"chat_id": 5, "text": "<b></b>", "parse_mode": "HTML"}, 400,
			"Bad Request: message text is empty"},
		{"reply to nothing", s.Token, "sendMessage", map[string]any{"chat_id": 5, "text": "x", "reply_parameters": map[string]any{"message_id": 9}}, 400,
			"Bad Request: message to be replied not found"},
		{"http webhook", s.Token, "setWebhook", map[string]any{"url": "http://x.test/"}, 400,
			"Bad Request: bad webhook: An HTTPS URL must be provided for webhook"},
		{"sent", s.Token, "sendMessage", map[string]any{"chat_id": 5, "text": "<b>ok</b>", "parse_mode": "HTML"}, 200, ""},
		// The rows below act on message 1001, which "sent" made.
		{"edit bad html", s.Token, "editMessageText", map[string]any{"chat_id": 5, "message_id": 1001, "text": "<x>", "parse_mode": "HTML"}, 400,
			`Bad Request: can't parse entities: Unsupported start tag "x" at byte offset 0`},
		{"edit unknown", s.Token, "editMessageText", map[string]any{"chat_id": 5, "message_id": 9, "text": "x"}, 400,
			"Bad Request: message to edit not found"},
		{"edit to the same", s.Token, "editMessageText", map[string]any{"chat_id": 5, "message_id": 1001, "text": "<b>ok</b>", "parse_mode": "HTML"}, 400,
			"Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"},
		{"edited", s.Token, "editMessageText", map[string]any{"chat_id": 5, "message_id": 1001, "text": "ok"}, 200, ""},
		{"two reactions", s.Token, "setMessageReaction", map[string]any{"chat_id": 5, "message_id": 1001,
			"reaction": []any{map[string]any{"type": "emoji", "emoji": "👍"}, map[string]any{"type": "emoji", "emoji": "🔥"}}}, 400,
			"Bad Request: REACTIONS_TOO_MANY"},
		{"custom emoji", s.Token, "setMessageReaction", map[string]any{"chat_id": 5, "message_id": 1001,
			"reaction": []any{map[string]any{"type": "custom_emoji", "custom_emoji_id": "5"}}}, 400, "Bad Request: REACTION_INVALID"},
		{"react unknown", s.Token, "setMessageReaction", map[string]any{"chat_id": 5, "message_id": 9, "reaction": []any{}}, 400,
			"Bad Request: message to react not found"},
		{"reacted", s.Token, "setMessageReaction", map[string]any{"chat_id": 5, "message_id": 1001,
			"reaction": []any{map[string]any{"type": "emoji", "emoji": "❤\u200d🔥"}}}, 200, ""},
		{"delete unknown", s.Token, "deleteMessage", map[string]any{"chat_id": 5, "message_id": 9}, 400,
			"Bad Request: message to delete not found"},
		{"deleted", s.Token, "deleteMessage", map[string]any{"chat_id": 5, "message_id": 1001}, 200, ""},
		{"edit deleted", s.Token, "editMessageText", map[string]any{"chat_id": 5, "message_id": 1001, "text": "x"}, 400,
			"Bad Request: message to edit not found"},
		{"unknown file", s.Token, "getFile", map[string]any{"file_id": "nope"}, 400, "Bad Request: invalid file_id"},
		{"button data too long", s.Token, "sendMessage", map[string]any{"chat_id": 5, "text": "x",
			"reply_markup": map[string]any{"inline_keyboard": [][]any{{map[string]any{"text": "b", "callback_data": strings.Repeat("d", 65)}}}}}, 400,
			"Bad Request: BUTTON_DATA_INVALID"},
		{"button without text", s.Token, "sendMessage", map[string]any{"chat_id": 5, "text": "x",
			"reply_markup": map[string]any{"inline_keyboard": [][]any{{map[string]any{"text": "", "callback_data": "d"}}}}}, 400,
			"Bad Request: text buttons are unallowed in the inline keyboard"},
		{"answer unknown press", s.Token, "answerCallbackQuery", map[string]any{"callback_query_id": "9"}, 400,
			"Bad Request: query is too old and response timeout expired or query ID is invalid"},
		{"poll options as strings", s.Token, "sendPoll", map[string]any{"chat_id": 5, "question": "Q", "options": []string{"a", "b"}}, 400,
			"Bad Request: can't parse InputPollOption JSON object"},
		{"poll of one option", s.Token, "sendPoll", map[string]any{"chat_id": 5, "question": "Q", "options": []any{map[string]any{"text": "a"}}}, 400,
			"Bad Request: poll must have at least 2 option"},
		{"poll for a day", s.Token, "sendPoll", map[string]any{"chat_id": 5, "question": "Q", "open_period": 86400,
			"options": []any{map[string]any{"text": "a"}, map[string]any{"text": "b"}}}, 400, "Bad Request: wrong open_period specified"},
		{"photo by JSON", s.Token, "sendPhoto", map[string]any{"chat_id": 5, "photo": "x"}, 400,
			"Bad Request: there is no photo in the request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := call(t, s, tt.token, tt.method, tt.params)
			if code != tt.code || (tt.desc != "" && out["description"] != tt.desc) {
				t.Fatalf("%s = %d %v; want %d %q", tt.method, code, out, tt.code, tt.desc)
			}
			if code == 200 && out["ok"] != true || code != 200 && (out["ok"] != false || out["error_code"] != float64(code)) {
				t.Fatalf("answer shape: %v", out)
			}
		})
	}
	if got := s.Edits(); len(got) != 1 || got[0] != (Edit{ChatID: "5", MessageID: 1001, Text: "ok"}) {
		t.Fatalf("edits = %+v, want the one carried out", got)
	}
	if got := s.Reactions(); len(got) != 1 || got[0] != (Reaction{ChatID: "5", MessageID: 1001, Emoji: "❤\u200d🔥"}) {
		t.Fatalf("reactions = %+v, want the one carried out", got)
	}
	if got := s.Deletions(); len(got) != 1 || got[0] != (Deletion{ChatID: "5", MessageID: 1001}) {
		t.Fatalf("deletions = %+v, want the one carried out", got)
	}
}

func TestFakeSecondPollerGets409(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := make(chan int, 1)
	go func() {
		code, _, _ := post(s, s.Token, "getUpdates", map[string]any{"timeout": 30})
		first <- code
	}()
	if err := s.WaitIdle(ctx, 1); err != nil {
		t.Fatal(err)
	}
	s.UserSays(Say{From: User{ID: 42, FirstName: "Ann"}, Text: "hi"})
	code, out := call(t, s, s.Token, "getUpdates", map[string]any{"timeout": 0})
	if code != 200 || len(out["result"].([]any)) != 1 {
		t.Fatalf("second poll = %d %v", code, out)
	}
	if got := <-first; got != 200 && got != 409 {
		t.Fatalf("first poll answered %d", got)
	}
	// Overlap proper: one poll waiting, another arrives.
	go func() {
		code, _, _ := post(s, s.Token, "getUpdates", map[string]any{"timeout": 30, "offset": 1 << 40})
		first <- code
	}()
	if err := s.WaitIdle(ctx, 1); err != nil {
		t.Fatal(err)
	}
	go post(s, s.Token, "getUpdates", map[string]any{"timeout": 0, "offset": 1 << 40})
	if got := <-first; got != 409 {
		t.Fatalf("overlapped poll answered %d, want 409", got)
	}
}

func TestFakeFiles(t *testing.T) {
	s := Start(t)
	// A document a user sent is served by getFile and the file path.
	m, _ := s.UserSays(Say{From: User{ID: 42, FirstName: "Ann"}, Text: "cap", File: &Attachment{Kind: "document", Name: "a.txt", MIME: "text/plain", Data: []byte("hello")}})
	if m.Document == nil || m.Caption != "cap" || m.Text != "" || m.Document.FileName != "a.txt" || m.Document.FileSize != 5 {
		t.Fatalf("message = %+v", m)
	}
	code, out := call(t, s, s.Token, "getFile", map[string]any{"file_id": m.Document.FileID})
	path, _ := out["result"].(map[string]any)["file_path"].(string)
	if code != 200 || path == "" {
		t.Fatalf("getFile = %d %v", code, out)
	}
	for _, tt := range []struct {
		token string
		code  int
		body  string
	}{{s.Token, 200, "hello"}, {"1:bad", 404, ""}} {
		resp, err := http.Get(s.URL + "/file/bot" + tt.token + "/" + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || tt.body != "" && string(body) != tt.body {
			t.Fatalf("download with %s = %d %q", tt.token, resp.StatusCode, body)
		}
	}
	// The bot's upload is recorded with its part's name, type and bytes.
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("chat_id", "5")
	_ = w.WriteField("caption", "<b>x</b>")
	_ = w.WriteField("parse_mode", "HTML")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="document"; filename="r.pdf"`)
	h.Set("Content-Type", "application/pdf")
	part, _ := w.CreatePart(h)
	_, _ = part.Write([]byte("%PDF"))
	_ = w.Close()
	resp, err := http.Post(s.URL+"/bot"+s.Token+"/sendDocument", w.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := s.Uploads()
	if resp.StatusCode != 200 || len(got) != 1 || got[0].Name != "r.pdf" || got[0].MIME != "application/pdf" ||
		string(got[0].Data) != "%PDF" || got[0].Caption != "<b>x</b>" || got[0].ParseMode != "HTML" || got[0].ChatID != "5" {
		t.Fatalf("upload = %d %+v", resp.StatusCode, got)
	}
}

// TestFakeVoice: sendVoice answers a Message with a voice (type and
// duration, no file name) for audio Telegram plays as a voice note, a
// document for other bytes, and refuses a request without the file.
func TestFakeVoice(t *testing.T) {
	mp3 := append([]byte{0xFF, 0xFB, 0x90, 0x64}, make([]byte, 413)...)
	tests := []struct {
		name     string
		file     []byte // nil: no voice part
		duration string // the duration parameter, when not ""
		code     int
		kind     string         // the message's file field
		want     map[string]any // its fields beyond file_id, file_unique_id and file_size
		refusal  string
	}{
		{name: "ogg opus, duration read from the stream", file: ttstest.OpusLasting(100), code: 200, kind: "voice",
			want: map[string]any{"mime_type": "audio/ogg", "duration": 2.0}},
		{name: "duration given", file: ttstest.Opus(), duration: "7", code: 200, kind: "voice", want: map[string]any{"mime_type": "audio/ogg", "duration": 7.0}},
		{name: "mp3", file: mp3, code: 200, kind: "voice", want: map[string]any{"mime_type": "audio/mpeg"}},
		{name: "not a voice format becomes a document", file: []byte("%PDF-1.7"), code: 200, kind: "document",
			want: map[string]any{"file_name": "speech.opus", "mime_type": "audio/ogg"}},
		{name: "no file", code: 400, refusal: "Bad Request: there is no voice in the request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t)
			var buf bytes.Buffer
			w := multipart.NewWriter(&buf)
			_ = w.WriteField("chat_id", "5")
			if tt.duration != "" {
				_ = w.WriteField("duration", tt.duration)
			}
			if tt.file != nil {
				h := textproto.MIMEHeader{}
				h.Set("Content-Disposition", `form-data; name="voice"; filename="speech.opus"`)
				h.Set("Content-Type", "audio/ogg")
				part, _ := w.CreatePart(h)
				_, _ = part.Write(tt.file)
			}
			_ = w.Close()
			resp, err := http.Post(s.URL+"/bot"+s.Token+"/sendVoice", w.FormDataContentType(), &buf)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				OK          bool                       `json:"ok"`
				Description string                     `json:"description"`
				Result      map[string]json.RawMessage `json:"result"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != tt.code {
				t.Fatalf("sendVoice = %d %+v (%v)", resp.StatusCode, out, err)
			}
			if tt.refusal != "" {
				if out.OK || out.Description != tt.refusal || len(s.Uploads()) != 0 {
					t.Fatalf("answer %+v, uploads %+v; want %q", out, s.Uploads(), tt.refusal)
				}
				return
			}
			var f map[string]any
			if err := json.Unmarshal(out.Result[tt.kind], &f); err != nil || f == nil {
				t.Fatalf("result %s has no %s: %v", out.Result, tt.kind, err)
			}
			if f["file_size"] != float64(len(tt.file)) || f["file_id"] == "" || f["file_unique_id"] == "" {
				t.Errorf("%s %v", tt.kind, f)
			}
			for _, k := range []string{"file_id", "file_unique_id", "file_size"} {
				delete(f, k)
			}
			if !reflect.DeepEqual(f, tt.want) {
				t.Errorf("%s %v, want %v", tt.kind, f, tt.want)
			}
			up := s.Uploads()
			if len(up) != 1 || up[0].Method != "sendVoice" || up[0].Voice != (tt.kind == "voice") || !bytes.Equal(up[0].Data, tt.file) {
				t.Errorf("uploads %+v", up)
			}
		})
	}
}
