package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"talon/internal/config"
	"talon/internal/session"
)

// wakeBody is POST <path>/wake (R10.2).
type wakeBody struct {
	Text       string `json:"text"`
	Mode       string `json:"mode"`
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey"`
}

// agentBody is POST <path>/agent (R10.3).
type agentBody struct {
	Message           string          `json:"message"`
	Name              string          `json:"name"`
	AgentID           string          `json:"agentId"`
	SessionKey        string          `json:"sessionKey"`
	SessionMode       string          `json:"sessionMode"`
	IdempotencyKey    string          `json:"idempotencyKey"`
	WaitForCompletion bool            `json:"waitForCompletion"`
	WakeMode          string          `json:"wakeMode"`
	Deliver           *bool           `json:"deliver"`
	Channel           string          `json:"channel"`
	To                string          `json:"to"`
	AccountID         string          `json:"accountId"`
	Model             string          `json:"model"`
	Thinking          string          `json:"thinking"`
	TimeoutSeconds    json.RawMessage `json:"timeoutSeconds"`
}

// asBody reads the payload into a body struct, naming the field a wrong
// type is in.
func asBody(payload any, out any) error {
	if _, ok := payload.(map[string]any); !ok {
		return errors.New("the body must be a JSON object")
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s: expected %s", te.Field, jsonType(te.Type.Kind().String()))
		}
		return err
	}
	return nil
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	}
	return kind
}

func (h *Handler) wake(ctx context.Context, req *request) reply {
	var b wakeBody
	if err := asBody(req.payload, &b); err != nil {
		return fail(http.StatusBadRequest, "hooks: wake: %v", err)
	}
	text := strings.TrimSpace(b.Text)
	if text == "" {
		return fail(http.StatusBadRequest, "hooks: wake: text is required")
	}
	w := Wake{Text: text, Mode: b.Mode, Source: "hook:wake"}
	if rep := h.prepareWake(&w, b.AgentID, b.SessionKey, true); rep.status != 0 {
		return rep
	}
	outcome, rep := h.dispatchWake(ctx, w)
	if rep.status != 0 {
		return rep
	}
	return reply{http.StatusOK, map[string]any{"ok": true, "mode": w.Mode, "eventOutcome": outcome}}
}

// prepareWake applies R10.2's policy to a wake: its mode, its text's
// size, its agent and a caller's session key (only with mode now).
func (h *Handler) prepareWake(w *Wake, agentID, key string, callerKey bool) reply {
	if w.Mode == "" {
		w.Mode = ModeNow
	}
	if w.Mode != ModeNow && w.Mode != ModeNextHeartbeat {
		return fail(http.StatusBadRequest, "hooks: wake: mode must be now or next-heartbeat (got %q)", clip(w.Mode))
	}
	if len(w.Text) > MaxText {
		return fail(http.StatusBadRequest, "hooks: wake: text is longer than %d bytes", MaxText)
	}
	agent, rep := h.pickAgent(agentID, key)
	if rep.status != 0 {
		return rep
	}
	w.AgentID = agent
	if key == "" {
		return reply{}
	}
	if w.Mode != ModeNow {
		return fail(http.StatusBadRequest, "hooks: wake: a sessionKey needs mode now")
	}
	w.SessionKey, rep = h.sessionKey(key, agent, callerKey)
	return rep
}

func (h *Handler) dispatchWake(ctx context.Context, w Wake) (string, reply) {
	ctx, cancel := context.WithTimeout(ctx, h.admitTime)
	defer cancel()
	outcome, err := h.d.Wake(ctx, w)
	switch {
	case err == nil && (outcome == "queued" || outcome == "coalesced"):
		return outcome, reply{}
	case err == nil:
		h.log.Error("hooks: wake: the dispatcher gave an unknown outcome", "outcome", outcome)
		return "", fail(http.StatusInternalServerError, "hooks: wake failed")
	case ctx.Err() != nil && !isRefusal(err):
		err = context.DeadlineExceeded
	}
	return "", h.dispatchError("wake", err)
}

// dispatchError answers a Dispatcher's refusal (R10.7).
func (h *Handler) dispatchError(what string, err error) reply {
	switch {
	case errors.Is(err, ErrRejected):
		return fail(http.StatusBadRequest, "hooks: %s: %v", what, err)
	case errors.Is(err, ErrConflict):
		return fail(http.StatusConflict, "hooks: %s: %v", what, ErrConflict)
	case errors.Is(err, ErrUnavailable):
		return fail(http.StatusServiceUnavailable, "hooks: %s: gateway_unavailable", what)
	case errors.Is(err, context.DeadlineExceeded):
		return fail(http.StatusServiceUnavailable, "hooks: %s: not admitted within %s; the request was cancelled", what, h.admitTime)
	}
	h.log.Error("hooks: dispatch failed", "what", what, "err", err)
	if what == "wake" {
		return fail(http.StatusInternalServerError, "hooks: wake failed")
	}
	return fail(http.StatusBadGateway, "hooks: %s: agent preparation failed", what)
}

// pickAgent is the agent a request goes to: the one it names (which must
// exist), else the one its agent:<id>: session key names, else the
// default agent; in every case one hooks.allowedAgentIds admits.
func (h *Handler) pickAgent(requested, key string) (string, reply) {
	agent := ""
	if requested = strings.TrimSpace(requested); requested != "" {
		if !h.cfg.HasAgent(requested) {
			return "", fail(http.StatusBadRequest, "hooks: unknown agent %q", clip(requested))
		}
		agent = config.NormalizeAgentID(requested)
	}
	if key = strings.TrimSpace(key); len(key) > len("agent:") && strings.EqualFold(key[:len("agent:")], "agent:") {
		owner := session.AgentOf(key, "")
		switch {
		case agent != "" && owner != agent:
			return "", fail(http.StatusBadRequest, "hooks: session key %q belongs to agent %q, not %q", clip(key), owner, agent)
		case !h.cfg.HasAgent(owner):
			return "", fail(http.StatusBadRequest, "hooks: session key %q names unknown agent %q", clip(key), owner)
		}
		agent = owner
	}
	if agent == "" {
		agent = h.cfg.DefaultAgentID()
	}
	if !h.hooks.AgentAllowed(agent) {
		return "", fail(http.StatusBadRequest, "hooks: agent %q is not in hooks.allowedAgentIds", agent)
	}
	return agent, reply{}
}

// sessionKey checks a key the request (or a template over its payload)
// chose — callerKey — or the config fixed, and makes it canonical.
// A caller's key needs hooks.allowRequestSessionKey; every key must pass
// hooks.allowedSessionKeyPrefixes and stay out of the gateway's own
// namespaces (cron:, subagent:, acp:).
func (h *Handler) sessionKey(key, agent string, callerKey bool) (string, reply) {
	key = strings.TrimSpace(key)
	switch {
	case callerKey && (h.hooks.AllowRequestSessionKey == nil || !*h.hooks.AllowRequestSessionKey):
		return "", fail(http.StatusBadRequest, "hooks: sessionKey is not allowed: set hooks.allowRequestSessionKey")
	case !h.hooks.SessionKeyAllowed(key):
		return "", fail(http.StatusBadRequest, "hooks: session key %q does not start with any of hooks.allowedSessionKeyPrefixes", clip(key))
	case session.IsReserved(key):
		return "", fail(http.StatusBadRequest, "hooks: session key %q is in a namespace the gateway reserves", clip(key))
	}
	canonical, err := session.Canonical(h.cfg, agent, key)
	if err != nil {
		return "", fail(http.StatusBadRequest, "hooks: %v", err)
	}
	return canonical, reply{}
}

// defaultKey is the key of a turn that names none: hooks.defaultSessionKey,
// else a fresh hook:<uuid>, which the prefixes must admit.
func (h *Handler) defaultKey(agent string) (string, reply) {
	key := h.hooks.DefaultSessionKey
	if key == "" {
		key = "hook:" + h.newID()
		if !h.hooks.SessionKeyAllowed(key) {
			return "", fail(http.StatusBadRequest, "hooks: the generated session key hook:<id> does not start with any of "+
				"hooks.allowedSessionKeyPrefixes; set hooks.defaultSessionKey or allow the hook: prefix")
		}
	}
	return h.sessionKey(key, agent, false)
}

func (h *Handler) agent(ctx context.Context, req *request) reply {
	var b agentBody
	if err := asBody(req.payload, &b); err != nil {
		return fail(http.StatusBadRequest, "hooks: agent: %v", err)
	}
	turn, rep := h.agentTurn(&b)
	if rep.status != 0 {
		return rep
	}
	idem := idempotencyKey(req.r, b.IdempotencyKey)
	var id string
	if idem != "" {
		// Whether the caller waits is not part of what runs.
		fields := b
		fields.IdempotencyKey, fields.WaitForCompletion = "", false
		id = h.identity(req.name, idem, fields)
	}
	return h.admit(ctx, turn, id, b.WaitForCompletion)
}

// agentTurn applies R10.3's rules to a direct /agent request.
func (h *Handler) agentTurn(b *agentBody) (AgentTurn, reply) {
	msg := strings.TrimSpace(b.Message)
	switch {
	case msg == "":
		return AgentTurn{}, fail(http.StatusBadRequest, "hooks: agent: message is required")
	case len(msg) > MaxText:
		return AgentTurn{}, fail(http.StatusBadRequest, "hooks: agent: message is longer than %d bytes", MaxText)
	}
	t := AgentTurn{Name: strings.TrimSpace(b.Name), WakeMode: b.WakeMode, Deliver: b.Deliver == nil || *b.Deliver,
		Model: strings.TrimSpace(b.Model), Thinking: strings.TrimSpace(b.Thinking), Source: "hook:agent"}
	if rep := checkCommon(&t); rep.status != 0 {
		return t, rep
	}
	for _, f := range []struct{ name, v string }{{"model", t.Model}, {"thinking", t.Thinking}, {"channel", b.Channel}, {"to", b.To}, {"accountId", b.AccountID}} {
		if !oneLine(f.v) {
			return t, fail(http.StatusBadRequest, "hooks: agent: %s must be one line of at most %d bytes", f.name, maxField)
		}
	}
	t.Timeout = timeoutOf(b.TimeoutSeconds)
	agent, rep := h.pickAgent(b.AgentID, b.SessionKey)
	if rep.status != 0 {
		return t, rep
	}
	t.AgentID = agent
	switch b.SessionMode {
	case "", "isolated":
	case "persistent":
		if strings.TrimSpace(b.SessionKey) == "" || !h.hooks.HasSessionKeyPrefixes() {
			return t, fail(http.StatusBadRequest, "hooks: agent: persistent mode needs a sessionKey, hooks.allowRequestSessionKey and hooks.allowedSessionKeyPrefixes")
		}
		t.Persistent = true
	default:
		return t, fail(http.StatusBadRequest, "hooks: agent: sessionMode must be isolated or persistent (got %q)", clip(b.SessionMode))
	}
	if strings.TrimSpace(b.SessionKey) != "" {
		t.SessionKey, rep = h.sessionKey(b.SessionKey, agent, true)
	} else {
		t.SessionKey, rep = h.defaultKey(agent)
	}
	if rep.status != 0 {
		return t, rep
	}
	if rep := h.directTarget(&t, b); rep.status != 0 {
		return t, rep
	}
	// A direct request cannot turn wrapping off: its sender is whoever
	// holds the token, not the operator.
	t.Message = wrapExternal(msg, t.Name)
	return t, reply{}
}

// checkCommon fills and checks what every agent action shares.
func checkCommon(t *AgentTurn) reply {
	if t.Name == "" {
		t.Name = "Hook"
	}
	if !oneLine(t.Name) || utf8.RuneCountInString(t.Name) > maxName {
		return fail(http.StatusBadRequest, "hooks: agent: name must be one line of at most %d characters", maxName)
	}
	if t.WakeMode == "" {
		t.WakeMode = ModeNow
	}
	if t.WakeMode != ModeNow && t.WakeMode != ModeNextHeartbeat {
		return fail(http.StatusBadRequest, "hooks: agent: wakeMode must be now or next-heartbeat (got %q)", clip(t.WakeMode))
	}
	return reply{}
}

// directTarget is R10.3's direct delivery: both channel (a configured one,
// not "last") and to, or neither; accountId only with both.
func (h *Handler) directTarget(t *AgentTurn, b *agentBody) reply {
	if !t.Deliver {
		return reply{} // destination fields are ignored
	}
	ch, to, acct := strings.TrimSpace(b.Channel), strings.TrimSpace(b.To), strings.TrimSpace(b.AccountID)
	switch {
	case ch == "" && to == "" && acct == "":
		return reply{}
	case ch == "last":
		return fail(http.StatusBadRequest, "hooks: agent: channel \"last\" is not allowed here; name the channel and to")
	case ch == "" || to == "":
		return fail(http.StatusBadRequest, "hooks: agent: direct delivery needs both channel and to")
	case !h.hasChannel(ch):
		return fail(http.StatusBadRequest, "hooks: agent: unknown channel %q", clip(ch))
	}
	t.Channel, t.To, t.AccountID = ch, to, acct
	return reply{}
}

func (h *Handler) hasChannel(id string) bool {
	_, ok := h.cfg.Channels[id]
	return ok && id != "defaults"
}

// timeoutOf reads timeoutSeconds: a positive number, floored; anything
// else is ignored (R10.3), and a day at most.
func timeoutOf(raw json.RawMessage) time.Duration {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil || f < 1 || math.IsInf(f, 0) {
		return 0
	}
	return time.Duration(min(math.Floor(f), config.MaxHookTimeout)) * time.Second
}

// idempotencyKey is R10.5's replay key: Idempotency-Key, then
// X-OpenClaw-Idempotency-Key, then the body's; only a trimmed non-empty
// one of at most 256 characters counts.
func idempotencyKey(r *http.Request, body string) string {
	for _, k := range []string{r.Header.Get("Idempotency-Key"), r.Header.Get("X-Openclaw-Idempotency-Key"), body} {
		if k = strings.TrimSpace(k); k != "" {
			if utf8.RuneCountInString(k) > maxIdemKey {
				return ""
			}
			return k
		}
	}
	return ""
}

func oneLine(s string) bool {
	return len(s) <= maxField && strings.IndexFunc(s, unicode.IsControl) < 0
}

// clip bounds a caller's text quoted back in an error.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	for i := 80; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return ""
}
