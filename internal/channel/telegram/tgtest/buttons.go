package tgtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Button is an inline keyboard button with callback data.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// Markup is an InlineKeyboardMarkup.
type Markup struct {
	InlineKeyboard [][]Button `json:"inline_keyboard"`
}

// replyMarkup reads sendMessage's reply_markup (inline keyboards only),
// or Telegram's refusal.
func replyMarkup(p map[string]json.RawMessage) (*Markup, string) {
	raw, ok := p["reply_markup"]
	if !ok {
		return nil, ""
	}
	var m Markup
	if json.Unmarshal(raw, &m) != nil || m.InlineKeyboard == nil {
		return nil, "can't parse reply keyboard markup JSON object"
	}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			switch {
			case strings.TrimSpace(b.Text) == "":
				return nil, "text buttons are unallowed in the inline keyboard"
			case b.CallbackData == "" || len(b.CallbackData) > 64 || !utf8.ValidString(b.CallbackData):
				return nil, "BUTTON_DATA_INVALID"
			}
		}
	}
	return &m, ""
}

func buttonRows(m *Markup) [][]Button {
	if m == nil {
		return nil
	}
	return m.InlineKeyboard
}

// Press is a user pressing an inline button under one of the bot's
// messages.
type Press struct {
	From User
	// Chat and MessageID name the bot's message; Chat 0 is the private
	// chat with From.
	Chat      int64
	MessageID int64
	Data      string // one of the message's buttons' callback_data
}

// UserPresses queues the callback_query update of p and returns the
// query's id and the update's. Telegram sends only data a button of the
// message has, so other data is an error.
func (s *Server) UserPresses(p Press) (string, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := p.Chat
	if chat == 0 {
		chat = p.From.ID
	}
	m := s.messages[msgKey(chat, p.MessageID)]
	if m == nil {
		return "", 0, fmt.Errorf("tgtest: no message %d in chat %d", p.MessageID, chat)
	}
	if !slices.ContainsFunc(slices.Concat(buttonRows(m.ReplyMarkup)...), func(b Button) bool { return b.CallbackData == p.Data }) {
		return "", 0, fmt.Errorf("tgtest: message %d has no button with data %q", p.MessageID, p.Data)
	}
	s.nextMsg++
	id := fmt.Sprintf("4%018d", s.nextMsg)
	s.presses[id] = true
	from := p.From
	up := s.enqueueLocked(map[string]any{"callback_query": map[string]any{
		"id": id, "from": &from, "message": m, "chat_instance": "-" + strconv.FormatInt(chat, 10), "data": p.Data,
	}})
	return id, up, nil
}

// Answer is an answerCallbackQuery the fake took.
type Answer struct {
	ID   string
	Text string
}

// Answers are the button presses the bot answered, in order.
func (s *Server) Answers() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answers)
}

// WaitAnswers waits until the bot has answered n presses and returns
// the answers.
func (s *Server) WaitAnswers(ctx context.Context, n int) ([]Answer, error) {
	err := s.Wait(ctx, func() bool { return len(s.Answers()) >= n })
	if err != nil {
		return s.Answers(), fmt.Errorf("tgtest: waiting for %d answered presses: %w", n, err)
	}
	return s.Answers(), nil
}

func (s *Server) answerCallbackQuery(w http.ResponseWriter, p map[string]json.RawMessage) {
	id := strParam(p, "callback_query_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.presses[id] {
		refuse(w, badRequest("query is too old and response timeout expired or query ID is invalid"))
		return
	}
	delete(s.presses, id)
	s.answers = append(s.answers, Answer{ID: id, Text: strParam(p, "text")})
	s.notify()
	reply(w, true)
}
