package studio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"talon/internal/compaction"
	"talon/internal/platform/relay"
	"talon/internal/sse"
)

const (
	// maxMessage bounds a chat message typed in Studio.
	maxMessage = 64 << 10
	// maxSessionKey bounds a session key in a URL or form.
	maxSessionKey = 256
	// historyLimit is how many messages a chat page shows.
	historyLimit = 200
)

// chatView is the chat page.
type chatView struct {
	Agent     agentInfo
	Session   string
	Messages  []message
	LastSeq   int64
	Approvals []card
}

// message is one transcript message as the chat shows it.
type message struct {
	Seq     int64
	Role    string // user, assistant, tool or system
	Text    string
	Calls   []toolCall
	Tool    string
	IsError bool
	// Divider marks a compaction: the model sees a summary of what came
	// before the kept tail; the messages stay here.
	Divider bool
}

type toolCall struct {
	Name, Args string
}

// card is an approval card.
type card struct {
	relay.Approval
	Base, CSRF, Back string
	// Error says why resolving failed.
	Error string
}

// sessionFor validates the session key of a chat with agent id: one of
// the agent's sessions ("agent:<id>:…"), or its main key (which may be
// "global"); empty means the main session.
func sessionFor(key, id, mainKey string) (string, error) {
	key = strings.TrimSpace(key)
	switch {
	case key == "":
		return mainKey, nil
	case len(key) > maxSessionKey:
		return "", fmt.Errorf("The session key is %d bytes long; at most %d.", len(key), maxSessionKey)
	case !utf8.ValidString(key) || strings.IndexFunc(key, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return "", errors.New("A session key has no spaces or control characters.")
	case key == mainKey, strings.HasPrefix(strings.ToLower(key), "agent:"+id+":") && len(key) > len("agent:"+id+":"):
		return key, nil
	}
	return "", fmt.Errorf("%q is not a session of agent %q: its sessions start with agent:%s:.", key, id, id)
}

// mainKeyOf is the agent's main session key as agents.list describes it.
func (l agentsList) mainKeyOf(id string) string {
	if strings.EqualFold(l.Scope, "global") {
		return "global"
	}
	mk := l.MainKey
	if mk == "" {
		mk = "main"
	}
	return "agent:" + id + ":" + mk
}

// chatAgent resolves the agent and session of a chat request.
func (s *Server) chatAgent(q *req, key string) (agentInfo, string, bool) {
	a, l, ok := s.pathAgent(q)
	if !ok {
		return agentInfo{}, "", false
	}
	sk, err := sessionFor(key, a.ID, l.mainKeyOf(a.ID))
	if err != nil {
		s.fail(q.w, q.r, q.sess, http.StatusBadRequest, err.Error())
		return agentInfo{}, "", false
	}
	return a, sk, true
}

func (s *Server) chatPage(q *req) {
	a, key, ok := s.chatAgent(q, q.r.URL.Query().Get("session"))
	if !ok {
		return
	}
	v := &chatView{Agent: a, Session: key}
	p := s.newPage(q, "Chat with "+a.Label(), "agents", v)
	msgs, err := s.history(q, key)
	if err != nil {
		p.Error = s.errText(q, err)
	}
	v.Messages = msgs
	if n := len(msgs); n > 0 {
		v.LastSeq = msgs[n-1].Seq
	}
	var pending struct {
		Approvals []struct {
			ID          string         `json:"id"`
			Request     relay.Approval `json:"request"`
			ExpiresAtMs int64          `json:"expiresAtMs"`
		} `json:"approvals"`
	}
	if err := s.call(q, "exec.approval.list", nil, &pending); err == nil {
		for _, a := range pending.Approvals {
			if a.Request.SessionKey == key {
				ap := a.Request
				ap.ID, ap.ExpiresAtMs = a.ID, a.ExpiresAtMs
				v.Approvals = append(v.Approvals, s.card(q, ap, key))
			}
		}
	}
	s.render(q.w, http.StatusOK, "chat", p)
}

func (s *Server) card(q *req, a relay.Approval, key string) card {
	return card{Approval: a, Base: q.base, CSRF: q.sess.csrf, Back: q.base + "/agents/" + q.r.PathValue("agent") + "/chat?session=" + key}
}

// history reads the session's transcript as messages.
func (s *Server) history(q *req, key string) ([]message, error) {
	var h struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := s.call(q, "chat.history", map[string]any{"sessionKey": key, "limit": historyLimit}, &h); err != nil {
		return nil, err
	}
	out := make([]message, 0, len(h.Messages))
	for _, raw := range h.Messages {
		if m, ok := decodeMessage(raw); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// decodeMessage turns a chat.history message into a message.
func decodeMessage(raw json.RawMessage) (message, bool) {
	var m struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"content"`
		ToolName string `json:"toolName"`
		IsError  bool   `json:"isError"`
		Meta     struct {
			Seq          int64  `json:"seq"`
			SystemEvent  bool   `json:"systemEvent"`
			Kind         string `json:"kind"`
			TokensBefore int64  `json:"tokensBefore"`
			TokensAfter  int64  `json:"tokensAfter"`
			HardTrim     bool   `json:"hardTrim"`
		} `json:"__openclaw"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return message{}, false
	}
	out := message{Seq: m.Meta.Seq, Role: m.Role, Tool: m.ToolName, IsError: m.IsError}
	var text strings.Builder
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			text.WriteString(c.Text)
		case "toolCall":
			out.Calls = append(out.Calls, toolCall{Name: c.Name, Args: compact(c.Arguments)})
		}
	}
	out.Text = text.String()
	switch {
	case m.Role == "system" && m.Meta.Kind == "compaction":
		out.Divider, out.Text = true, compactedText(m.Meta.TokensBefore, m.Meta.TokensAfter, m.Meta.HardTrim)
	case m.Meta.SystemEvent:
		out.Role, out.Text = "system", strings.TrimPrefix(out.Text, "System: ")
	case m.Role == "toolResult":
		out.Role = "tool"
	case m.Role != "user" && m.Role != "assistant":
		return message{}, false
	}
	return out, true
}

// compactedText is the divider's line: what the agent sees from here on.
func compactedText(before, after int64, hardTrim bool) string {
	how := "summarised"
	if hardTrim {
		how = "dropped without a summary (summarising failed)"
	}
	t := "Context compacted: the earlier messages are " + how + " for the agent; they stay here"
	if before > 0 {
		t += fmt.Sprintf(" (%s → %s tokens)", compaction.FormatTokens(before), compaction.FormatTokens(after))
	}
	return t + "."
}

// compactionLine is a live compaction event as the chat shows it; "" for
// one not worth a line (a start without a notice).
func compactionLine(c *relay.Compaction) string {
	switch {
	case c == nil:
		return ""
	case c.Notice != "" && c.Phase == "end" && c.Reason == "manual":
		return ""
	case c.Phase == "start":
		return c.Notice
	case !c.Completed:
		return "Compacting the context failed; the conversation goes on as it was."
	}
	return compactedText(c.TokensBefore, c.TokensAfter, c.Outcome == "hard-trim")
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// chatSince answers the chat script's poll: the messages after seq, as
// HTML, with the last seq in X-Last-Seq.
func (s *Server) chatSince(q *req) {
	_, key, ok := s.chatAgent(q, q.r.URL.Query().Get("session"))
	if !ok {
		return
	}
	after, err := strconv.ParseInt(q.r.URL.Query().Get("after"), 10, 64)
	if err != nil || after < 0 {
		http.Error(q.w, "after must be a message number (0 or more)", http.StatusBadRequest)
		return
	}
	msgs, err := s.history(q, key)
	if err != nil {
		http.Error(q.w, s.errText(q, err), http.StatusBadGateway)
		return
	}
	var fresh []message
	last := after
	for _, m := range msgs {
		if m.Seq > after {
			fresh = append(fresh, m)
			last = m.Seq
		}
	}
	q.w.Header().Set("X-Last-Seq", strconv.FormatInt(last, 10))
	s.fragment(q.w, "messages", fresh)
}

// chatSend runs one turn and streams it to the page as server-sent
// events: delta (the reply so far), tool (a call starting or
// returning), approval (a card to insert), approval-resolved, and end.
// The run belongs to the gateway: a page closed mid-turn stops the
// stream, not the run, whose reply lands in the session's history.
func (s *Server) chatSend(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, maxMessage+4096)
	if err := q.r.ParseForm(); err != nil {
		http.Error(q.w, "The message is too long: at most 64 KiB.", http.StatusRequestEntityTooLarge)
		return
	}
	text := q.r.PostFormValue("message")
	switch {
	case strings.TrimSpace(text) == "":
		http.Error(q.w, "Type a message first.", http.StatusBadRequest)
		return
	case len(text) > maxMessage:
		http.Error(q.w, "The message is too long: at most 64 KiB.", http.StatusRequestEntityTooLarge)
		return
	case !utf8.ValidString(text):
		http.Error(q.w, "The message is not valid text.", http.StatusBadRequest)
		return
	}
	a, key, ok := s.chatAgent(q, q.r.PostFormValue("session"))
	if !ok {
		return
	}
	out := sse.Start(q.w)
	// A page gone ends the stream; the wait ends with its context.
	send := func(event string, v any) { out.JSON(event, v) }
	end, err := s.o.Relay.Chat(q.r.Context(), relay.Message{Tenant: q.tenant, AgentID: a.ID, SessionKey: key, Text: text, Approvals: true}, func(e relay.Event) {
		switch e.Kind {
		case "delta":
			send("delta", map[string]string{"text": e.Text})
		case "tool":
			send("tool", e.Tool)
		case "compaction":
			if line := compactionLine(e.Compaction); line != "" {
				send("compaction", map[string]string{"text": line})
			}
		case "approval":
			var b bytes.Buffer
			if err := s.fragmentTo(&b, "approval", s.card(q, *e.Approval, key)); err != nil {
				s.log.Error("studio: rendering an approval card", "err", err)
				return
			}
			send("approval", map[string]string{"id": e.Approval.ID, "html": b.String()})
		case "approval-resolved":
			send("approval-resolved", e.Approval)
		}
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		send("end", relay.Event{Kind: "error", Error: s.errText(q, err)})
		return
	}
	send("end", end)
}

var approvalIDRE = regexp.MustCompile(`^[0-9A-Za-z-]{1,64}$`)

// resolveApproval answers an approval card: exec.approval.resolve. An
// htmx request gets the card back, answered (or with the gateway's
// error); a plain form post goes back to the chat.
func (s *Server) resolveApproval(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, 16<<10)
	id := q.r.PathValue("id")
	decision := q.r.PostFormValue("decision")
	back := safeNext(q.r.PostFormValue("back"))
	c := card{Approval: relay.Approval{ID: id}, Base: q.base, CSRF: q.sess.csrf, Back: back}
	switch {
	case !approvalIDRE.MatchString(id):
		c.Error = "That is not an approval id."
	case decision != "allow-once" && decision != "allow-always" && decision != "deny":
		c.Error = fmt.Sprintf("%q is not a decision: allow-once, allow-always or deny.", decision)
	default:
		if err := s.call(q, "exec.approval.resolve", map[string]string{"id": id, "decision": decision}, nil); err != nil {
			c.Error = s.errText(q, err)
		} else {
			c.Decision = decision
		}
	}
	if q.r.Header.Get("HX-Request") == "" {
		if c.Error != "" {
			s.fail(q.w, q.r, q.sess, http.StatusBadRequest, c.Error)
			return
		}
		if back == "" {
			back = q.base + "/agents"
		}
		http.Redirect(q.w, q.r, back, http.StatusSeeOther)
		return
	}
	if c.Error != "" {
		q.w.Header().Set("HX-Reswap", "outerHTML")
	}
	s.fragment(q.w, "approval-answered", c)
}

// sessionsView is the sessions page.
type sessionsView struct {
	Agent    agentInfo
	Sessions []sessionRow
}

func (s *Server) sessionsPage(q *req) {
	a, _, ok := s.chatAgent(q, "")
	if !ok {
		return
	}
	v := &sessionsView{Agent: a}
	p := s.newPage(q, "Sessions of "+a.Label(), "agents", v)
	rows, err := s.sessions(q, a.ID)
	if err != nil {
		p.Error = s.errText(q, err)
	}
	v.Sessions = rows
	s.render(q.w, http.StatusOK, "sessions", p)
}
