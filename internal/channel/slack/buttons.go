package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"talon/internal/channel"
)

// Slack's Block Kit limits that buttons meet.
const (
	maxButtons     = 25   // elements of one actions block
	maxButtonText  = 75   // characters of a button's label
	maxButtonValue = 2000 // characters of a button's value
	maxSectionText = 3000 // characters of one section block's text
	actionIDPrefix = "talon_button_"
	buttonsBlockID = "talon_buttons"
)

// textObject is a Block Kit text object.
type textObject struct {
	Type  string `json:"type"` // mrkdwn or plain_text
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

// block is a section (Text) or an actions block (Elements).
type block struct {
	Type     string          `json:"type"`
	BlockID  string          `json:"block_id,omitempty"`
	Text     *textObject     `json:"text,omitempty"`
	Elements []buttonElement `json:"elements,omitempty"`
}

// buttonElement is a Block Kit button.
type buttonElement struct {
	Type     string     `json:"type"`
	Text     textObject `json:"text"`
	Value    string     `json:"value"`
	ActionID string     `json:"action_id"`
}

// buttonBlocks lays text out as section blocks followed by one actions
// block of bs. A section holds 3,000 characters, so a longer text takes
// several, cut at a line end where there is one.
func buttonBlocks(text string, bs []channel.Button) ([]block, error) {
	if len(bs) > maxButtons {
		return nil, fmt.Errorf("%d buttons, more than Slack's %d in one row", len(bs), maxButtons)
	}
	var out []block
	for _, part := range sections(text, maxSectionText) {
		out = append(out, block{Type: "section", Text: &textObject{Type: "mrkdwn", Text: part}})
	}
	actions := block{Type: "actions", BlockID: buttonsBlockID}
	for i, b := range bs {
		if err := checkButton(b); err != nil {
			return nil, fmt.Errorf("button %d: %w", i+1, err)
		}
		actions.Elements = append(actions.Elements, buttonElement{Type: "button",
			Text:  textObject{Type: "plain_text", Text: b.Label, Emoji: true},
			Value: b.Data, ActionID: fmt.Sprint(actionIDPrefix, i)})
	}
	return append(out, actions), nil
}

// checkButton refuses a button Slack would refuse.
func checkButton(b channel.Button) error {
	switch {
	case b.Label == "" || !utf8.ValidString(b.Label) || utf8.RuneCountInString(b.Label) > maxButtonText:
		return fmt.Errorf("the label must be 1 to %d characters of UTF-8", maxButtonText)
	case b.Data == "" || !utf8.ValidString(b.Data) || utf8.RuneCountInString(b.Data) > maxButtonValue:
		return fmt.Errorf("the data must be 1 to %d characters of UTF-8", maxButtonValue)
	}
	return nil
}

// sections cuts text into parts of at most n characters, each ending at
// the last line end inside it when there is one.
func sections(text string, n int) []string {
	var out []string
	for utf8.RuneCountInString(text) > n {
		cut := 0
		for range n {
			_, size := utf8.DecodeRuneInString(text[cut:])
			cut += size
		}
		if nl := strings.LastIndexByte(text[:cut], '\n'); nl > 0 {
			cut = nl + 1
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return append(out, text)
}

// interaction is a block_actions payload: a press of a button. Every
// field is untrusted.
type interaction struct {
	Type      string `json:"type"`
	TriggerID string `json:"trigger_id"`
	User      struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Name     string `json:"name"`
		TeamID   string `json:"team_id"`
	} `json:"user"`
	Team struct {
		ID string `json:"id"`
	} `json:"team"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Container struct {
		MessageTS string `json:"message_ts"`
		ChannelID string `json:"channel_id"`
		ThreadTS  string `json:"thread_ts"`
	} `json:"container"`
	Message *struct {
		TS       string `json:"ts"`
		ThreadTS string `json:"thread_ts"`
	} `json:"message"`
	Actions []struct {
		Type     string `json:"type"`
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
		ActionTS string `json:"action_ts"`
	} `json:"actions"`
}

// triggerRE is a trigger id's alphabet; its length (at most 128) is
// checked apart: a bounded repeat compiles to one program step per repeat.
var triggerRE = regexp.MustCompile(`^[0-9A-Za-z.]+$`)

// press finds what in.Actions pressed and where; ok is false when the
// press cannot be mapped (no user, no message, no button with a value).
func press(in interaction) (channelID, value, actionTS string, ok bool) {
	channelID = cmpOr(in.Channel.ID, in.Container.ChannelID)
	if !validID(in.User.ID) || !validID(channelID) {
		return "", "", "", false
	}
	for _, act := range in.Actions {
		if act.Type == "button" && act.Value != "" && tsRE.MatchString(act.ActionTS) {
			if len(act.Value) > 4*maxButtonValue || !utf8.ValidString(act.Value) {
				return "", "", "", false
			}
			return channelID, act.Value, act.ActionTS, true
		}
	}
	return "", "", "", false
}

// pressEnvelope maps a button press in a conversation of kind: the
// presser says the button's value, addressed to the bot, in the thread of
// the message the button is on. MessageID is the press's action_ts,
// DeliveryID its trigger_id.
func pressEnvelope(account string, in interaction, kind channel.Kind) (channel.Envelope, bool) {
	ch, value, actionTS, ok := press(in)
	msgTS, thread := in.Container.MessageTS, in.Container.ThreadTS
	if m := in.Message; m != nil {
		msgTS, thread = cmpOr(m.TS, msgTS), cmpOr(m.ThreadTS, thread)
	}
	if !ok || !tsRE.MatchString(msgTS) {
		return channel.Envelope{}, false
	}
	e := channel.Envelope{
		Channel: "slack", AccountID: account,
		DeliveryID: "press:" + actionTS,
		MessageID:  actionTS,
		Peer:       channel.Peer{Kind: kind, ID: ch},
		Sender: channel.Sender{ID: in.User.ID, Username: cleanText(in.User.Username, 200),
			Name: cleanText(in.User.Name, 200)},
		Text: value, Pressed: true, Mentioned: true,
		Time: tsTime(actionTS),
	}
	if len(in.TriggerID) <= 128 && triggerRE.MatchString(in.TriggerID) {
		e.DeliveryID = in.TriggerID
	}
	if kind == channel.Direct {
		e.Peer.ID = in.User.ID
	}
	if thread != msgTS && tsRE.MatchString(thread) {
		e.ThreadID = thread
	}
	if team := cmpOr(in.User.TeamID, in.Team.ID); validID(team) {
		e.TeamID = team
	}
	return e, true
}

// handleInteractive passes a button press to accept. A payload that is
// not a press, or a press that cannot be mapped, is taken (nil: the
// caller acknowledges it) and dropped; an error means accept refused it
// and it must not be acknowledged.
func (a *App) handleInteractive(ctx context.Context, raw []byte, accept channel.Accept) error {
	var in interaction
	if err := json.Unmarshal(raw, &in); err != nil {
		a.log.Warn("slack: dropping an interactive payload that is not JSON", "err", err)
		return nil
	}
	if in.Type != "block_actions" {
		a.log.Info("slack: acknowledging an interactive payload Talon does not handle", "type", clip(in.Type, 40))
		return nil
	}
	ch, _, _, ok := press(in)
	if !ok {
		a.log.Warn("slack: dropping a button press without a user, a channel or a button value")
		return nil
	}
	e, ok := pressEnvelope(a.account, in, a.conversationKind(ctx, message{Channel: ch}))
	if !ok {
		a.log.Warn("slack: dropping a button press without the message it was on")
		return nil
	}
	if e.Peer.Kind == channel.Direct {
		a.dms.put(e.Peer.ID, ch)
	}
	if err := accept(ctx, e); err != nil {
		return fmt.Errorf("slack button press %s: accept: %w", e.DeliveryID, err)
	}
	a.mu.Lock()
	a.st.LastInboundAt = a.now()
	a.mu.Unlock()
	return nil
}
