package message

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(json.RawMessage(tc.args))
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want one saying %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && got != tc.want:
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
