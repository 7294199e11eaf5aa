package tgtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Poll is a poll as Telegram describes it on a message.
type Poll struct {
	ID                    string       `json:"id"`
	Question              string       `json:"question"`
	Options               []PollOption `json:"options"`
	TotalVoterCount       int          `json:"total_voter_count"`
	IsClosed              bool         `json:"is_closed"`
	IsAnonymous           bool         `json:"is_anonymous"`
	Type                  string       `json:"type"`
	AllowsMultipleAnswers bool         `json:"allows_multiple_answers"`
	OpenPeriod            int64        `json:"open_period,omitempty"`
}

// PollOption is one answer of a Poll.
type PollOption struct {
	Text       string `json:"text"`
	VoterCount int    `json:"voter_count"`
}

// SentPoll is a sendPoll the fake carried out.
type SentPoll struct {
	MessageID  int64
	ChatID     string
	ThreadID   int64
	Question   string
	Options    []string
	Multi      bool
	Anonymous  bool
	OpenPeriod int64
}

// Polls are the polls the bot has sent, in order.
func (s *Server) Polls() []SentPoll {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sentPolls)
}

func (s *Server) sendPoll(w http.ResponseWriter, p map[string]json.RawMessage) {
	f := s.nextFailure("sendPoll")
	if f != nil && !f.Drop {
		refuse(w, *f)
		return
	}
	chatID, ok := chatParam(p)
	poll, bad := pollParams(p)
	if bad == "" && !ok {
		bad = "chat not found"
	}
	thread := intParam(p, "message_thread_id")
	if bad == "" && thread == 1 {
		bad = "message thread not found"
	}
	if bad != "" {
		refuse(w, badRequest(bad))
		return
	}
	s.mu.Lock()
	chatNum, _ := strconv.ParseInt(chatID, 10, 64)
	s.nextMsg++
	bot := s.Bot
	poll.ID = fmt.Sprintf("5%d", s.nextMsg)
	msg := Message{MessageID: s.nextMsg, From: &bot, Chat: s.botChatLocked(chatNum, thread), Date: time.Now().Unix(),
		MessageThreadID: thread, IsTopicMessage: thread != 0, Poll: &poll}
	s.messages[msgKey(chatNum, msg.MessageID)] = &msg
	sp := SentPoll{MessageID: msg.MessageID, ChatID: chatID, ThreadID: thread, Question: poll.Question,
		Multi: poll.AllowsMultipleAnswers, Anonymous: poll.IsAnonymous, OpenPeriod: poll.OpenPeriod}
	for _, o := range poll.Options {
		sp.Options = append(sp.Options, o.Text)
	}
	s.sentPolls = append(s.sentPolls, sp)
	s.notify()
	s.mu.Unlock()
	answer(w, f, msg)
}

// pollParams reads sendPoll's question and options (InputPollOption
// objects) under Telegram's limits, or its refusal.
func pollParams(p map[string]json.RawMessage) (Poll, string) {
	poll := Poll{Question: strParam(p, "question"), Type: "regular", IsAnonymous: true}
	if raw, ok := p["is_anonymous"]; ok {
		poll.IsAnonymous = string(raw) != "false"
	}
	poll.AllowsMultipleAnswers = string(p["allows_multiple_answers"]) == "true"
	var opts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(p["options"], &opts) != nil {
		return Poll{}, "can't parse InputPollOption JSON object"
	}
	switch n := utf16Len(strings.TrimSpace(poll.Question)); {
	case n == 0:
		return Poll{}, "poll question must be non-empty"
	case n > 300:
		return Poll{}, "poll question length must not exceed 300"
	case len(opts) < 2:
		return Poll{}, "poll must have at least 2 option"
	case len(opts) > 12:
		return Poll{}, "poll can't have more than 12 options"
	}
	for _, o := range opts {
		if n := utf16Len(strings.TrimSpace(o.Text)); n == 0 || n > 100 {
			return Poll{}, "poll options length must not exceed 100"
		}
		poll.Options = append(poll.Options, PollOption{Text: o.Text})
	}
	if _, ok := p["open_period"]; ok {
		poll.OpenPeriod = intParam(p, "open_period")
		if poll.OpenPeriod < 5 || poll.OpenPeriod > 600 {
			return Poll{}, "wrong open_period specified"
		}
	}
	return poll, ""
}
