package slacktest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"unicode/utf8"
)

// Button is one button of a posted message's actions block.
type Button struct {
	Text     string `json:"text"`
	Value    string `json:"value"`
	ActionID string `json:"action_id"`
}

// parseBlocks checks blocks (a JSON array, or a string of one as a form
// sends it) against Block Kit's limits for the two block types the fake
// knows, and returns the section texts and the buttons.
func parseBlocks(v any) (sections []string, buttons []Button, err error) {
	raw, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		raw = string(b)
	}
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type string `json:"type"`
			Text struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
			Value    string `json:"value"`
			ActionID string `json:"action_id"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return nil, nil, fmt.Errorf("blocks are not a JSON array: %v", err)
	}
	if len(blocks) == 0 || len(blocks) > 50 {
		return nil, nil, errors.New("must have 1 to 50 blocks")
	}
	ids := map[string]bool{}
	for i, b := range blocks {
		switch b.Type {
		case "section":
			if b.Text == nil || (b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text") || b.Text.Text == "" || utf8.RuneCountInString(b.Text.Text) > 3000 {
				return nil, nil, fmt.Errorf("[%d] section text must be 1 to 3000 characters", i)
			}
			sections = append(sections, b.Text.Text)
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				return nil, nil, fmt.Errorf("[%d] actions must have 1 to 25 elements", i)
			}
			for j, e := range b.Elements {
				switch {
				case e.Type != "button":
					return nil, nil, fmt.Errorf("[%d][%d] unsupported element %q", i, j, e.Type)
				case e.Text.Type != "plain_text" || e.Text.Text == "" || utf8.RuneCountInString(e.Text.Text) > 75:
					return nil, nil, fmt.Errorf("[%d][%d] button text must be plain_text of 1 to 75 characters", i, j)
				case utf8.RuneCountInString(e.Value) > 2000:
					return nil, nil, fmt.Errorf("[%d][%d] value is longer than 2000 characters", i, j)
				case e.ActionID == "" || len(e.ActionID) > 255 || ids[e.ActionID]:
					return nil, nil, fmt.Errorf("[%d][%d] action_id must be 1 to 255 characters and unique", i, j)
				}
				ids[e.ActionID] = true
				buttons = append(buttons, Button{Text: e.Text.Text, Value: e.Value, ActionID: e.ActionID})
			}
		default:
			return nil, nil, fmt.Errorf("[%d] block type %q is not known to the fake", i, b.Type)
		}
	}
	return sections, buttons, nil
}

// Press is a person pressing a button on one of the bot's messages.
type Press struct {
	User string // default "U0ALICE"
	// TS is the posted message's ts (Posted.TS) and ActionID the
	// button's; the fake finds the message and the button's value.
	TS       string
	ActionID string
	// Edit changes the block_actions payload before it is sent, to make
	// one the app cannot map.
	Edit func(payload map[string]any)
}

// Press delivers a block_actions payload as Slack does: over Socket Mode
// as an "interactive" envelope, or, once SetRequestURL was called, as a
// signed form POST with the JSON in its payload field.
func (s *Server) Press(ctx context.Context, p Press) (Event, error) {
	payload, e, err := s.pressPayload(p)
	if err != nil {
		return Event{}, err
	}
	if p.Edit != nil {
		p.Edit(payload)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return Event{}, fmt.Errorf("slacktest: encoding the press: %w", err)
	}
	e.Payload = raw
	s.mu.Lock()
	target := s.requestURL
	s.mu.Unlock()
	if target == "" {
		e.EnvelopeID = s.enqueue("interactive", raw)
		return e, nil
	}
	form := url.Values{"payload": {string(raw)}}.Encode()
	e.Status, e.Body, err = s.Post(ctx, target, []byte(form), PostOptions{ContentType: "application/x-www-form-urlencoded"})
	return e, err
}

// pressPayload builds the block_actions payload of p.
func (s *Server) pressPayload(p Press) (map[string]any, Event, error) {
	p.User = cmp.Or(p.User, "U0ALICE")
	s.mu.Lock()
	defer s.mu.Unlock()
	var post *Posted
	for i := range s.posted {
		if s.posted[i].TS == p.TS {
			post = &s.posted[i]
		}
	}
	if post == nil {
		return nil, Event{}, fmt.Errorf("slacktest: the bot posted no message %s", p.TS)
	}
	var btn *Button
	for i := range post.Buttons {
		if post.Buttons[i].ActionID == p.ActionID {
			btn = &post.Buttons[i]
		}
	}
	if btn == nil {
		return nil, Event{}, fmt.Errorf("slacktest: message %s has no button %q", p.TS, p.ActionID)
	}
	conv := post.Channel
	if isUserID(conv) {
		conv = s.imOf(conv)
	}
	s.seq++
	actionTS := fmt.Sprintf("%d.%06d", 1777000000+s.seq, s.seq)
	trigger := fmt.Sprintf("%d.%d.%032x", 1777000000+s.seq, 4242, s.seq)
	container := map[string]any{"type": "message", "message_ts": p.TS, "channel_id": conv, "is_ephemeral": false}
	message := map[string]any{"type": "message", "user": BotUserID, "bot_id": BotID, "text": post.Text, "ts": p.TS}
	if post.ThreadTS != "" {
		container["thread_ts"], message["thread_ts"] = post.ThreadTS, post.ThreadTS
	}
	payload := map[string]any{
		"type": "block_actions", "token": "verification-token-unused", "api_app_id": AppID, "trigger_id": trigger,
		"user":      map[string]any{"id": p.User, "username": "alice", "name": "alice", "team_id": TeamID},
		"team":      map[string]any{"id": TeamID, "domain": "talon-test"},
		"channel":   map[string]any{"id": conv, "name": "general"},
		"container": container, "message": message, "state": map[string]any{"values": map[string]any{}},
		"response_url": "https://hooks.slack.com/actions/" + TeamID + "/1/fake",
		"actions": []map[string]any{{"type": "button", "action_id": btn.ActionID, "block_id": "talon_buttons",
			"text": map[string]any{"type": "plain_text", "text": btn.Text, "emoji": true}, "value": btn.Value, "action_ts": actionTS}},
	}
	return payload, Event{ID: trigger, Type: "block_actions", TS: actionTS, Channel: conv}, nil
}
