package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"talon/internal/config"
	"talon/internal/policy"
	"talon/internal/sandbox"
	"talon/internal/session"
	"talon/internal/store"
	"talon/internal/tools"
)

// Subagents runs the children sessions_spawn starts, each as a run of its
// own session beside the parent's: the gateway's registry, which also
// announces a child's result to its parent and serves the subagents tool
// and sessions_yield.
type Subagents interface {
	// Start admits c against the running-children limits, creates its
	// session and starts its run; it returns the run's id at once.
	Start(ctx context.Context, c Child) (runID string, err error)
	// Control serves the subagents tool for the children of parentKey.
	Control(ctx context.Context, parentKey string, r tools.SubagentsRequest) (json.RawMessage, error)
	// Yield keeps message for the turn the next announce to parentKey
	// starts; it fails when no child of parentKey owes its result.
	Yield(parentKey, message string) error
}

// Child is one checked spawn.
type Child struct {
	ParentKey   string // the spawning session, canonical
	ParentAgent string
	AgentID     string // the agent the child runs as
	Key         string // agent:<id>:subagent:<uuid>
	Depth       int
	Task, Label string
	Model       string        // "" for the agent's
	Timeout     time.Duration // 0 for none
	Delete      bool          // remove the session after the announce
	Announce    bool
	// Input and System are the child's first message and its system
	// prompt's addition.
	Input, System string
}

// errNoSubagents is the subagent tools' answer in a run without a
// registry (a runner used outside the gateway).
var errNoSubagents = errors.New("subagents are not available in this run: they run under the gateway (talon serve)")

// acceptedNote is OpenClaw's advice with an accepted spawn.
const acceptedNote = "Auto-announces on completion. Continue any independent work. Wait for completion events for ALL required children before your final answer; never busy-poll. If a completion arrives after your final answer, reply ONLY with NO_REPLY."

// Spawn checks a spawn as OpenClaw does — the target agent against
// subagents.allowAgents, the caller's depth against maxSpawnDepth, the
// model — and Talon's sandbox rule (the child no less confined than the
// caller, sessions.CheckDrive), then hands it to the registry.
func (s *runSessions) Spawn(ctx context.Context, r tools.SpawnRequest) (json.RawMessage, error) {
	if s.r.Subagents == nil {
		return nil, errNoSubagents
	}
	cfg := s.r.Config
	target, err := spawnTarget(cfg, s.agentID, r.AgentID)
	if err != nil {
		return nil, err
	}
	parent, err := s.r.Store.GetSession(ctx, s.agentID, s.key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("reading session %s: %w", s.key, err)
	}
	depth := policy.SubagentDepth(s.key, nil)
	if parent.SpawnDepth != nil && *parent.SpawnDepth >= 0 {
		depth = *parent.SpawnDepth
	}
	if limit := policy.MaxSpawnDepth(cfg); depth >= limit {
		return nil, fmt.Errorf("sessions_spawn is not allowed at this depth (current depth: %d, max: %d; agents.defaults.subagents.maxSpawnDepth)", depth, limit)
	}
	key := session.Subagent(target, store.NewID())
	plan, err := sandbox.Resolve(cfg, s.r.StateDir, target, key)
	if err != nil {
		return nil, fmt.Errorf("resolving the sandbox of %s: %w", key, err)
	}
	if err := s.drive(target, key); err != nil {
		return nil, err
	}
	if r.RequireSandbox && !plan.Sandboxed {
		return nil, fmt.Errorf(`sandbox "require": the child would not be sandboxed (%s)`, plan.Reason)
	}
	model, applied, warning := s.childModel(target, r.Model, parent)
	timeout := cfg.SubagentRunTimeoutSeconds()
	if r.RunTimeoutSeconds != nil {
		timeout = *r.RunTimeoutSeconds
	}
	c := Child{
		ParentKey: s.key, ParentAgent: s.agentID, AgentID: target, Key: key, Depth: depth + 1,
		Task: r.Task, Label: strings.TrimSpace(r.Label), Model: model,
		Timeout: time.Duration(timeout) * time.Second, Delete: r.Delete, Announce: r.Announce,
	}
	c.Input, c.System = "[Subagent Task]\n"+r.Task, childSystem(cfg, &c)
	runID, err := s.r.Subagents.Start(ctx, c)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"status": "accepted", "childSessionKey": key, "runId": runID, "mode": "run",
		"expectsCompletionMessage": r.Announce, "context": "isolated", "note": acceptedNote,
	}
	if !r.Announce {
		out["note"] = "No completion announce (expectsCompletionMessage false): inspect the child with subagents or sessions_history."
	}
	if model != "" {
		out["resolvedModel"] = model
		if p, _, ok := strings.Cut(model, "/"); ok {
			out["resolvedProvider"] = p
		}
	}
	if applied {
		out["modelApplied"] = true
	}
	if warning != "" {
		out["warning"] = warning
	}
	return json.Marshal(out)
}

// spawnTarget is the agent a child runs as: the caller's own unless
// requested names another, which the caller's allowAgents must list
// (OpenClaw's resolveSubagentTargetPolicy).
func spawnTarget(cfg *config.Config, requester, requested string) (string, error) {
	if strings.TrimSpace(requested) == "" {
		return requester, nil
	}
	id := config.NormalizeAgentID(requested)
	ids, anyAgent := cfg.SpawnTargets(requester)
	for _, a := range ids {
		if a == id {
			return id, nil
		}
	}
	allowed := strings.Join(ids, ", ")
	if allowed == "" {
		allowed = "none"
	}
	if anyAgent || !cfg.HasAgent(id) {
		return "", fmt.Errorf("agentId %q is not in the configured agent registry (allowed: %s)", id, allowed)
	}
	return "", fmt.Errorf("agentId is not allowed for sessions_spawn (allowed: %s; subagents.allowAgents)", allowed)
}

// childModel is the model a child runs with: the requested one when it
// resolves (else a warning and the default), else the configured
// subagents.model, else, for the caller's own agent, the caller's model
// ("" leaves the child's agent's own).
func (s *runSessions) childModel(target, requested string, parent session.Entry) (ref string, applied bool, warning string) {
	if requested = strings.TrimSpace(requested); requested != "" {
		_, _, err := s.r.Resolve(requested)
		if err == nil {
			return requested, true, ""
		}
		warning = fmt.Sprintf("model %q was skipped (%v); the subagent runs on its default model", requested, err)
	}
	if m := s.r.Config.SubagentModel(target); m != "" {
		return m, false, warning
	}
	if target == s.agentID {
		return runModel(s.r.Config, s.agentID, "", parent), false, warning
	}
	return "", false, warning
}

// childSystem is the child's addition to its system prompt: what it is
// and where its answer goes (OpenClaw's subagent prompt, in short).
func childSystem(cfg *config.Config, c *Child) string {
	var b strings.Builder
	b.WriteString("## Subagent\nYou are a subagent spawned for one task, given in the [Subagent Task] message. Your final answer is announced to the session that spawned you; complete the task and answer with its result.\n")
	if c.Depth >= policy.MaxSpawnDepth(cfg) {
		b.WriteString("Leaf worker: cannot spawn. Assigned task only.\n")
	}
	b.WriteString("\n## Session Context\n")
	if c.Label != "" {
		fmt.Fprintf(&b, "- Label: %s\n", strings.ReplaceAll(c.Label, "\n", " "))
	}
	fmt.Fprintf(&b, "- Requester session: %s.\n- Your session: %s.\n", c.ParentKey, c.Key)
	return b.String()
}

// Subagents serves the subagents tool from the registry.
func (s *runSessions) Subagents(ctx context.Context, r tools.SubagentsRequest) (json.RawMessage, error) {
	if s.r.Subagents == nil {
		return nil, errNoSubagents
	}
	return s.r.Subagents.Control(ctx, s.key, r)
}

// Yield ends the turn when children still owe their results.
func (s *runSessions) Yield(_ context.Context, message string) (json.RawMessage, error) {
	if s.r.Subagents == nil {
		return nil, errNoSubagents
	}
	if err := s.r.Subagents.Yield(s.key, message); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"status": "yielded"})
}

// AgentsList lists the agents the caller may spawn, itself first, as
// OpenClaw's agents_list.
func (s *runSessions) AgentsList(context.Context) (json.RawMessage, error) {
	cfg := s.r.Config
	ids, anyAgent := cfg.SpawnTargets(s.agentID)
	type row struct {
		ID         string `json:"id"`
		Name       string `json:"name,omitempty"`
		Configured bool   `json:"configured"`
		Model      string `json:"model,omitempty"`
	}
	agents := []row{}
	add := func(id string) {
		r := row{ID: id, Configured: cfg.HasAgent(id), Model: cfg.AgentModel(id)}
		if a, _ := cfg.Agent(id); a != nil {
			r.Name = strings.TrimSpace(a.Name)
		}
		agents = append(agents, r)
	}
	for _, id := range ids {
		if id == s.agentID {
			add(id)
		}
	}
	for _, id := range ids {
		if id != s.agentID {
			add(id)
		}
	}
	return json.Marshal(map[string]any{"requester": s.agentID, "allowAny": anyAgent, "agents": agents})
}
