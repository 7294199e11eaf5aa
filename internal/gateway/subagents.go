package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"talon/internal/agent"
	"talon/internal/automation"
	"talon/internal/llm"
	"talon/internal/store"
	"talon/internal/tools"
)

// Subagents (OpenClaw's docs/tools/subagents): a child that
// sessions_spawn starts is a run of its own session
// (agent:<id>:subagent:<uuid>) beside its parent's, made and followed like
// any background run (backgroundTurn's registration, chat and agent events
// to the tenant's clients, the runs registry's abort and shutdown). When
// it ends, its result is announced to the parent: an internal completion
// message that is the input of a turn of the parent's session, which
// waits for the session as any run does, so a parent busy in a turn gets
// it right after. A child that ended its run with sessions_yield is
// paused: the announces of its own children continue it, and the turn
// that ends without yielding is its result, announced up in turn.
//
// The registry is in memory (OpenClaw 2026.9 persists its own): a
// restart forgets the children, whose sessions and transcripts stay.
// Runs in flight end as aborted at shutdown and announce nothing, as the
// gateway starts no run while it stops; a parent that yielded for them
// holds nothing that waits, so its next turn is an ordinary one.

// Bounds of the registry.
const (
	// maxAnnounceResult caps the child's answer an announce carries; the
	// rest is in its transcript (sessions_history).
	maxAnnounceResult = 32 << 10
	// keepEnded is how long an ended child stays listed, and
	// maxKeptChildren how many ended ones a tenant keeps at most.
	keepEnded       = 24 * time.Hour
	maxKeptChildren = 500
	// maxListed is how many children subagents list shows at most.
	maxListed = 50
)

// Why a child's run was stopped.
var (
	errKilled  = errors.New("killed by its parent (subagents kill)")
	errSteered = errors.New("steered by its parent (subagents steer)")
)

// Child statuses.
const (
	childRunning = "running"
	childPaused  = "paused" // its run yielded; its children's announces continue it
	childDone    = "done"
	childFailed  = "failed"
	childTimeout = "timeout"
	childKilled  = "killed"
)

// subagentRun is one child in the registry.
type subagentRun struct {
	c         agent.Child
	runID     string // the run in flight, or the last one
	run       *chatRun
	status    string
	result    string // its answer, or what went wrong
	startedAt time.Time
	endedAt   time.Time
}

func (e *subagentRun) active() bool { return e.status == childRunning || e.status == childPaused }

// subagentRegistry is a tenant's children. Safe for concurrent use.
type subagentRegistry struct {
	mu   sync.Mutex
	runs []*subagentRun // in start order
}

// subagentReg is the tenant's registry.
func (t *tenant) subagentReg() *subagentRegistry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.subagents == nil {
		t.subagents = &subagentRegistry{}
	}
	return t.subagents
}

// anyActive says a child runs or waits for its children's announces.
func (g *subagentRegistry) anyActive() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.runs {
		if r.active() {
			return true
		}
	}
	return false
}

// admit reserves a running child under the limits (OpenClaw's
// maxChildrenPerAgent per parent session, maxConcurrent per tenant) and
// forgets ended children past keepEnded or maxKeptChildren.
func (g *subagentRegistry) admit(e *subagentRun, perParent, total int, now time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	mine, all := 0, 0
	for _, r := range g.runs {
		if r.active() {
			all++
			if r.c.ParentKey == e.c.ParentKey {
				mine++
			}
		}
	}
	if mine >= perParent {
		return fmt.Errorf("sessions_spawn has reached max active children for this session (%d/%d; agents.defaults.subagents.maxChildrenPerAgent)", mine, perParent)
	}
	if all >= total {
		return fmt.Errorf("sessions_spawn has reached max concurrent subagents (%d/%d; agents.defaults.subagents.maxConcurrent): wait for a child to finish", all, total)
	}
	kept := g.runs[:0]
	ended := 0
	for i := len(g.runs) - 1; i >= 0; i-- {
		if r := g.runs[i]; !r.active() {
			ended++
			if ended > maxKeptChildren || now.Sub(r.endedAt) > keepEnded {
				g.runs[i] = nil
			}
		}
	}
	for _, r := range g.runs {
		if r != nil {
			kept = append(kept, r)
		}
	}
	g.runs = append(kept, e)
	return nil
}

// drop forgets a child that could not start.
func (g *subagentRegistry) drop(e *subagentRun) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs = slices.DeleteFunc(g.runs, func(r *subagentRun) bool { return r == e })
}

// children are the children of parentKey, newest first: the active ones,
// then those ended in the last recent.
func (g *subagentRegistry) children(parentKey string, recent time.Duration, now time.Time) []subagentRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	var active, ended []subagentRun
	for i := len(g.runs) - 1; i >= 0; i-- {
		r := g.runs[i]
		switch {
		case r.c.ParentKey != parentKey:
		case r.active():
			active = append(active, *r)
		case now.Sub(r.endedAt) <= recent:
			ended = append(ended, *r)
		}
	}
	return append(active, ended...)
}

// of finds the active child whose session is key.
func (g *subagentRegistry) of(key string) *subagentRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.runs {
		if r.c.Key == key && r.active() {
			return r
		}
	}
	return nil
}

// subagentTools is the registry as tenant t's runs see it
// (agent.Subagents).
type subagentTools struct {
	s *Server
	t *tenant
}

var _ agent.Subagents = subagentTools{}

// Start admits, creates and starts a child.
func (x subagentTools) Start(ctx context.Context, c agent.Child) (string, error) {
	s, t := x.s, x.t
	rt, err := t.current(s)
	if err != nil {
		return "", err
	}
	cfg := rt.file.Config
	e := &subagentRun{c: c, status: childRunning, startedAt: time.Now()}
	reg := t.subagentReg()
	if err := reg.admit(e, cfg.MaxChildrenPerAgent(), cfg.MaxConcurrentSubagents(), e.startedAt); err != nil {
		return "", err
	}
	patch := map[string]any{"spawnedBy": c.ParentKey, "spawnDepth": c.Depth}
	if c.Label != "" {
		patch["label"] = c.Label
	}
	raw, err := json.Marshal(patch)
	if err == nil {
		_, err = rt.runner.Store.PatchSession(ctx, c.AgentID, c.Key, raw, time.Now())
	}
	if err != nil {
		reg.drop(e)
		return "", fmt.Errorf("creating the subagent session: %w", err)
	}
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: c.Input}}, ExtraSystem: c.System, Model: c.Model}
	if err := x.startRun(rt, e, req); err != nil {
		reg.drop(e)
		return "", err
	}
	return e.runID, nil
}

// startRun registers a run of e's session and starts it; e is the
// registry's and reg.mu is not held.
func (x subagentTools) startRun(rt *runtime, e *subagentRun, req agent.Request) error {
	s, t := x.s, x.t
	reg := t.subagentReg()
	id := store.NewID()
	r := s.prepareRun(t, rt, nil, "chat", id, e.c.Key, e.c.AgentID, req, e.c.Timeout)
	runCtx, perr := s.runs.add(r, r.timeout)
	if perr != nil {
		r.abandon(perr)
		return fmt.Errorf("starting the subagent's run: %s", perr.Message)
	}
	reg.mu.Lock()
	e.runID, e.run = id, r
	reg.mu.Unlock()
	go func() {
		r.run(runCtx)
		x.ended(e, r)
	}()
	return nil
}

// ended records how a child's run ended and announces it, unless a steer
// replaced the run or the run yielded.
func (x subagentTools) ended(e *subagentRun, r *chatRun) {
	r.mu.Lock()
	out := r.out
	r.mu.Unlock()
	reg := x.t.subagentReg()
	reg.mu.Lock()
	if e.run != r { // steered: the new run's end is the child's
		reg.mu.Unlock()
		return
	}
	e.run = nil
	settleChild(e, out, r.timeout)
	status := e.status
	reg.mu.Unlock()
	if status != childPaused {
		x.finish(e)
	}
}

// settleChild sets e's status and result from its run's outcome; reg.mu is
// held.
func settleChild(e *subagentRun, out runOutcome, timeout time.Duration) {
	e.endedAt = out.endedAt
	switch {
	case out.status == "ok" && out.res != nil && out.res.Yielded:
		e.status, e.result = childPaused, ""
	case out.status == "ok" && out.res != nil:
		e.status, e.result = childDone, out.res.Text
	case out.status == "timeout":
		e.status, e.result = childTimeout, fmt.Sprintf("timed out after %s", timeout)
	case out.status == "aborted" && e.status == childKilled:
		e.result = errKilled.Error()
	case out.status == "aborted":
		e.status, e.result = childKilled, out.message
	default:
		e.status, e.result = childFailed, cmp.Or(out.message, "the run ended without an answer")
	}
}

// finish announces an ended child to its parent, then removes its
// session when it was spawned with cleanup "delete".
func (x subagentTools) finish(e *subagentRun) {
	if e.c.Announce {
		x.announce(e)
	}
	if e.c.Delete {
		if rt, err := x.t.current(x.s); err == nil {
			if _, err := rt.runner.Store.DeleteSession(context.Background(), e.c.AgentID, e.c.Key); err != nil {
				x.s.log.Warn("subagent cleanup", "tenant", x.t.id, "session", e.c.Key, "err", err)
			}
		}
	}
}

// announce runs the parent's turn that gets e's result. When the parent
// is itself a paused child, that turn continues it: a turn that ends
// without yielding is its result, announced to its own parent.
func (x subagentTools) announce(e *subagentRun) {
	s, t := x.s, x.t
	rt, err := t.current(s)
	if err != nil {
		s.log.Warn("subagent announce", "tenant", t.id, "session", e.c.ParentKey, "err", err)
		return
	}
	reg := t.subagentReg()
	toSubagent := strings.Contains(e.c.ParentKey, ":subagent:")
	reg.mu.Lock()
	text := announceText(e, toSubagent)
	reg.mu.Unlock()
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: text}}}
	id := "announce-" + store.NewID()
	ctx, unbind := t.bind(context.Background())
	defer unbind()
	res, failed := s.backgroundTurn(ctx, t, rt, id, e.c.ParentKey, e.c.ParentAgent, req, 0)
	if toSubagent {
		// The turn continues a paused parent; a parent that answered
		// already keeps this turn in its transcript only.
		parent := reg.of(e.c.ParentKey)
		if parent == nil {
			return
		}
		reg.mu.Lock()
		continued := parent.status == childPaused && parent.run == nil
		if continued {
			out := runOutcome{status: "ok", res: res, endedAt: time.Now()}
			if failed != "" {
				out = runOutcome{status: "error", message: failed, endedAt: time.Now()}
			}
			settleChild(parent, out, 0)
		}
		status := parent.status
		reg.mu.Unlock()
		if continued && status != childPaused {
			x.finish(parent)
		}
		return
	}
	if failed != "" || res == nil {
		s.log.Warn("subagent announce turn", "tenant", t.id, "session", e.c.ParentKey, "err", failed)
		return
	}
	x.deliver(rt, e.c.ParentAgent, e.c.ParentKey, res.Text)
}

// deliver sends the parent's reply to an announce to the chat its
// session last talked in, as a heartbeat alert to target "last" goes; a
// session of no chat (a WebSocket or HTTP client's) has it in its
// transcript and events only.
func (x subagentTools) deliver(rt *runtime, agentID, key, text string) {
	text = strings.TrimSpace(text)
	if text == "" || text == silentReply {
		return
	}
	hs := automation.HeartbeatSettings{AgentID: agentID, Target: "last"}
	_, _, err := x.s.deliverHeartbeat(context.Background(), x.t, rt, hs, key, func(automation.Visibility) string { return text })
	if err != nil {
		x.s.log.Debug("subagent announce not sent to a chat", "tenant", x.t.id, "session", key, "err", err)
	}
}

// announceText is OpenClaw's internal task completion event
// (formatTaskCompletionEvent, protected mode) for e, which is ended.
// toSubagent says the parent is itself a subagent.
func announceText(e *subagentRun, toSubagent bool) string {
	label := cmp.Or(e.c.Label, firstLine(e.c.Task, 80), "unnamed task")
	var status, result string
	switch e.status {
	case childDone:
		status, result = "completed; ready for parent review", cmp.Or(strings.TrimSpace(e.result), "(no output)")
	case childTimeout:
		status, result = "timed out", "(no output)"
	case childKilled:
		status, result = "killed: "+e.result, "(no output)"
	default:
		status, result = "failed: "+cmp.Or(e.result, "unknown error"), "(no output)"
	}
	if len(result) > maxAnnounceResult {
		result = result[:maxAnnounceResult] + "\n[… truncated: the whole answer is in the child's transcript, sessions_history " + e.c.Key + "]"
	}
	action := "A completed subagent task is ready for parent review. This completion ends one child run, not necessarily the original user request. Compare the result with the requested outcome before deciding the task is done. Otherwise send a truthful user-facing update. Keep this internal context private (don't mention system/log/stats/session details or announce type). Reply ONLY: NO_REPLY only when this exact result is already visible to the user in this same turn."
	if toSubagent {
		action = "Convert this completion into a concise internal orchestration update for your parent agent in your own words. Keep this internal context private (don't mention system/log/stats/session details or announce type). If this result is duplicate or no update is needed, reply ONLY: NO_REPLY."
	}
	runtime := e.endedAt.Sub(e.startedAt).Round(time.Second)
	return strings.Join([]string{
		"[Internal task completion event]",
		"source: subagent",
		"session_key: " + e.c.Key,
		"run_id: " + e.runID,
		"type: subagent task",
		"task: " + strings.ReplaceAll(label, "\n", " "),
		"status: " + strings.ReplaceAll(status, "\n", " "),
		"",
		result,
		"",
		"runtime " + runtime.String() + " · sessionKey " + e.c.Key,
		"",
		"Action:",
		action,
	}, "\n")
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Yield keeps message for the next announce's turn as a system event
// (sysevents.go), when parentKey has children whose results are owed.
func (x subagentTools) Yield(parentKey, message string) error {
	pending := 0
	for _, r := range x.t.subagentReg().children(parentKey, 0, time.Now()) {
		if r.active() && r.c.Announce {
			pending++
		}
	}
	if pending == 0 {
		return errors.New("no pending child completion is owned by this session: if the assigned work is complete, return its result normally")
	}
	if strings.TrimSpace(message) == "" {
		return nil
	}
	_, err := x.t.events().add(parentKey, "sessions_yield: "+message, time.Now())
	return err
}

// Control serves the subagents tool: list, kill, steer.
func (x subagentTools) Control(ctx context.Context, parentKey string, r tools.SubagentsRequest) (json.RawMessage, error) {
	reg := x.t.subagentReg()
	now := time.Now()
	kids := reg.children(parentKey, time.Duration(r.RecentMinutes)*time.Minute, now)
	if r.Action == "list" {
		return json.Marshal(listView(parentKey, kids, now))
	}
	if r.Action == "kill" && (r.Target == "all" || r.Target == "*") {
		var killed []string
		for i := range kids {
			if kids[i].active() {
				killed = append(killed, x.kill(ctx, kids[i].c.Key)...)
			}
		}
		return json.Marshal(map[string]any{"status": "ok", "action": "kill", "target": "all", "killed": killed})
	}
	e, err := pick(kids, r.Target)
	if err != nil {
		return nil, err
	}
	switch r.Action {
	case "kill":
		if !e.active() {
			return nil, fmt.Errorf("subagent %s is not running (status %s)", e.c.Key, e.status)
		}
		return json.Marshal(map[string]any{"status": "ok", "action": "kill", "runId": e.runID, "sessionKey": e.c.Key, "killed": x.kill(ctx, e.c.Key)})
	case "steer":
		id, err := x.steer(e.c.Key, r.Message)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"status": "ok", "action": "steer", "runId": id, "sessionKey": e.c.Key})
	}
	return nil, fmt.Errorf("unsupported action %q", r.Action)
}

// kill stops the active child of session key and, first, its own
// active children (a cascade stop); it returns the sessions stopped.
func (x subagentTools) kill(ctx context.Context, key string) []string {
	reg := x.t.subagentReg()
	var stopped []string
	for _, kid := range reg.children(key, 0, time.Now()) {
		if kid.active() {
			stopped = append(stopped, x.kill(ctx, kid.c.Key)...)
		}
	}
	e := reg.of(key)
	if e == nil {
		return stopped
	}
	reg.mu.Lock()
	r := e.run
	was := e.status
	e.status = childKilled
	if r == nil { // paused: no run to stop
		e.endedAt, e.result = time.Now(), errKilled.Error()
	}
	reg.mu.Unlock()
	if r != nil {
		abortRuns(ctx, []*chatRun{r}, errKilled)
	} else if was == childPaused {
		x.finish(e)
	}
	return append(stopped, key)
}

// steer replaces a running child's run with one that has message, as
// OpenClaw's steer restarts the run; the new run's end is the child's.
func (x subagentTools) steer(key, message string) (string, error) {
	reg := x.t.subagentReg()
	e := reg.of(key)
	if e == nil {
		return "", fmt.Errorf("subagent %s is not running; use sessions_send to continue its session", key)
	}
	rt, err := x.t.current(x.s)
	if err != nil {
		return "", err
	}
	reg.mu.Lock()
	old := e.run
	e.run = nil // its end is no longer the child's
	e.status = childRunning
	reg.mu.Unlock()
	if old != nil {
		old.cancel(errSteered)
	}
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: "[message from your requester " + e.c.ParentKey + "]\n" + message}},
		ExtraSystem: e.c.System, Model: e.c.Model}
	if err := x.startRun(rt, e, req); err != nil {
		reg.mu.Lock()
		e.status, e.endedAt, e.result = childFailed, time.Now(), err.Error()
		reg.mu.Unlock()
		x.finish(e)
		return "", err
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return e.runID, nil
}

// pick resolves a subagents target among kids (listView's order): a
// 1-based index, "last" (the newest), a runId, a session key, or a
// label (exact, else a unique prefix).
func pick(kids []subagentRun, target string) (*subagentRun, error) {
	target = strings.TrimSpace(target)
	if len(kids) == 0 {
		return nil, errors.New("this session has no subagents (active or recent)")
	}
	if target == "last" {
		newest := 0
		for i := range kids {
			if kids[i].startedAt.After(kids[newest].startedAt) {
				newest = i
			}
		}
		return &kids[newest], nil
	}
	if n, err := strconv.Atoi(target); err == nil {
		if n < 1 || n > len(kids) {
			return nil, fmt.Errorf("target %d is out of range: the list has %d subagents", n, len(kids))
		}
		return &kids[n-1], nil
	}
	for i := range kids {
		if kids[i].runID == target || kids[i].c.Key == target || kids[i].c.Label == target {
			return &kids[i], nil
		}
	}
	var found *subagentRun
	for i := range kids {
		if kids[i].c.Label != "" && strings.HasPrefix(kids[i].c.Label, target) {
			if found != nil {
				return nil, fmt.Errorf("target %q matches more than one label; use the runId or session key", target)
			}
			found = &kids[i]
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no subagent of this session matches %q (runId, session key, label, list number or \"last\")", target)
	}
	return found, nil
}

// childView is one child in subagents list.
type childView struct {
	Index      int    `json:"index"`
	RunID      string `json:"runId"`
	SessionKey string `json:"sessionKey"`
	AgentID    string `json:"agentId"`
	Label      string `json:"label,omitempty"`
	Task       string `json:"task"`
	Status     string `json:"status"`
	StartedAt  int64  `json:"startedAt"`
	EndedAt    int64  `json:"endedAt,omitempty"`
	RuntimeMs  int64  `json:"runtimeMs"`
	Model      string `json:"model,omitempty"`
	Error      string `json:"error,omitempty"`
}

// listView is subagents list's answer, as OpenClaw's: active and recent
// children and a text summary.
func listView(parentKey string, kids []subagentRun, now time.Time) map[string]any {
	active, recent := []childView{}, []childView{}
	var text strings.Builder
	for i, k := range kids[:min(len(kids), maxListed)] {
		end := now
		if !k.active() {
			end = k.endedAt
		}
		v := childView{Index: i + 1, RunID: k.runID, SessionKey: k.c.Key, AgentID: k.c.AgentID, Label: k.c.Label,
			Task: firstLine(k.c.Task, 120), Status: k.status, StartedAt: k.startedAt.UnixMilli(),
			RuntimeMs: end.Sub(k.startedAt).Milliseconds(), Model: k.c.Model}
		if !k.active() {
			v.EndedAt = k.endedAt.UnixMilli()
			if k.status != childDone {
				v.Error = k.result
			}
			recent = append(recent, v)
		} else {
			active = append(active, v)
		}
		fmt.Fprintf(&text, "%d. %s [%s] %s (%s)\n", v.Index, cmp.Or(v.Label, v.Task), v.Status, v.SessionKey, v.RunID)
	}
	if len(kids) == 0 {
		text.WriteString("No subagents.")
	}
	return map[string]any{"status": "ok", "action": "list", "requesterSessionKey": parentKey,
		"total": len(kids), "active": active, "recent": recent, "text": strings.TrimSpace(text.String())}
}
