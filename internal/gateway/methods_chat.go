package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"talon/internal/agent"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/session"
	"talon/protocol"
)

// The WS chat surface (spec §1.7, §2.1, §2.2): chat.send starts a run and
// answers at once, agent answers twice (accepted, then the result); both
// runs go through the runner, session locks and transcript the HTTP
// endpoint uses, and report as chat and agent events.
func init() {
	register("chat.send", protocol.ScopeWrite, (*Server).chatSend)
	register("chat.abort", protocol.ScopeWrite, (*Server).chatAbort)
	register("agent", protocol.ScopeWrite, (*Server).agentRun)
	register("agent.wait", protocol.ScopeWrite, (*Server).agentWait)
}

// Limits on what a client sends.
const (
	// maxIdempotencyKey bounds a key: it is kept for five minutes and
	// echoed in every event of its run.
	maxIdempotencyKey = 256
	// maxAttachmentBytes is upstream's limit for an image (6 MiB).
	maxAttachmentBytes = 6 << 20
	// maxRunTimeout is where upstream clamps a run's timeout (24 h).
	maxRunTimeout = 24 * time.Hour
	// defaultWait is agent.wait's default timeoutMs.
	defaultWait = 30 * time.Second
)

// attachmentParam is one chat.send / agent attachment.
type attachmentParam struct {
	Type     string  `json:"type"`
	MimeType string  `json:"mimeType"`
	FileName string  `json:"fileName"`
	Content  *string `json:"content"`
}

func (s *Server) chatSend(c *call) (any, error) {
	const m = "chat.send"
	var rp runParams
	var p struct {
		Message   *string `json:"message"`
		TimeoutMs *int64  `json:"timeoutMs"`
	}
	if err := rp.decode(c, &p); err != nil {
		return nil, err
	}
	switch {
	case rp.SessionKey == nil:
		return nil, missing(m, "sessionKey")
	case strings.TrimSpace(*rp.SessionKey) == "":
		return nil, protocol.Errorf("invalid chat.send params: sessionKey must not be empty")
	case p.Message == nil:
		return nil, missing(m, "message")
	}
	runID, images, err := rp.check(m)
	if err != nil {
		return nil, err
	}
	timeout, err := runTimeout(m, "timeoutMs", p.TimeoutMs, time.Millisecond)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSpace(*p.Message)
	if text == "" && len(images) == 0 {
		return nil, protocol.Errorf("invalid chat.send params: message or attachment required")
	}
	agentID, key, err := s.chatTarget(c, m, deref(rp.AgentID), *rp.SessionKey)
	if err != nil {
		return nil, err
	}

	tr := s.runs.of(c.t)
	stop := len(images) == 0 && isStopCommand(text)
	var r *chatRun
	if !stop {
		input := []llm.Message{{Role: llm.RoleUser, Content: text, Images: images}}
		r = s.newRun(c, "chat", runID, key, agentID, agent.Request{Input: input, Thinking: deref(rp.Thinking)}, timeout)
		if cmd, arg, ok := chatCommand(text); ok && len(images) == 0 {
			r.cmd, r.arg = cmd, arg
		}
	}
	e, fresh := tr.idem.begin("chat:"+runID, r, time.Now())
	if !fresh {
		return replay(tr, e, runID)
	}
	if stop {
		// A stop command aborts the session's runs instead of starting one.
		ids := abortRuns(c.ctx, s.runs.ofSession(c.t, key), errAbortStop)
		answer := map[string]any{"ok": true, "aborted": len(ids) > 0, "runIds": ids}
		tr.idem.finish(e, answer, nil, time.Now())
		return answer, nil
	}
	return s.startRun(tr, e, r, func() { c.respondNow(map[string]any{"runId": runID, "status": "started"}) })
}

// runParams are the params chat.send and agent share.
type runParams struct {
	IdempotencyKey *string           `json:"idempotencyKey"`
	AgentID        *string           `json:"agentId"`
	SessionKey     *string           `json:"sessionKey"`
	Thinking       *string           `json:"thinking"` // this run's thinking level (provider.RunThinking)
	Deliver        *bool             `json:"deliver"`
	Attachments    []attachmentParam `json:"attachments"`
}

// decode reads the shared params and the method's own (rest). They are
// decoded apart, not embedded, so that a type error names the field as
// the client sent it.
func (p *runParams) decode(c *call, rest any) error {
	if err := c.params(p); err != nil {
		return err
	}
	return c.params(rest)
}

// check validates the shared params and returns the runId and the
// attached images.
func (p *runParams) check(method string) (string, []llm.Image, error) {
	runID, err := idempotencyKey(method, p.IdempotencyKey)
	if err != nil {
		return "", nil, err
	}
	if p.Deliver != nil && *p.Deliver {
		// A chat.send or agent run is not delivered to a channel (only a
		// channel's own messages are answered there): the client must not
		// believe a reply was delivered.
		return "", nil, protocol.Errorf("invalid %s params: deliver is not supported (a run started here is not delivered to a chat channel; use send); leave it false", method)
	}
	if t := deref(p.Thinking); strings.TrimSpace(t) != "" {
		if _, ok := config.ThinkingLevel(t); !ok {
			return "", nil, protocol.Errorf("invalid %s params: thinking %q is not a thinking level (use off|minimal|low|medium|high|xhigh)", method, t)
		}
	}
	images, err := decodeAttachments(method, p.Attachments)
	if err != nil {
		return "", nil, err
	}
	return runID, images, nil
}

// replay answers a retried request: the first request's answer once its
// run has ended, in_flight until then.
func replay(tr *tenantRuns, e *idemEntry, runID string) (any, error) {
	if payload, perr, ok := tr.idem.answer(e); ok {
		return payload, asError(perr)
	}
	return map[string]any{"runId": runID, "status": "in_flight"}, nil
}

// startRun registers r as the run of the idempotency entry e, calls
// answer to send the request's (first) answer, and then starts the run,
// so that none of its events precedes that answer.
func (s *Server) startRun(tr *tenantRuns, e *idemEntry, r *chatRun, answer func()) (any, error) {
	r.idem, r.entry = &tr.idem, e
	if r.cmd == "" {
		if err := r.rt.admit(context.Background()); err != nil {
			perr := &protocol.Error{Code: protocol.CodeUnavailable, Message: "checking the usage budget failed"}
			if b := budgetRefusal(err); b != nil {
				perr = budgetError(b)
			} else {
				s.log.Error("checking the usage budget", "tenant", r.t.id, "err", err)
			}
			tr.idem.forget(e)
			r.abandon(perr)
			return nil, perr
		}
	}
	ctx, perr := s.runs.add(r, r.timeout)
	if perr != nil {
		tr.idem.forget(e)
		r.abandon(perr)
		return nil, perr
	}
	answer()
	go r.run(ctx)
	return answered, nil
}

func (s *Server) chatAbort(c *call) (any, error) {
	const m = "chat.abort"
	var p struct {
		SessionKey *string `json:"sessionKey"`
		AgentID    *string `json:"agentId"`
		RunID      *string `json:"runId"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if p.SessionKey == nil {
		return nil, missing(m, "sessionKey")
	}
	if strings.TrimSpace(*p.SessionKey) == "" {
		return nil, protocol.Errorf("invalid chat.abort params: sessionKey must not be empty")
	}
	_, key, err := s.chatTarget(c, m, deref(p.AgentID), *p.SessionKey)
	if err != nil {
		return nil, err
	}
	var runs []*chatRun
	if id := deref(p.RunID); id != "" {
		r := s.runs.get(c.t, id)
		if r != nil && r.key != key {
			return nil, protocol.Errorf("runId does not match sessionKey")
		}
		if r != nil {
			runs = append(runs, r)
		}
	} else {
		runs = s.runs.ofSession(c.t, key)
	}
	ids := abortRuns(c.ctx, runs, errAbortRPC)
	return map[string]any{"ok": true, "aborted": len(ids) > 0, "runIds": ids}, nil
}

func (s *Server) agentRun(c *call) (any, error) {
	const m = "agent"
	var rp runParams
	var p struct {
		Message           *string `json:"message"`
		SessionID         *string `json:"sessionId"`
		Timeout           *int64  `json:"timeout"` // seconds
		ExtraSystemPrompt *string `json:"extraSystemPrompt"`
		Label             *string `json:"label"`
		Model             *string `json:"model"`
		Provider          *string `json:"provider"`
		// channel, to, replyTo, lane, bestEffortDeliver … route replies to
		// chat channels, which Talon does not have; they are not read.
	}
	if err := rp.decode(c, &p); err != nil {
		return nil, err
	}
	if p.Message == nil {
		return nil, missing(m, "message")
	}
	text := strings.TrimSpace(*p.Message)
	if text == "" {
		return nil, protocol.Errorf("invalid agent params: message must not be empty")
	}
	runID, images, err := rp.check(m)
	if err != nil {
		return nil, err
	}
	timeout, err := runTimeout(m, "timeout", p.Timeout, time.Second)
	if err != nil {
		return nil, err
	}
	if deref(rp.SessionKey) == "" && deref(p.SessionID) != "" {
		return nil, protocol.Errorf("invalid agent params: sessionId alone is not supported by Talon; name the session with sessionKey")
	}
	agentID, key, err := s.chatTarget(c, m, deref(rp.AgentID), deref(rp.SessionKey))
	if err != nil {
		return nil, err
	}
	model, err := s.modelOverride(c, deref(p.Provider), deref(p.Model))
	if err != nil {
		return nil, err
	}
	if p.Label != nil {
		if err := s.labelSession(c, agentID, key, *p.Label); err != nil {
			return nil, err
		}
	}

	req := agent.Request{
		Input:       []llm.Message{{Role: llm.RoleUser, Content: text, Images: images}},
		ExtraSystem: deref(p.ExtraSystemPrompt),
		Model:       model,
		Thinking:    deref(rp.Thinking),
	}
	r := s.newRun(c, "agent", runID, key, agentID, req, timeout)
	tr := s.runs.of(c.t)
	e, fresh := tr.idem.begin("agent:"+runID, r, time.Now())
	if !fresh {
		// A retry follows the first request's run, or gets its answer.
		if r := e.run; r != nil && r.follow(c.c, c.req.ID) {
			return answered, nil
		}
		return replay(tr, e, runID)
	}
	return s.startRun(tr, e, r, func() { r.follow(c.c, c.req.ID) })
}

func (s *Server) agentWait(c *call) (any, error) {
	const m = "agent.wait"
	var p struct {
		RunID     *string `json:"runId"`
		TimeoutMs *int64  `json:"timeoutMs"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if p.RunID == nil {
		return nil, missing(m, "runId")
	}
	wait := defaultWait
	if p.TimeoutMs != nil {
		d, err := runTimeout(m, "timeoutMs", p.TimeoutMs, time.Millisecond)
		if err != nil {
			return nil, err
		}
		wait = d
	}
	id := *p.RunID
	r := s.runs.get(c.t, id)
	if r == nil {
		// Ended runs stay in the idempotency cache for its TTL.
		tr := s.runs.of(c.t)
		for _, k := range []string{"agent:", "chat:"} {
			if e := tr.idem.lookup(k+id, time.Now()); e != nil && e.run != nil {
				r = e.run
				break
			}
		}
	}
	if r == nil {
		return nil, protocol.Errorf("unknown runId %q: no run with this id in the last %s", id, idemTTL)
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-r.done:
		case <-timer.C:
		case <-c.ctx.Done():
			return nil, nil // the client left
		}
	}
	st := r.waitStatus()
	if st["status"] == "pending" && wait > 0 {
		st["status"] = "timeout" // the wait ended first
	}
	return st, nil
}

// chatTarget resolves the agent and canonical session key of a request:
// agentID is the agentId the client gave ("" for none), rawKey its
// session key ("" for the agent's main session).
func (s *Server) chatTarget(c *call, method, agentID, rawKey string) (string, string, error) {
	cfg := c.rt.file.Config
	if strings.TrimSpace(agentID) != "" {
		agentID = config.NormalizeAgentID(agentID)
		if !cfg.HasAgent(agentID) {
			return "", "", protocol.Errorf("invalid %s params: unknown agent id %q", method, agentID)
		}
	}
	var key string
	if rawKey == "" {
		if agentID == "" {
			agentID = cfg.DefaultAgentID()
		}
		key = policy.MainSessionKey(cfg, agentID)
	} else {
		var err error
		if key, agentID, err = sessionFor(cfg, agentID, rawKey); err != nil {
			return "", "", protocol.Errorf("invalid %s params: sessionKey: %v", method, err)
		}
		if !cfg.HasAgent(agentID) {
			return "", "", protocol.Errorf("invalid %s params: sessionKey: unknown agent id %q", method, agentID)
		}
	}
	return agentID, key, nil
}

// modelOverride checks an agent request's provider/model override: only
// admins may choose the model (as upstream), and it must resolve.
func (s *Server) modelOverride(c *call, prov, model string) (string, error) {
	prov, model = strings.TrimSpace(prov), strings.TrimSpace(model)
	if prov == "" && model == "" {
		return "", nil
	}
	if !c.c.has(protocol.ScopeAdmin) {
		return "", protocol.Errorf("provider/model overrides are not authorized for this caller.")
	}
	if model == "" {
		return "", protocol.Errorf("invalid agent params: provider %q needs a model", prov)
	}
	ref := model
	if prov != "" && !strings.HasPrefix(model, prov+"/") {
		ref = prov + "/" + model
	}
	if _, _, err := c.rt.runner.Resolve(ref); err != nil {
		return "", protocol.Errorf("invalid agent params: model %q: %v", ref, err)
	}
	return ref, nil
}

// labelSession sets the session's label, as sessions.patch would.
func (s *Server) labelSession(c *call, agentID, key, label string) error {
	patch, _ := json.Marshal(map[string]string{"label": label})
	_, err := c.rt.runner.Store.PatchSession(c.ctx, agentID, key, patch, time.Now())
	var ve *session.ValidationError
	if errors.As(err, &ve) {
		return protocol.Errorf("invalid agent params: %s", ve.Message)
	}
	if err != nil {
		return fmt.Errorf("labelling session %s: %w", key, err)
	}
	return nil
}

// missing is upstream's validator message for an absent field.
func missing(method, field string) error {
	return protocol.Errorf("invalid %s params: must have required property '%s'", method, field)
}

// idempotencyKey checks a request's idempotencyKey, which becomes its
// runId exactly as given.
func idempotencyKey(method string, p *string) (string, error) {
	switch {
	case p == nil:
		return "", missing(method, "idempotencyKey")
	case strings.TrimSpace(*p) == "":
		return "", protocol.Errorf("invalid %s params: idempotencyKey must not be empty", method)
	case len(*p) > maxIdempotencyKey:
		return "", protocol.Errorf("invalid %s params: idempotencyKey must be at most %d bytes", method, maxIdempotencyKey)
	}
	return *p, nil
}

// runTimeout reads a non-negative timeout in unit; 0 or absent is none.
// Values past maxRunTimeout are clamped to it, as upstream clamps.
func runTimeout(method, field string, v *int64, unit time.Duration) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 {
		return 0, protocol.Errorf("invalid %s params: %s must be >= 0", method, field)
	}
	if *v > int64(maxRunTimeout/unit) {
		return maxRunTimeout, nil
	}
	return time.Duration(*v) * unit, nil
}

// imageTypes are the image types the model providers take.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// dataURL matches the prefix of a base64 data URL.
var dataURL = regexp.MustCompile(`^data:([^;,]*)(;[^,]*)?;base64,`)

// decodeAttachments turns attachments into images for the user message.
// Only images are taken (the providers carry nothing else); the type is
// read from the bytes, not believed from mimeType.
func decodeAttachments(method string, in []attachmentParam) ([]llm.Image, error) {
	var out []llm.Image
	for i, a := range in {
		label := fmt.Sprintf("attachments[%d]", i)
		if a.FileName != "" {
			label += fmt.Sprintf(" (%q)", a.FileName)
		}
		fail := func(format string, args ...any) error {
			return protocol.Errorf("invalid %s params: %s: %s", method, label, fmt.Sprintf(format, args...))
		}
		if mt := strings.ToLower(strings.TrimSpace(a.MimeType)); mt != "" && !strings.HasPrefix(mt, "image/") {
			return nil, fail("only image attachments are supported, not %s", mt)
		}
		if a.Content == nil {
			return nil, fail("content is required (base64)")
		}
		b64 := strings.TrimSpace(*a.Content)
		if loc := dataURL.FindStringIndex(b64); loc != nil {
			b64 = b64[loc[1]:]
		}
		b64 = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, b64)
		if b64 == "" {
			return nil, fail("content is empty")
		}
		if n := base64.StdEncoding.DecodedLen(len(b64)); n > maxAttachmentBytes+3 {
			return nil, fail("exceeds the size limit (about %d > %d bytes)", n, maxAttachmentBytes)
		}
		enc := base64.StdEncoding
		if !strings.HasSuffix(b64, "=") && len(b64)%4 != 0 {
			enc = base64.RawStdEncoding
		}
		data, err := enc.DecodeString(b64)
		if err != nil {
			return nil, fail("content is not valid base64: %v", err)
		}
		if len(data) > maxAttachmentBytes {
			return nil, fail("exceeds the size limit (%d > %d bytes)", len(data), maxAttachmentBytes)
		}
		mime := http.DetectContentType(data)
		if !imageTypes[mime] {
			return nil, fail("content is %s, not a PNG, JPEG, GIF or WebP image", mime)
		}
		out = append(out, llm.Image{MIME: mime, Data: data})
	}
	return out, nil
}

// stopWords are the messages that abort a session's runs instead of
// starting one: /stop and the plain English words upstream also takes.
var stopWords = map[string]bool{
	"/stop": true, "stop": true, "abort": true, "esc": true, "exit": true, "interrupt": true,
	"halt": true, "please stop": true, "stop please": true, "stop run": true, "stop agent": true,
}

// isStopCommand reports whether a chat message is a stop command: one of
// stopWords, in any case, with trailing punctuation ignored.
func isStopCommand(text string) bool {
	t := strings.Join(strings.Fields(strings.ToLower(text)), " ")
	t = strings.TrimRight(t, ".!?,;:'\"…")
	return stopWords[t]
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
