package message

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"talon/internal/tools"
)

// recorder is a Messenger that keeps what it was asked to send.
type recorder struct{ got []tools.OutMessage }

func (r *recorder) Send(_ context.Context, _ string, m tools.OutMessage) (json.RawMessage, error) {
	r.got = append(r.got, m)
	return json.RawMessage(`{"ok":true}`), nil
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, args, err string
		want            tools.OutMessage
	}{
		{"send here", `{"action":"send","message":"hi"}`, "", tools.OutMessage{Action: "send", Text: "hi"}},
		{"send there", `{"action":"send","message":"hi","channel":"slack","target":" channel:C1 ","accountId":"Work"}`, "", tools.OutMessage{Action: "send", Text: "hi", Channel: "slack", Target: "channel:C1", AccountID: "Work"}},
		{"thread reply", `{"action":"thread-reply","message":"hi","threadId":"17.1"}`, "", tools.OutMessage{Action: "thread-reply", Text: "hi", ThreadID: "17.1"}},
		{"dry run", `{"action":"send","message":"hi","dryRun":true}`, "", tools.OutMessage{Action: "send", Text: "hi", DryRun: true}},
		{"react", `{"action":"react","messageId":"12","emoji":"👍"}`, "", tools.OutMessage{Action: "react", MessageID: "12", Emoji: "👍"}},
		{"unreact", `{"action":"react","messageId":"12","emoji":"thumbsup","remove":true}`, "", tools.OutMessage{Action: "react", MessageID: "12", Emoji: "thumbsup", Remove: true}},
		{"edit", `{"action":"edit","messageId":"12","message":"fixed"}`, "", tools.OutMessage{Action: "edit", MessageID: "12", Text: "fixed"}},
		{"delete", `{"action":"delete","messageId":"12"}`, "", tools.OutMessage{Action: "delete", MessageID: "12"}},
		{"react without emoji", `{"action":"react","messageId":"12"}`, "react needs emoji", tools.OutMessage{}},
		{"edit without message id", `{"action":"edit","message":"x"}`, "edit needs messageId", tools.OutMessage{}},
		{"edit without text", `{"action":"edit","messageId":"1"}`, "message", tools.OutMessage{}},
		{"thread reply without thread", `{"action":"thread-reply","message":"hi"}`, "thread-reply needs threadId", tools.OutMessage{}},
		{"unknown action", `{"action":"ban","message":"x"}`, "action", tools.OutMessage{}},
		{"empty", `{"action":"send","message":"  "}`, "empty", tools.OutMessage{}},
		{"too long", `{"action":"send","message":"` + strings.Repeat("a", maxText+1) + `"}`, "over 20000", tools.OutMessage{}},
		{"long target", `{"action":"send","message":"x","target":"` + strings.Repeat("1", 300) + `"}`, "too long", tools.OutMessage{}},
		{"no message", `{"action":"send"}`, "message", tools.OutMessage{}},
		{"unknown key", `{"action":"send","message":"x","to":"1"}`, "to", tools.OutMessage{}},
		{"wrong type", `{"action":"send","message":5}`, "message", tools.OutMessage{}},
		{"reactions", `{"action":"reactions","messageId":"12"}`, "", tools.OutMessage{Action: "reactions", MessageID: "12"}},
		{"reactions without id", `{"action":"reactions"}`, "reactions needs messageId", tools.OutMessage{}},
		{"read", `{"action":"read","limit":5,"before":"9"}`, "", tools.OutMessage{Action: "read", Read: &tools.ReadQuery{Limit: 5, Before: "9"}}},
		{"read default", `{"action":"read"}`, "", tools.OutMessage{Action: "read", Read: &tools.ReadQuery{Limit: 20}}},
		{"read two anchors", `{"action":"read","before":"9","after":"3"}`, "at most one of before", tools.OutMessage{}},
		{"read too many", `{"action":"read","limit":500}`, "limit", tools.OutMessage{}},
		{"poll", `{"action":"poll","pollQuestion":"Lunch?","pollOption":["pizza"," sushi "],"pollDurationSeconds":3600,"pollMulti":true}`, "",
			tools.OutMessage{Action: "poll", Poll: &tools.Poll{Question: "Lunch?", Options: []string{"pizza", "sushi"}, Duration: time.Hour, Multi: true}}},
		{"poll one option", `{"action":"poll","pollQuestion":"Lunch?","pollOption":["pizza"]}`, "2 to 12 options", tools.OutMessage{}},
		{"poll thirteen options", `{"action":"poll","pollQuestion":"n?","pollOption":["1","2","3","4","5","6","7","8","9","10","11","12","13"]}`, "2 to 12 options", tools.OutMessage{}},
		{"poll empty option", `{"action":"poll","pollQuestion":"n?","pollOption":["a"," "]}`, "pollOption[1]", tools.OutMessage{}},
		{"poll too long", `{"action":"poll","pollQuestion":"n?","pollOption":["a","b"],"pollDurationSeconds":604801}`, "pollDurationSeconds", tools.OutMessage{}},
		{"poll no question", `{"action":"poll","pollOption":["a","b"]}`, "pollQuestion", tools.OutMessage{}},
		{"attachment", `{"action":"sendAttachment","media":"out/report.pdf","message":"the report"}`, "", tools.OutMessage{Action: "sendAttachment", Text: "the report"}},
		{"attachment neither", `{"action":"sendAttachment"}`, "one of media", tools.OutMessage{}},
		{"attachment both", `{"action":"sendAttachment","media":"a","buffer":"eA=="}`, "one of media", tools.OutMessage{}},
		{"buffer without name", `{"action":"sendAttachment","buffer":"eA=="}`, "needs filename", tools.OutMessage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := parse(json.RawMessage(tc.args))
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want one saying %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && !reflect.DeepEqual(got, tc.want):
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRun(t *testing.T) {
	res, err := New().Run(context.Background(), &tools.Env{SessionKey: "k"}, json.RawMessage(`{"action":"send","message":"hi"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "no chat channels") {
		t.Errorf("without a messenger: %+v %v", res, err)
	}
	r := &recorder{}
	res, err = New().Run(context.Background(), &tools.Env{SessionKey: "k", Messenger: r}, json.RawMessage(`{"action":"send","message":"hi"}`))
	if err != nil || res.IsError || len(r.got) != 1 || r.got[0].Text != "hi" {
		t.Errorf("with a messenger: %+v %v %+v", res, err, r.got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	os.WriteFile(filepath.Join(dir, "out", "report.pdf"), []byte("%PDF-1.4 report"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("plain notes"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.bin"), nil, 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, "passwd"))
	os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	png := "\x89PNG\r\n\x1a\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cat.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte(png + "rest"))
		case "/big":
			w.Write(make([]byte, MaxFile+1))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name      string
		ref       fileRef
		sandboxed bool
		wantName  string
		wantMIME  string
		wantData  string
		err       string
	}{
		{name: "workspace file", ref: fileRef{media: "out/report.pdf"}, wantName: "report.pdf", wantMIME: "application/pdf", wantData: "%PDF-1.4 report"},
		{name: "at-path and given name", ref: fileRef{media: "@notes.txt", name: "../../Notes\n.txt", mime: "text/markdown; charset=utf-8"}, wantName: "Notes.txt", wantMIME: "text/markdown", wantData: "plain notes"},
		{name: "sandbox path", ref: fileRef{media: "/workspace/notes.txt"}, wantName: "notes.txt", wantMIME: "text/plain", wantData: "plain notes"},
		{name: "outside", ref: fileRef{media: "../x"}, err: "outside the workspace"},
		{name: "absolute outside", ref: fileRef{media: "/etc/passwd"}, err: "outside the workspace"},
		{name: "link out", ref: fileRef{media: "passwd"}, err: "outside the workspace"},
		{name: "missing", ref: fileRef{media: "nope.txt"}, err: "does not exist"},
		{name: "empty", ref: fileRef{media: "empty.bin"}, err: "empty"},
		{name: "directory", ref: fileRef{media: "out"}, err: "not a regular file"},
		{name: "other scheme", ref: fileRef{media: "ftp://host/x"}, err: "unsupported reference"},
		{name: "buffer", ref: fileRef{buffer: base64.StdEncoding.EncodeToString([]byte("a,b\n1,2\n")), name: "data.csv"}, wantName: "data.csv", wantMIME: "text/csv", wantData: "a,b\n1,2\n"},
		{name: "bad buffer", ref: fileRef{buffer: "not base64!", name: "x"}, err: "not base64"},
		{name: "bad type", ref: fileRef{buffer: "eA==", name: "x", mime: "nonsense"}, err: "not a MIME type"},
		{name: "url", ref: fileRef{media: srv.URL + "/cat.png"}, wantName: "cat.png", wantMIME: "image/png", wantData: png + "rest"},
		{name: "url missing", ref: fileRef{media: srv.URL + "/gone"}, err: "404"},
		{name: "url too big", ref: fileRef{media: srv.URL + "/big"}, err: "over 50 MiB"},
		{name: "url from a sandbox", ref: fileRef{media: srv.URL + "/cat.png"}, sandboxed: true, err: "sandboxed session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &tools.Env{Workspace: root, AllowLoopback: true, Sandboxed: tc.sandboxed}
			got, err := load(context.Background(), env, tc.ref)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case got.Name != tc.wantName || got.MIME != tc.wantMIME || string(got.Data) != tc.wantData:
				t.Errorf("got %q %q %q, want %q %q %q", got.Name, got.MIME, got.Data, tc.wantName, tc.wantMIME, tc.wantData)
			}
		})
	}
}

func TestLoadRefusesPrivateAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("secret")) }))
	defer srv.Close()
	_, err := load(context.Background(), &tools.Env{}, fileRef{media: srv.URL + "/x"})
	if err == nil || !strings.Contains(err.Error(), "fetching") {
		t.Fatalf("a loopback URL without allowLoopback: err %v, want a refusal", err)
	}
}
