package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"talon/internal/config"
)

// maxRendered bounds everything one request's templates render, fan-out
// included: a short template over a large payload must not multiply it.
const maxRendered = 2 << 20

// mapped serves POST <path>/<name> through the first matching mapping
// (R10.4).
func (h *Handler) mapped(ctx context.Context, req *request) reply {
	payload, ok := req.payload.(map[string]any)
	if !ok {
		return fail(http.StatusBadRequest, "hooks: %s: the body must be a JSON object", req.name)
	}
	idx := h.match(req.name, payload)
	if idx < 0 {
		return fail(http.StatusNotFound, "hooks: no mapping for %q", clip(req.name))
	}
	m := &h.hooks.Mappings[idx]
	items := []map[string]any{payload}
	if m.ForEach != "" {
		if items = fanOut(payload, m.ForEach); len(items) == 0 {
			return reply{status: http.StatusNoContent}
		}
	}
	tc := &tmplCtx{headers: req.r.Header, query: req.r.URL.Query(), path: req.name, now: h.now(), budget: maxRendered}
	src := "hook:mapping:" + mappingID(m, idx)
	if m.Action == "wake" {
		return h.mappedWakes(ctx, m, items, tc, src)
	}
	return h.mappedAgents(ctx, req, m, idx, items, tc, src)
}

// match is the index of the first mapping that takes name and payload,
// or -1.
func (h *Handler) match(name string, payload map[string]any) int {
	for i, m := range h.hooks.Mappings {
		if p := strings.Trim(m.Match.Path, "/"); p != "" && p != name {
			continue
		}
		if s := m.Match.Source; s != "" {
			if got, _ := payload["source"].(string); got != s {
				continue
			}
		}
		return i
	}
	return -1
}

func mappingID(m *config.HookMapping, i int) string {
	if m.ID != "" {
		return m.ID
	}
	return "mapping-" + strconv.Itoa(i)
}

// fanOut is one payload per item of payload[key] (the first MaxFanOut),
// each with that array replaced by [item]; none when it is not a
// non-empty array.
func fanOut(payload map[string]any, key string) []map[string]any {
	arr, _ := payload[key].([]any)
	if len(arr) > MaxFanOut {
		arr = arr[:MaxFanOut]
	}
	out := make([]map[string]any, 0, len(arr))
	for _, it := range arr {
		p := make(map[string]any, len(payload))
		for k, v := range payload {
			p[k] = v
		}
		p[key] = []any{it}
		out = append(out, p)
	}
	return out
}

func (h *Handler) mappedWakes(ctx context.Context, m *config.HookMapping, items []map[string]any, tc *tmplCtx, src string) reply {
	wakes := make([]Wake, 0, len(items))
	for _, p := range items {
		tc.payload = p
		text, key, err := tc.render(m.TextTemplate), tc.render(m.SessionKey), tc.err
		if err != nil {
			return fail(http.StatusBadRequest, "hooks: %s: %v", src, err)
		}
		if text = strings.TrimSpace(text); text == "" {
			return fail(http.StatusBadRequest, "hooks: %s: textTemplate rendered an empty text", src)
		}
		w := Wake{Text: text, Mode: m.WakeMode, Source: src}
		if rep := h.prepareWake(&w, m.AgentID, key, config.HookTemplateRE.MatchString(m.SessionKey)); rep.status != 0 {
			return rep
		}
		wakes = append(wakes, w)
	}
	outcome := "coalesced"
	for _, w := range wakes {
		got, rep := h.dispatchWake(ctx, w)
		if rep.status != 0 {
			return rep
		}
		if got == "queued" {
			outcome = "queued"
		}
	}
	return reply{http.StatusOK, map[string]any{"ok": true, "mode": wakes[0].Mode, "eventOutcome": outcome}}
}

// mappedAction is one rendered agent action and its replay identity.
type mappedAction struct {
	turn AgentTurn
	id   string
}

func (h *Handler) mappedAgents(ctx context.Context, req *request, m *config.HookMapping, idx int, items []map[string]any, tc *tmplCtx, src string) reply {
	explicit := idempotencyKey(req.r, stringField(items[0], "idempotencyKey"))
	actions := make([]mappedAction, 0, len(items))
	for i, p := range items {
		tc.payload = p
		t, fields, rep := h.mappedTurn(m, tc, src)
		if rep.status != 0 {
			return rep
		}
		// Fan-out replays by each rendered action even without a key, so
		// a retried batch does not run its items twice.
		var id string
		switch {
		case explicit != "":
			id = h.identity(req.name, explicit+"#"+strconv.Itoa(i), fields)
		case m.ForEach != "":
			id = h.identity(req.name, "mapping-"+strconv.Itoa(idx), fields)
		}
		actions = append(actions, mappedAction{t, id})
	}
	if len(actions) == 1 {
		return h.admit(ctx, actions[0].turn, actions[0].id, false)
	}
	return h.admitBatch(ctx, actions)
}

// mappedTurn renders a mapping's agent action over tc's payload and
// applies the session and delivery policy; fields are what identify it
// for replay (before a session key is generated).
func (h *Handler) mappedTurn(m *config.HookMapping, tc *tmplCtx, src string) (AgentTurn, map[string]any, reply) {
	t := AgentTurn{Name: strings.TrimSpace(tc.render(m.Name)), WakeMode: m.WakeMode, Deliver: m.Deliver == nil || *m.Deliver,
		Channel: m.Channel, To: strings.TrimSpace(tc.render(m.To)), Model: strings.TrimSpace(tc.render(m.Model)),
		Thinking: strings.TrimSpace(tc.render(m.Thinking)), Persistent: m.SessionMode == "persistent", Source: src}
	msg, key := strings.TrimSpace(tc.render(m.MessageTemplate)), strings.TrimSpace(tc.render(m.SessionKey))
	if tc.err != nil {
		return t, nil, fail(http.StatusBadRequest, "hooks: %s: %v", src, tc.err)
	}
	switch {
	case msg == "":
		return t, nil, fail(http.StatusBadRequest, "hooks: %s: messageTemplate rendered an empty message", src)
	case len(msg) > MaxText:
		return t, nil, fail(http.StatusBadRequest, "hooks: %s: the message is longer than %d bytes", src, MaxText)
	}
	if rep := checkCommon(&t); rep.status != 0 {
		return t, nil, rep
	}
	for _, f := range []struct{ name, v string }{{"to", t.To}, {"model", t.Model}, {"thinking", t.Thinking}} {
		if !oneLine(f.v) {
			return t, nil, fail(http.StatusBadRequest, "hooks: %s: %s must render one line of at most %d bytes", src, f.name, maxField)
		}
	}
	if t.Channel == "" {
		t.Channel = "last"
	}
	if !t.Deliver {
		t.Channel, t.To = "", ""
	}
	if m.TimeoutSeconds != nil {
		t.Timeout = time.Duration(*m.TimeoutSeconds) * time.Second
	}
	fields := map[string]any{"message": msg, "name": t.Name, "sessionKey": key, "to": t.To, "model": t.Model, "thinking": t.Thinking}
	agent, rep := h.pickAgent(m.AgentID, key)
	if rep.status != 0 {
		return t, nil, rep
	}
	t.AgentID = agent
	templated := config.HookTemplateRE.MatchString(m.SessionKey)
	switch {
	case key != "":
		t.SessionKey, rep = h.sessionKey(key, agent, templated)
	case templated:
		rep = fail(http.StatusBadRequest, "hooks: %s: sessionKey rendered empty", src)
	default:
		t.SessionKey, rep = h.defaultKey(agent)
	}
	if rep.status != 0 {
		return t, nil, rep
	}
	t.Message = msg
	if m.AllowUnsafeExternalContent == nil || !*m.AllowUnsafeExternalContent {
		t.Message = wrapExternal(msg, t.Name)
	}
	return t, fields, reply{}
}

// admitBatch admits a fan-out's actions one by one within one admission
// time and reports them together.
func (h *Handler) admitBatch(ctx context.Context, actions []mappedAction) reply {
	ctx, cancel := context.WithTimeout(ctx, h.admitTime)
	defer cancel()
	var (
		runIDs []string
		errs   []string
		status int
	)
	for _, a := range actions {
		rep := h.admit(ctx, a.turn, a.id, false)
		if rep.status == http.StatusOK {
			runIDs = append(runIDs, rep.body.(map[string]any)["runId"].(string))
			continue
		}
		if status == 0 {
			status = rep.status
		}
		if len(errs) < 5 {
			errs = append(errs, rep.body.(map[string]any)["error"].(string))
		}
	}
	if status != 0 {
		return reply{status, map[string]any{"ok": false, "runIds": nonNil(runIDs), "errors": errs,
			"error": fmt.Sprintf("hooks: incomplete batch: %d of %d actions admitted", len(runIDs), len(actions))}}
	}
	return reply{http.StatusOK, map[string]any{"ok": true, "runId": runIDs[0], "runIds": runIDs, "dispatched": len(runIDs)}}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// tmplCtx is what templates read; render records the first error and
// charges every rendered byte to budget.
type tmplCtx struct {
	payload map[string]any
	headers http.Header
	query   url.Values
	path    string
	now     time.Time
	budget  int
	err     error
}

// render fills a template's {{expr}} placeholders (config.HookTemplateRE):
// payload.x or x, a[0].b paths, headers.x-y, query.k, path and now;
// missing values are empty and objects JSON.
func (c *tmplCtx) render(tpl string) string {
	if c.err != nil || tpl == "" {
		return ""
	}
	out := config.HookTemplateRE.ReplaceAllStringFunc(tpl, func(m string) string {
		return c.value(config.HookTemplateRE.FindStringSubmatch(m)[1])
	})
	if c.budget -= len(out); c.budget < 0 {
		c.err = fmt.Errorf("templates rendered more than %d bytes", maxRendered)
		return ""
	}
	return out
}

func (c *tmplCtx) value(expr string) string {
	switch {
	case expr == "path":
		return c.path
	case expr == "now":
		return c.now.UTC().Format("2006-01-02T15:04:05.000Z")
	case strings.HasPrefix(expr, "headers."):
		return c.headers.Get(expr[len("headers."):])
	case strings.HasPrefix(expr, "query."):
		return c.query.Get(expr[len("query."):])
	case strings.HasPrefix(expr, "payload."):
		expr = expr[len("payload."):]
	}
	return show(lookup(c.payload, expr))
}

var pathPartRE = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)

// lookup follows a.b[0].c through maps and arrays; nil when absent.
func lookup(v any, path string) any {
	parts := pathPartRE.FindAllStringSubmatch(path, -1)
	if len(parts) == 0 {
		return nil
	}
	for _, p := range parts {
		if p[1] != "" {
			m, ok := v.(map[string]any)
			if !ok || p[1] == "__proto__" || p[1] == "prototype" || p[1] == "constructor" {
				return nil
			}
			v = m[p[1]]
			continue
		}
		a, ok := v.([]any)
		n, err := strconv.Atoi(p[2])
		if !ok || err != nil || n >= len(a) {
			return nil
		}
		v = a[n]
	}
	return v
}

// show is a value as template text.
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(raw)
}
