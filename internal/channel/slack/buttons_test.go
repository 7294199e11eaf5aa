package slack

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/slack/slacktest"
)

var approve = []channel.Button{
	{Label: "Allow once", Data: "/approve 1a2b allow-once"},
	{Label: "Allow always", Data: "/approve 1a2b allow-always"},
	{Label: "Deny", Data: "/approve 1a2b deny"},
}

func TestButtonBlocks(t *testing.T) {
	many := make([]channel.Button, 26)
	for i := range many {
		many[i] = channel.Button{Label: "b", Data: "d"}
	}
	tests := []struct {
		name     string
		text     string
		buttons  []channel.Button
		sections []int // rune counts of the sections
		wantErr  string
	}{
		{name: "short", text: "run ls?", buttons: approve, sections: []int{7}},
		{name: "long text is cut at a line end", text: strings.Repeat("a", 2000) + "\n" + strings.Repeat("é", 2000), buttons: approve[:1], sections: []int{2001, 2000}},
		{name: "long line is cut at the limit", text: strings.Repeat("é", 6500), buttons: approve[:1], sections: []int{3000, 3000, 500}},
		{name: "no label", text: "x", buttons: []channel.Button{{Data: "d"}}, wantErr: "button 1: the label must be 1 to 75 characters"},
		{name: "long label", text: "x", buttons: []channel.Button{{Label: strings.Repeat("l", 76), Data: "d"}}, wantErr: "the label must be 1 to 75"},
		{name: "no data", text: "x", buttons: []channel.Button{{Label: "l"}}, wantErr: "the data must be 1 to 2000"},
		{name: "long data", text: "x", buttons: []channel.Button{{Label: "l", Data: strings.Repeat("d", 2001)}}, wantErr: "the data must be 1 to 2000"},
		{name: "too many", text: "x", buttons: many, wantErr: "26 buttons, more than Slack's 25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks, err := buttonBlocks(tt.text, tt.buttons)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			var joined string
			for _, b := range blocks[:len(blocks)-1] {
				got = append(got, utf8.RuneCountInString(b.Text.Text))
				joined += b.Text.Text
			}
			if !slices.Equal(got, tt.sections) || joined != tt.text {
				t.Errorf("sections %v, want %v (text kept whole: %v)", got, tt.sections, joined == tt.text)
			}
			if last := blocks[len(blocks)-1]; last.Type != "actions" || len(last.Elements) != len(tt.buttons) {
				t.Errorf("last block %+v", last)
			}
		})
	}
}

func TestSendButtons(t *testing.T) {
	r := start(t, ModeSocket)
	r.waitReady()
	r.says(slacktest.Message{Kind: "channel", Text: "hi"})
	sent, err := r.app.Send(testCtx(t), channel.Outbound{Target: room, Text: "Run *ls*?", Buttons: approve, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	posted := r.fake.Sent()
	if len(posted) != 1 || posted[0].TS != sent.MessageID {
		t.Fatalf("posted %+v", posted)
	}
	p := posted[0]
	want := []slacktest.Button{
		{Text: "Allow once", Value: "/approve 1a2b allow-once", ActionID: "talon_button_0"},
		{Text: "Allow always", Value: "/approve 1a2b allow-always", ActionID: "talon_button_1"},
		{Text: "Deny", Value: "/approve 1a2b deny", ActionID: "talon_button_2"},
	}
	if d := cmp.Diff(want, p.Buttons); d != "" || p.Text != "Run *ls*?" || !slices.Equal(p.Sections, []string{"Run *ls*?"}) {
		t.Errorf("posted %+v; buttons (-want +got):\n%s", p, d)
	}
	_, err = r.app.Send(testCtx(t), channel.Outbound{Target: room, Text: "x", Buttons: []channel.Button{{Label: "no data"}}, Key: "k2"})
	if err == nil || !strings.Contains(err.Error(), "slack send: button 1: the data must be") || len(r.fake.Sent()) != 1 {
		t.Errorf("a bad button: %v, posted %d", err, len(r.fake.Sent()))
	}
}

// pressRig posted an approval into a room, into a thread of it and to a
// DM, ready to be pressed.
type pressRig struct {
	*rig
	roomTS, threadTS, thread, dmTS string
}

func startPress(t *testing.T, mode string) pressRig {
	t.Helper()
	r := start(t, mode)
	r.waitReady()
	pr := pressRig{rig: r}
	pr.thread = r.says(slacktest.Message{Kind: "channel", Text: "hi"})[0].TS
	r.says(slacktest.Message{Text: "dm"})
	r.envelopes(2)
	for _, p := range []struct {
		to  channel.Target
		out *string
	}{{room, &pr.roomTS}, {channel.Target{Peer: room.Peer, ThreadID: pr.thread}, &pr.threadTS},
		{channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "U0ALICE"}}, &pr.dmTS}} {
		sent, err := r.app.Send(testCtx(t), channel.Outbound{Target: p.to, Text: "Run ls?", Buttons: approve, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		*p.out = sent.MessageID
	}
	return pr
}

func TestPress(t *testing.T) {
	tests := []struct {
		name  string
		press func(pr pressRig) slacktest.Press
		want  func(pr pressRig, e *channel.Envelope)
	}{
		{"in a room", func(pr pressRig) slacktest.Press {
			return slacktest.Press{User: "U0BOB", TS: pr.roomTS, ActionID: "talon_button_2"}
		}, func(pr pressRig, e *channel.Envelope) {
			e.Sender.ID, e.Text = "U0BOB", "/approve 1a2b deny"
		}},
		{"in a thread", func(pr pressRig) slacktest.Press {
			return slacktest.Press{TS: pr.threadTS, ActionID: "talon_button_0"}
		}, func(pr pressRig, e *channel.Envelope) { e.ThreadID = pr.thread }},
		{"in a dm", func(pr pressRig) slacktest.Press {
			return slacktest.Press{TS: pr.dmTS, ActionID: "talon_button_0"}
		}, func(pr pressRig, e *channel.Envelope) { e.Peer = channel.Peer{Kind: channel.Direct, ID: "U0ALICE"} }},
	}
	for _, mode := range modes {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				pr := startPress(t, mode)
				ev, err := pr.fake.Press(testCtx(t), tt.press(pr))
				if err != nil {
					t.Fatal(err)
				}
				want := channel.Envelope{Channel: "slack", AccountID: "work", DeliveryID: ev.ID, MessageID: ev.TS,
					Peer:   channel.Peer{Kind: channel.Room, ID: "C0GENERAL"},
					Sender: channel.Sender{ID: "U0ALICE", Username: "alice", Name: "alice"}, Text: "/approve 1a2b allow-once",
					Pressed: true, Mentioned: true, TeamID: slacktest.TeamID, Time: tsTime(ev.TS)}
				tt.want(pr, &want)
				if d := cmp.Diff(want, pr.envelopes(3)[2]); d != "" {
					t.Errorf("envelope (-want +got):\n%s", d)
				}
				pressAcked(t, pr.rig, ev, true)
			})
		}
	}
}

// pressAcked checks whether the press was acknowledged: its envelope in
// socket mode, a 200 over HTTP.
func pressAcked(t *testing.T, r *rig, ev slacktest.Event, want bool) {
	t.Helper()
	if ev.EnvelopeID == "" {
		if got := ev.Status == http.StatusOK; got != want || (want && ev.Body != "") {
			t.Errorf("answer %d %q, acknowledged %v, want %v", ev.Status, ev.Body, got, want)
		}
		return
	}
	// A later envelope on the same connection is acked after the press
	// was handled, so by then the press's ack is there or never comes.
	later := r.says(slacktest.Message{Text: "later"})[0]
	if err := r.fake.WaitAcked(testCtx(t), later.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	if got := slices.Contains(r.fake.Acked(), ev.EnvelopeID); got != want {
		t.Errorf("press acknowledged %v, want %v", got, want)
	}
}

func TestPressNotTaken(t *testing.T) {
	tests := []struct {
		name   string
		fail   bool // accept refuses
		edit   func(map[string]any)
		status int
		acked  bool
	}{
		{name: "accept refuses: not acknowledged", fail: true, status: http.StatusInternalServerError},
		{name: "no user: acknowledged and dropped", edit: func(p map[string]any) { delete(p, "user") }, status: http.StatusOK, acked: true},
		{name: "no message: acknowledged and dropped", edit: func(p map[string]any) { delete(p, "message"); delete(p, "container") }, status: http.StatusOK, acked: true},
		{name: "not a press: acknowledged", edit: func(p map[string]any) { p["type"] = "view_submission" }, status: http.StatusOK, acked: true},
	}
	for _, mode := range modes {
		for _, tt := range tests {
			t.Run(fmt.Sprint(mode, "/", tt.name), func(t *testing.T) {
				pr := startPress(t, mode)
				pr.mu.Lock()
				if tt.fail {
					pr.failNext = 1
				}
				pr.mu.Unlock()
				ev, err := pr.fake.Press(testCtx(t), slacktest.Press{TS: pr.roomTS, ActionID: "talon_button_0", Edit: tt.edit})
				if err != nil {
					t.Fatal(err)
				}
				if mode == ModeHTTP && ev.Status != tt.status {
					t.Errorf("status %d, want %d", ev.Status, tt.status)
				}
				pressAcked(t, pr.rig, ev, tt.acked)
				for _, e := range pr.envelopes(2) {
					if e.Pressed {
						t.Errorf("a press was accepted: %+v", e)
					}
				}
			})
		}
	}
}
