package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"talon/internal/approval"
	"talon/internal/automation"
	"talon/internal/compaction"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/sandbox"
	"talon/internal/session"
	"talon/internal/skill"
	"talon/internal/store"
	"talon/internal/tools"
	"talon/internal/tools/exec"
)

// Resolver turns a model reference ("openai/gpt-5.2", "inspect") into a
// provider and the model id it knows.
type Resolver func(ref string) (provider.Provider, string, error)

// Runner runs agent turns for one config.
type Runner struct {
	Config  *config.Config
	Policy  *policy.Engine
	Tools   *tools.Registry
	Store   *store.DB
	Resolve Resolver
	// Targets, when set, resolves a model reference to each key of its
	// provider (provider.Memo.Targets), for the fallback chain to rotate
	// through on rate limits; nil means one target, Resolve's.
	Targets func(ref string) ([]provider.Target, error)
	// Cooldowns remembers failing providers across runs (the tenant's,
	// for the life of the process); nil means none are remembered.
	Cooldowns *provider.Cooldowns
	StateDir  string
	// Sandboxes opens the sandboxes of sandboxed sessions and the host
	// sandbox the commands of the others run in. Nil means a sandboxed
	// session fails (closed, never on the host) and the others have no
	// sandbox for commands.
	Sandboxes *sandbox.Manager
	// MaxRounds bounds model calls per run; 0 means DefaultMaxRounds.
	MaxRounds int
	// Plugins are the plugins of this config version; their tools join
	// the run's candidates and registrations. Nil means none.
	Plugins *plugin.Set
	// Log hears of plugins that failed to load for a run; nil discards.
	Log *slog.Logger
	// Approvals is the tenant's exec approvals service, shared by every
	// runner of the tenant (pending approvals outlive config versions).
	// Nil means the runner opens its own over StateDir, with nobody to
	// approve: a command that needs approval falls back at once.
	Approvals *approval.Service
	// Messenger sends the message tool's messages through the tenant's
	// chat channels (the gateway's); nil: the tool says there are none.
	Messenger tools.Messenger
	// Crons serves the cron tool; nil for none.
	Crons tools.Crons
	// Configs serves the gateway tool; nil for none.
	Configs tools.Configs
	// Subagents runs the children sessions_spawn starts (the gateway's
	// registry); nil: the subagent tools say this run has none.
	Subagents Subagents
	// Outbound is the tenant's keys and network rule for the tools that
	// call remote APIs.
	Outbound tools.Outbound
	// Admit, when set, may refuse a run before its model is called (the
	// tenant's monthly budget); its error is the run's. Spent, when set,
	// hears that a run Admit let through has ended, its calls recorded.
	Admit func(context.Context) error
	Spent func(context.Context)
	// Model, when set, is every run's model, over the request's, the
	// session's and the config's: the operator's `talon serve --model`,
	// to run every employee on the offline model (or one provider).
	Model string
	// Now is the clock of the memory flush's date and of pruning's
	// cache timer; nil means time.Now.
	Now func() time.Time

	// bootstrap keeps the workspaces' bootstrap files between turns, and
	// prompts the system prompts built from them.
	bootstrap fileCache
	prompts   promptMemo

	ownApprovals     *approval.Service
	ownApprovalsErr  error
	ownApprovalsOnce sync.Once
}

// DefaultMaxRounds bounds a run's model calls when Runner.MaxRounds is 0.
const DefaultMaxRounds = 24

// Chat is where a channel message came from, for the tool policy.
type Chat struct {
	Channel, AccountID string
	// GroupID is the room (a Telegram group with its topic, a Slack or
	// Discord channel, a Discord thread); "" for a DM.
	GroupID string
	// GuildID and ParentID are a Discord message's server and, in a
	// thread, the thread's channel.
	GuildID, ParentID string
	Sender            policy.Sender
}

// Request is one turn asked of an agent.
type Request struct {
	AgentID    string
	SessionKey string
	// Input are the new turns: user messages, or results of client tools.
	Input []llm.Message
	// History seeds a session that has no transcript yet (a stateless
	// caller resending the conversation); ignored otherwise.
	History []llm.Message
	// ExtraSystem is appended to the system prompt.
	ExtraSystem string
	// ClientTools are tools the caller executes itself: calls to them end
	// the run and go back to the caller.
	ClientTools []llm.ToolSpec
	// Model overrides the agent's model reference. A model chosen so is
	// strict (tried alone) unless JobModel says it is a job's or
	// Fallbacks is set.
	Model string
	// JobModel says Model is a job's own (a cron payload's model): it
	// takes the configured fallbacks.
	JobModel bool
	// Fallbacks, when non-nil, are the models tried after the run's
	// model fails instead of the configured ones (a cron payload's
	// fallbacks; empty: none).
	Fallbacks []string
	// Thinking overrides the session's thinking level for this run (a
	// cron payload's thinking, a chat.send's); provider.RunThinking
	// decides the level.
	Thinking string
	// Owner says whether the sender is an owner (owner-only tools).
	Owner bool
	// Chat is the chat a channel message came from; nil for other runs.
	// The group tool policy reads its room and sender (spec channels.md
	// §10: groups.*.tools, toolsBySender).
	Chat *Chat
	// ToolsAllow caps the run's tools after the policy's steps (a cron
	// job's payload.toolsAllow, policy.Context.RunAllow): nil for no cap,
	// empty for none. ToolsAllowKey names where it is set, for the trace.
	ToolsAllow    []string
	ToolsAllowKey string
	// Files came with the turn's message (a chat's attachments): the run
	// writes them into the session's workspace and tells the model where
	// (saveInbound).
	Files []InboundFile
	// Kind is what the run's model calls are for in the usage ledger
	// (store.CallHeartbeat, store.CallCron, …); "" is a turn, or a
	// subagent's for a subagent session.
	Kind string
	// Fresh says the caller minted SessionKey for this run from a random
	// id, so no session can exist yet and the runner skips looking for
	// one (a stateless HTTP request: one read fewer per turn).
	Fresh bool
	// OnDelta receives streamed text; nil means no streaming.
	OnDelta func(text string)
	// OnToolStart and OnToolResult, when set, hear of each server-side
	// tool call as it starts and with its result (live tool events); text
	// streamed after a tool belongs to a new assistant message.
	OnToolStart  func(call llm.ToolCall)
	OnToolResult func(call llm.ToolCall, res tools.Result)
	// MaxTokens and Temperature pass the caller's sampling limits to every
	// model call of the run; zero values leave the provider's defaults.
	MaxTokens   int
	Temperature *float64
	// OnCompaction hears of each compaction of the run's session the run
	// makes (threshold, overflow), at its start and end.
	OnCompaction func(CompactionEvent)
	// Waiting, when set, reports whether another run waits for the
	// session: the optional compaction after a successful turn then
	// leaves the work to that run's (R5.8).
	Waiting func() bool
	// LightContext leaves the workspace's bootstrap files out of the
	// system prompt but the heartbeat checklist (a heartbeat's or a cron
	// job's lightContext).
	LightContext bool
	// Quiet, when set, is asked of a successful turn's final text whether
	// the turn was internal with nothing to say (a heartbeat's
	// HEARTBEAT_OK): its messages are then hidden from the model's later
	// turns and the conversation's readers, kept in the transcript
	// (store.HideItem; spec automation.md R9.6).
	Quiet func(text string) bool
}

// Result is what a run produced.
type Result struct {
	Text         string
	ToolCalls    []llm.ToolCall // calls for the caller's client tools
	FinishReason string
	Usage        provider.Usage
	// Model is the model reference that answered the run's last model
	// call: a fallback's when the primary failed; the primary's when no
	// call answered.
	Model  string
	Rounds int
	// Yielded says sessions_yield ended the turn: it waits for its
	// children's results rather than having answered.
	Yielded bool

	// partial is the text a model call streamed before it failed.
	partial string
}

// ErrUnknownAgent is returned for an agent id the config does not define.
var ErrUnknownAgent = errors.New("unknown agent")

// Run executes one turn. The transcript is appended as the run goes: the
// input first, then every model answer and tool result, so a crash loses
// at most the step in flight. A turn that fails or is aborted keeps its
// input and ends with an assistant message saying so (StopReason
// llm.StopAborted or llm.StopError, the error in Error, the text
// streamed before the end as Content), written even though ctx is done.
func (r *Runner) Run(ctx context.Context, req Request) (*Result, error) {
	cfg := r.Config
	agentID := config.NormalizeAgentID(req.AgentID)
	if !cfg.HasAgent(agentID) {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	if r.Admit != nil {
		if err := r.Admit(ctx); err != nil {
			return nil, err
		}
	}
	if r.Spent != nil {
		defer r.Spent(context.WithoutCancel(ctx))
	}
	approvals, err := r.approvals()
	if err != nil {
		return nil, err
	}
	// System events (an approved command's outcome) wait while this turn
	// works, so none lands between a tool call and its result.
	release := approvals.Hold(agentID, req.SessionKey)
	defer release()

	// What the model sees comes from the transcript, from the last
	// compaction on (store.ReadView). The turn's input (and, for a new
	// session, the caller's history) is committed together with the
	// model's first answer: one durable write per model round.
	var entry session.Entry
	err = store.ErrNotFound
	if !req.Fresh {
		entry, err = r.Store.GetSession(ctx, agentID, req.SessionKey)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("reading session %s: %w", req.SessionKey, err)
	}
	refs := provider.ModelChain(cfg, agentID, r.choice(&req, entry))
	ref := refs[0]
	// The primary that does not resolve fails the run at once unless a
	// fallback may answer (the chain then lists why it was passed over).
	if _, err := r.targets(ref); err != nil && len(refs) == 1 {
		return nil, fmt.Errorf("resolving model %q: %w", ref, err)
	}
	chain := provider.NewChain(r.failover(), refs)
	v := newView(cfg, agentID, req.SessionKey, ref, entry)
	if warn, err := v.win.Check(); err != nil {
		return nil, err
	} else if warn != "" {
		r.logWarn(warn, "agent", agentID, "session", req.SessionKey)
	}
	if err := v.read(ctx, r.Store); err != nil {
		return nil, err
	}
	// The turn's rows come after the last one read (the session's lock
	// keeps other turns out): a quiet turn hides from there.
	turnStart := v.lastSeq + 1
	// The policy's byProvider rules match the reference's provider; a
	// reference Resolve took parses, and the offline model's provider is
	// config.InspectProvider.
	mref, _ := config.ParseModelRef(ref)
	modelID := mref.Model
	firstRun := v.empty()
	input := req.Input
	if firstRun && len(req.History) > 0 {
		input = append(slices.Clip(req.History), req.Input...)
	}
	tr := &transcript{r: r, agentID: agentID, key: req.SessionKey, fresh: req.Fresh, pending: store.Items(input...)}
	tr.tokens.Window = v.win.Tokens

	// The sandbox decides the tool list too (workspaceAccess ro), so the
	// policy gets the plan's answer rather than working it out again.
	plan, err := sandbox.Resolve(cfg, r.StateDir, agentID, req.SessionKey)
	if err != nil {
		return nil, tr.fail(ctx, err, "")
	}

	// The tool list: every registered tool and the plugins' tools,
	// through the policy.
	pt := r.pluginTools(ctx, agentID, plan.AgentWorkspace)
	pctx := policy.Context{
		SessionKey: req.SessionKey, AgentID: agentID, SenderIsOwner: req.Owner,
		ModelProvider: mref.Provider, ModelID: modelID, SpawnedBy: entry.SpawnedBy,
		SubagentDepth: entry.SpawnDepth, SubagentRole: entry.SubagentRole,
		Sandboxed: &plan.Sandboxed, WorkspaceAccess: plan.Access.Value,
		Plugins: pt.Registrations, RunAllow: req.ToolsAllow, RunAllowKey: req.ToolsAllowKey,
	}
	if c := req.Chat; c != nil {
		pctx.MessageProvider, pctx.AccountID, pctx.GroupID = c.Channel, c.AccountID, c.GroupID
		pctx.GuildID, pctx.ParentID, pctx.Sender = c.GuildID, c.ParentID, c.Sender
	}
	decision := r.Policy.Evaluate(pctx, r.candidates(pt))
	specs := r.specs(&decision, pt)
	specs = append(specs, req.ClientTools...)

	box, ws, err := r.openSandbox(ctx, &plan)
	if err != nil {
		return nil, tr.fail(ctx, err, "")
	}
	defer ws.Close()
	if len(req.Files) > 0 {
		ro := decision.Sandboxed && decision.WorkspaceAccess == policy.AccessRO
		input = withNotes(input, saveInbound(ws, ro, r.now(), req.Files))
		tr.pending = store.Items(input...)
	}
	skills := r.loadSkills(ws, agentID)
	system, _ := buildPrompt(promptInput{
		root: ws, firstRun: firstRun, maxChars: bootstrapMax(cfg), extra: req.ExtraSystem,
		heartbeat: automation.HasHeartbeat(cfg, agentID), light: req.LightContext,
		tools: specs, agentID: agentID, sandbox: sandboxLine(&plan), files: &r.bootstrap, memo: &r.prompts,
		skills: skills.Prompt(func(name string) bool {
			return slices.ContainsFunc(decision.Tools, func(t policy.Tool) bool { return t.Name == name })
		}),
	})
	env := &tools.Env{
		AgentID: agentID, SessionKey: req.SessionKey, Workspace: ws,
		AgentDir: plan.AgentWorkspace, StateDir: r.StateDir, AllowLoopback: on(cfg.Tools.Network.AllowLoopback),
		ReadOnly:   decision.Sandboxed && decision.WorkspaceAccess == policy.AccessRO,
		Sandboxed:  plan.Sandboxed,
		Background: decision.ExecBackground,
		Approvals:  approvals,
	}
	env.ExecPolicy, env.ApprovalTimeout = exec.Policy(cfg, agentID, entry)
	if box != nil {
		env.Sandbox, env.Isolated = box, box.Isolated()
	}
	env.Sessions = newRunSessions(r, agentID, req.SessionKey, &plan)
	env.Messenger = r.Messenger
	env.Crons, env.Configs, env.Owner = r.Crons, r.Configs, req.Owner
	env.Outbound, env.Config = r.Outbound, cfg
	env.ToolNames = decision.Names()
	side := &sideCalls{}
	env.Vision = r.vision(chain, side)
	env.Documents = r.documents(ref, side)
	// A tool's model call whose result no commit took (the run ended
	// first) is still paid for.
	defer func() { r.record(ctx, agentID, req.SessionKey, side.take()...) }()

	if call, ok := dispatchable(skills, req.Input); ok {
		res := r.dispatch(ctx, &req, tr, env, &decision, pt, side, call)
		res.Model = ref
		if err := tr.flush(ctx); err != nil {
			return res, tr.fail(ctx, err, "")
		}
		return res, nil
	}
	v.fixed = fixedTokens(system, specs)
	st := &loopState{chain: chain, ref: ref, system: system, specs: specs, env: env, decision: &decision, plugins: pt, side: side, v: v,
		thinking: provider.RunThinking(cfg, agentID, mref, req.Thinking, entry.ThinkingLevel),
		// A memory flush writes the agent's workspace: not one it may
		// only read, nor a sandbox's own (R6.4).
		readOnly: plan.Sandboxed && (plan.Access.Value == policy.AccessRO || plan.Access.Value == policy.AccessNone)}
	if err := r.maintain(ctx, &req, tr, st, input, false); err != nil {
		return nil, tr.fail(ctx, err, "")
	}
	st.build(r.now(), tr, input)
	res, err := r.loop(ctx, &req, tr, st)
	res.Model = chain.Ref()
	if err != nil {
		return res, tr.fail(ctx, err, res.partial)
	}
	if req.Quiet != nil && req.Quiet(res.Text) {
		from := int64(1) // a new transcript: all of it
		if tr.sessionID == entry.SessionID {
			from = turnStart
		}
		tr.pending = append(tr.pending, store.HideItem(from))
		if err := tr.flush(ctx); err != nil {
			return res, fmt.Errorf("hiding the quiet turn of %s: %w", req.SessionKey, err)
		}
	}
	if req.Waiting == nil || !req.Waiting() {
		if err := r.maintain(ctx, &req, tr, st, nil, true); err != nil {
			r.logWarn("compaction after the turn", "session", req.SessionKey, "err", err)
		}
	}
	return res, nil
}

// loadSkills reads the skills of the workspace the run's file tools see;
// a broken skill is logged and left out.
func (r *Runner) loadSkills(ws *os.Root, agentID string) skill.Set {
	set, warns := skill.Load(ws)
	if r.Log != nil {
		for _, w := range warns {
			r.Log.Warn("skill", "agent", agentID, "problem", w.Error())
		}
	}
	return set
}

// dispatchable finds a skill slash command (command-dispatch: tool) in
// the turn's one user message.
func dispatchable(skills skill.Set, input []llm.Message) (skill.Call, bool) {
	if skills.Len() == 0 || len(input) != 1 || input[0].Role != llm.RoleUser {
		return skill.Call{}, false
	}
	return skills.Dispatch(input[0].Content)
}

// dispatch runs a skill's tool for its slash command, without a model
// call, through the same policy check as a model's call. The transcript
// records it as a tool call of the assistant, its result, and the result
// as the answer, so the history stays one a model can be sent.
func (r *Runner) dispatch(ctx context.Context, req *Request, tr *transcript, env *tools.Env, d *policy.Result, pt *plugin.RunTools, side *sideCalls, c skill.Call) *Result {
	call := llm.ToolCall{ID: "skill_" + newCallID(), Name: c.Tool, Arguments: string(c.Args)}
	if req.OnToolStart != nil {
		req.OnToolStart(call)
	}
	out := r.execute(ctx, env, d, pt, call)
	if req.OnToolResult != nil {
		req.OnToolResult(call, out)
	}
	tr.add(store.Item{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}})
	tr.add(store.Item{Message: llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: out.Text, IsError: out.IsError}, Also: side.take()})
	tr.add(store.Item{Message: llm.Message{Role: llm.RoleAssistant, Content: out.Text}})
	if req.OnDelta != nil {
		req.OnDelta(out.Text)
	}
	return &Result{Text: out.Text, FinishReason: provider.FinishStop}
}

func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// approvals is the runner's exec approvals service: Approvals, else one of
// its own over StateDir whose Manager has no approvers.
func (r *Runner) approvals() (*approval.Service, error) {
	if r.Approvals != nil {
		return r.Approvals, nil
	}
	r.ownApprovalsOnce.Do(func() {
		r.ownApprovals, r.ownApprovalsErr = approval.NewService(r.StateDir, TranscriptSink(r.Store))
	})
	if r.ownApprovalsErr != nil {
		return nil, fmt.Errorf("opening exec approvals: %w", r.ownApprovalsErr)
	}
	return r.ownApprovals, nil
}

// vision is the image tool's model call: agents.defaults.imageModel (its
// primary, then its fallbacks in order, each resolved as the run's own
// model is), else the run's own chain. The call is one user message, the
// prompt with the image, and is not written to the transcript: the tool
// result that carries the model's answer is; the ledger records the call.
func (r *Runner) vision(chain *provider.Chain, side *sideCalls) func(context.Context, string, llm.Image) (string, error) {
	return func(ctx context.Context, prompt string, img llm.Image) (string, error) {
		refs, err := config.ModelRefs(r.Config.Agents.Defaults.ImageModel)
		if err != nil {
			return "", fmt.Errorf("agents.defaults.imageModel: %w", err)
		}
		req := &provider.Request{Messages: []llm.Message{
			{Role: llm.RoleUser, Content: prompt, Images: []llm.Image{img}},
		}}
		if len(refs) == 0 {
			out, answered, err := chain.Chat(ctx, req, nil)
			if err != nil {
				return "", fmt.Errorf("model %s: %w", chain.Ref(), err)
			}
			side.add(r.callOf(store.CallImage, answered, out.Usage))
			return out.Content, nil
		}
		var errs []error
		for _, ref := range refs {
			if ctx.Err() != nil {
				break // no point trying the fallbacks of a cancelled run
			}
			p, id, err := r.Resolve(ref)
			if err != nil {
				errs = append(errs, fmt.Errorf("resolving image model %s: %w", ref, err))
				continue
			}
			req.Model = id
			out, err := p.Chat(ctx, req, nil)
			if err == nil {
				side.add(r.callOf(store.CallImage, ref, out.Usage))
				return out.Content, nil
			}
			errs = append(errs, fmt.Errorf("image model %s: %w", ref, err))
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
		}
		return "", errors.Join(errs...)
	}
}

// documents is the pdf tool's model call (tools.Env.Documents): the
// call's model, else agents.defaults.pdfModel's references in order, else
// the run's own model (ref, its primary, without the run's fallbacks);
// each must read documents itself (Anthropic's API). Nil when neither the
// config nor the run's model offers one.
func (r *Runner) documents(ref string, side *sideCalls) func(context.Context, string, string, []llm.Document) (string, error) {
	refs, err := config.ModelRefs(r.Config.Agents.Defaults.PDFModel)
	var prov provider.Provider
	var modelID string
	if err == nil && len(refs) == 0 {
		if prov, modelID, err = r.Resolve(ref); err != nil || !provider.ReadsDocuments(prov) {
			return nil
		}
	}
	return func(ctx context.Context, prompt, model string, docs []llm.Document) (string, error) {
		if err != nil {
			return "", fmt.Errorf("agents.defaults.pdfModel: %w", err)
		}
		use := refs
		if model != "" {
			use = []string{model}
		}
		ask := func(p provider.Provider, id, ref string) (string, error) {
			if !provider.ReadsDocuments(p) {
				return "", errors.New("it does not read PDFs itself (Anthropic's API does)")
			}
			out, err := p.Chat(ctx, &provider.Request{Model: id, Messages: []llm.Message{
				{Role: llm.RoleUser, Content: prompt, Documents: docs},
			}}, nil)
			if err != nil {
				return "", err
			}
			side.add(r.callOf(store.CallPDF, ref, out.Usage))
			return out.Content, nil
		}
		if len(use) == 0 {
			text, err := ask(prov, modelID, ref)
			if err != nil {
				return "", fmt.Errorf("model %s: %w", ref, err)
			}
			return text, nil
		}
		var errs []error
		for _, ref := range use {
			if ctx.Err() != nil {
				break
			}
			p, id, err := r.Resolve(ref)
			if err != nil {
				errs = append(errs, fmt.Errorf("resolving PDF model %s: %w", ref, err))
				continue
			}
			text, err := ask(p, id, ref)
			if err == nil {
				return text, nil
			}
			errs = append(errs, fmt.Errorf("PDF model %s: %w", ref, err))
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
		}
		return "", errors.Join(errs...)
	}
}

// loopState is what the model loop works with.
type loopState struct {
	// chain calls the run's models; ref is the first, the run's model.
	chain    *provider.Chain
	ref      string
	thinking string // the run's thinking level
	system   string
	specs    []llm.ToolSpec
	history  []llm.Message
	env      *tools.Env
	decision *policy.Result
	plugins  *plugin.RunTools
	// side holds the model calls the run's tools made until their results
	// are added to the transcript.
	side *sideCalls
	// v is the session's context; est the running estimate of the next
	// request's size (R3.3).
	v   *view
	est compaction.Tokens
	// readOnly says the run may not write the agent's workspace (no
	// memory flush); detached marks a memory flush's turn, which stores
	// nothing and does not compact.
	readOnly, detached bool
}

// build makes the request's messages from the view and pending (this
// turn's messages not stored), and re-estimates its size. A pruning round
// that changed the projection has it recorded with the next commit.
func (st *loopState) build(now time.Time, tr *transcript, pending []llm.Message) {
	st.history = st.v.messages(now, pending)
	st.est = st.v.tokens(pending)
	if st.v.dirty {
		tr.pending = append(tr.pending, store.ProjectionItem(st.v.proj))
		st.v.dirty = false
	}
}

// loop calls the model until it answers without server-side tool calls.
// A request the provider refuses as too large is compacted and sent again
// (R5.3), at most maxOverflowAttempts times.
func (r *Runner) loop(ctx context.Context, req *Request, tr *transcript, st *loopState) (*Result, error) {
	res := &Result{}
	// What a round streams is kept aside, so that a call that fails
	// half-way leaves its text in the transcript's failure record.
	var streamed strings.Builder
	onDelta := req.OnDelta
	if onDelta != nil {
		onDelta = func(text string) {
			streamed.WriteString(text)
			req.OnDelta(text)
		}
	}
	attempts := 0 // overflow compactions (R5.3)
	for res.Rounds < r.maxRounds() {
		res.Rounds++
		streamed.Reset()
		if res.Rounds > 1 && !st.detached && st.v.set.MidTurnPrecheck {
			if err := r.precheck(ctx, req, tr, st); err != nil {
				return res, err
			}
		}
		compaction.CapToolResults(st.history, st.v.win.Tokens)
		out, answered, err := st.chain.Chat(ctx, &provider.Request{
			System: st.system, Messages: st.history, Tools: st.specs,
			MaxTokens: req.MaxTokens, Temperature: req.Temperature, Thinking: st.thinking,
		}, onDelta)
		if err != nil {
			if ov, ok := overflowOf(err); ok && !st.detached && ctx.Err() == nil {
				attempts++
				r.logWarn(fmt.Sprintf("context overflow detected (attempt %d/%d)", min(attempts, maxOverflowAttempts), maxOverflowAttempts), "session", req.SessionKey)
				if attempts <= maxOverflowAttempts {
					retry, cerr := r.recoverOverflow(ctx, req, tr, st, ov, &attempts)
					if cerr != nil {
						return res, cerr
					}
					if retry {
						res.Rounds--
						continue
					}
				}
				attempts = min(attempts, maxOverflowAttempts)
				r.logWarn("[context-overflow-diag]", "sessionKey", req.SessionKey, "provider", st.ref, "messages", len(st.history),
					"compactionAttempts", attempts, "observedTokens", ov.Tokens)
				return res, &OverflowError{Attempts: attempts, Err: err}
			}
			res.partial = streamed.String()
			return res, fmt.Errorf("calling the model: %w", err)
		}
		addUsage(&res.Usage, out.Usage)
		u := usageOf(out.Usage)
		call := r.callOf(req.kind(), answered, out.Usage)
		if out.Usage != (provider.Usage{}) {
			tr.tokens.Count(int64(out.Usage.PromptTokens), int64(out.Usage.CompletionTokens), int64(out.Usage.TotalTokens))
			tr.tokens.CountCache(call.CacheRead, call.CacheWrite, call.Cost)
		}
		reply := llm.Message{Role: llm.RoleAssistant, Content: out.Content, ToolCalls: out.ToolCalls, Reasoning: out.Reasoning}
		tr.add(store.Item{Message: reply, Usage: u, Call: call})
		if err := tr.flush(ctx); err != nil {
			return res, fmt.Errorf("saving the reply of %s: %w", req.SessionKey, err)
		}
		st.history = append(st.history, reply)
		if u.Tokens() > 0 {
			st.est.Report(u)
		} else {
			st.est.Add(reply)
		}
		res.Text, res.FinishReason = out.Content, out.FinishReason
		if len(out.ToolCalls) == 0 {
			if res.FinishReason == "" || res.FinishReason == provider.FinishToolCalls {
				res.FinishReason = provider.FinishStop
			}
			return res, nil
		}
		var clientCalls []llm.ToolCall
		yielded := false
		for _, call := range out.ToolCalls {
			if isClientTool(req.ClientTools, call.Name) {
				clientCalls = append(clientCalls, call)
				continue
			}
			if req.OnToolStart != nil {
				req.OnToolStart(call)
			}
			result := r.execute(ctx, st.env, st.decision, st.plugins, call)
			if req.OnToolResult != nil {
				req.OnToolResult(call, result)
			}
			yielded = yielded || result.EndTurn
			msg := llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: result.Text, IsError: result.IsError}
			tr.add(store.Item{Message: msg, Also: st.side.take()})
			// The transcript keeps the whole result; the model gets it
			// capped to the window (R8.1).
			msg.Content = compaction.CapToolResult(msg.Content, st.v.win.Tokens)
			st.history = append(st.history, msg)
			st.est.Add(msg)
		}
		if len(clientCalls) > 0 {
			res.ToolCalls, res.FinishReason = clientCalls, provider.FinishToolCalls
			return res, tr.flush(ctx)
		}
		if yielded {
			// sessions_yield: the turn ends here, with no answer; the
			// announce of a child starts the next one.
			res.Text, res.FinishReason, res.Yielded = "", provider.FinishStop, true
			return res, tr.flush(ctx)
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
	res.FinishReason = provider.FinishLength
	if res.Text == "" {
		res.Text = fmt.Sprintf("Stopped after %d model calls without a final answer.", res.Rounds)
	}
	return res, tr.flush(ctx)
}

// usageOf is a provider's usage as a transcript keeps it.
func usageOf(u provider.Usage) compaction.Usage {
	return compaction.Usage{Input: int64(u.PromptTokens), Output: int64(u.CompletionTokens), Total: int64(u.TotalTokens)}
}

// overflowOf reads a failed model call as a context overflow (R5.3).
func overflowOf(err error) (compaction.Overflow, bool) {
	var perr *provider.Error
	if !errors.As(err, &perr) {
		return compaction.Overflow{}, false
	}
	ov, ok := compaction.ParseOverflow(perr.Status, perr.Type, perr.Message)
	return ov, ok && !ov.Terminal
}

// sync commits what the run has not yet and rereads the view, so that a
// compaction sees every message of the turn: the input once the turn has
// committed anything, and the tool results of the last round. It returns
// the turn's messages still pending (the input, before the first
// commit), which a compaction keeps after the view.
func (r *Runner) sync(ctx context.Context, tr *transcript, st *loopState) ([]llm.Message, error) {
	if tr.sessionID == "" {
		return tr.messages(), nil
	}
	if err := tr.flush(ctx); err != nil {
		return nil, err
	}
	st.v.sessionID = tr.sessionID
	return nil, st.v.read(ctx, r.Store)
}

// recoverOverflow compacts after the provider refused a request as too
// large and rebuilds the request: true when it is to be sent again. An
// attempt whose budget takes nothing out of view gives way to the next,
// smaller one; *attempt counts them.
func (r *Runner) recoverOverflow(ctx context.Context, req *Request, tr *transcript, st *loopState, ov compaction.Overflow, attempt *int) (bool, error) {
	pending, err := r.sync(ctx, tr, st)
	if err != nil || st.v.sessionID == "" {
		return false, err
	}
	for ; *attempt <= maxOverflowAttempts; *attempt++ {
		out, err := r.compact(ctx, st.v, compactRequest{reason: compaction.ReasonOverflow, pending: pending, attempt: *attempt, stated: ov.Tokens, ref: st.ref, chain: st.chain}, req.OnCompaction)
		if err != nil {
			return false, err
		}
		if out.compacted {
			st.build(r.now(), tr, pending)
			return true, nil
		}
	}
	return false, nil
}

// precheck is the mid-turn check (R5.6, compaction.midTurnPrecheck):
// before the next model call of a turn, a request above the threshold is
// compacted first.
func (r *Runner) precheck(ctx context.Context, req *Request, tr *transcript, st *loopState) error {
	if !st.v.set.CompactDue(st.v.turn(st.v.size(st.est), st.readOnly)) {
		return nil
	}
	pending, err := r.sync(ctx, tr, st)
	if err != nil || st.v.sessionID == "" {
		return err
	}
	out, err := r.compact(ctx, st.v, compactRequest{reason: compaction.ReasonThreshold, pending: pending, ref: st.ref, chain: st.chain}, req.OnCompaction)
	if err != nil || !out.compacted {
		return err
	}
	st.build(r.now(), tr, pending)
	return nil
}

// maintain is the work before a turn's first request (pending: its
// input) and, with after, after a successful turn (everything committed):
// a memory flush when one is due (R6.2), then a compaction when the
// context is above the threshold (R5.2, R5.5). Neither failing fails the
// turn; only the run's cancellation comes back.
func (r *Runner) maintain(ctx context.Context, req *Request, tr *transcript, st *loopState, pending []llm.Message, after bool) error {
	v := st.v
	size := v.size(v.tokens(pending))
	if after {
		size = v.size(st.est)
	}
	t := v.turn(size, st.readOnly)
	flush, compact := v.set.FlushDue(t), v.set.CompactDue(t)
	if !flush && !compact {
		return nil
	}
	if after {
		if _, err := r.sync(ctx, tr, st); err != nil {
			return err
		}
	}
	if v.sessionID == "" || v.empty() {
		return nil
	}
	if flush {
		r.memoryFlush(ctx, req, st)
	}
	if !compact {
		return nil
	}
	_, err := r.compact(ctx, v, compactRequest{reason: compaction.ReasonThreshold, pending: pending, ref: st.ref, chain: st.chain}, req.OnCompaction)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return err
	default:
		r.logWarn("compaction failed", "session", v.key, "err", err)
	}
	return nil
}

// memoryFlush runs the silent turn before a compaction (R6.3) in which
// the agent may write durable notes to memory/: on a copy of the
// conversation, with its tools, whose prompts and answers are neither
// stored nor delivered. It is recorded on the session (R6.4) whatever
// its outcome, so it runs once per compaction cycle; a failure is logged.
func (r *Runner) memoryFlush(ctx context.Context, req *Request, st *loopState) {
	v := st.v
	now := r.now()
	loc, _ := config.UserLocation(r.Config.Agents.Defaults.UserTimezone)
	ft := v.set.Flush.Prompts(now, loc)
	fst := *st
	fst.detached = true
	fst.system = st.system + "\n\n" + ft.System
	if ref := r.modelFor(v.set.Flush.Model, st.ref); ref != st.ref {
		if _, err := r.targets(ref); err != nil {
			r.logWarn("memory flush: resolving its model", "session", v.key, "model", ref, "err", err)
			return
		}
		fst.chain = provider.NewChain(r.failover(), []string{ref})
	}
	fst.history = append(v.conversation(), llm.Message{Role: llm.RoleUser, Content: ft.Prompt})
	fctx, cancel := context.WithTimeout(ctx, v.set.Timeout)
	defer cancel()
	freq := &Request{AgentID: req.AgentID, SessionKey: req.SessionKey, Owner: req.Owner, Chat: req.Chat, Kind: store.CallMemoryFlush}
	ftr := &transcript{r: r, detached: true}
	if _, err := r.loop(fctx, freq, ftr, &fst); err != nil {
		r.logWarn("memory flush failed", "session", v.key, "err", err)
	}
	if ctx.Err() != nil {
		r.record(ctx, v.agentID, v.key, ftr.calls...)
		return
	}
	if _, err := r.Store.RecordFlush(context.WithoutCancel(ctx), v.agentID, v.key, v.sessionID, now, ftr.calls...); err != nil {
		r.logWarn("memory flush: recording it", "session", v.key, "err", err)
		r.record(ctx, v.agentID, v.key, ftr.calls...)
		return
	}
	v.flushed = true
	r.logInfo("memory flush done", "session", v.key, "file", ft.Path)
}

// transcript buffers a run's messages between commits. The first commit
// creates or touches the session row (store.StartTurn); later ones append
// (store.ContinueTurn). Each commit also writes the usage the model
// reported since the last one to the session's token counters, in the
// same transaction. A turn is durable when the model's answer is: the
// reply a client gets is never newer than what a crash would leave. A
// detached transcript (a memory flush's) stores nothing.
type transcript struct {
	r         *Runner
	agentID   string
	key       string
	sessionID string
	fresh     bool // the key is new (Request.Fresh)
	detached  bool
	pending   []store.Item
	tokens    session.Tokens
	// calls are a detached transcript's model calls, which its caller
	// records (Runner.record): they cost what a turn's do.
	calls []*store.Call
}

func (t *transcript) add(it store.Item) {
	switch {
	case !t.detached:
		t.pending = append(t.pending, it)
	case it.Call != nil:
		t.calls = append(t.calls, it.Call)
	}
	if t.detached {
		t.calls = append(t.calls, it.Also...)
	}
}

// messages are the pending messages.
func (t *transcript) messages() []llm.Message {
	out := make([]llm.Message, 0, len(t.pending))
	for _, it := range t.pending {
		if !it.IsMarker() {
			out = append(out, it.Message)
		}
	}
	return out
}

// fail ends a turn that failed: what it has not saved yet (at least its
// input) and a record of the failure are written even when ctx is done
// (the client left), and err comes back, joined with any write error.
func (t *transcript) fail(ctx context.Context, err error, partial string) error {
	reason := llm.StopError
	if errors.Is(ctx.Err(), context.Canceled) {
		reason = llm.StopAborted
	}
	t.add(store.Item{Message: llm.Message{Role: llm.RoleAssistant, Content: partial, StopReason: reason, Error: err.Error()}})
	if ferr := t.flush(ctx); ferr != nil {
		return errors.Join(err, fmt.Errorf("recording the failed turn of %s: %w", t.key, ferr))
	}
	return err
}

// flush commits the pending messages. The commit does not watch ctx: what
// the model has answered is recorded whole even when the client leaves
// meanwhile (a run that is cancelled stops at its next model or tool call,
// and fail records that), and modernc's driver would otherwise start a
// goroutine per SQL statement to interrupt SQLite on cancellation, four a
// turn.
func (t *transcript) flush(ctx context.Context) error {
	if t.detached || t.sessionID != "" && len(t.pending) == 0 && !t.tokens.Pending() {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if t.sessionID == "" {
		id, err := t.r.Store.StartTurn(ctx, t.agentID, t.key, t.fresh, &t.tokens, t.pending)
		if err != nil {
			return err
		}
		t.sessionID = id
	} else if err := t.r.Store.ContinueTurn(ctx, t.agentID, t.key, t.sessionID, &t.tokens, t.pending); err != nil {
		return err
	}
	t.pending = nil
	t.tokens.Counted()
	return nil
}

// execute runs one server-side tool call after checking, again, that the
// policy lets this run call it. A refusal goes back to the model as an
// error result and explains which layer removed the tool.
func (r *Runner) execute(ctx context.Context, env *tools.Env, d *policy.Result, pt *plugin.RunTools, call llm.ToolCall) tools.Result {
	i := slices.IndexFunc(d.Tools, func(t policy.Tool) bool { return t.Name == call.Name })
	if i < 0 {
		for _, rm := range d.Removed {
			if rm.Tool == call.Name {
				where := rm.Stage
				if rm.Key != "" {
					where += " (" + rm.Key + ")"
				}
				return tools.Errorf("tool %q is not available to this agent: removed by %s", call.Name, where)
			}
		}
		return tools.Errorf("unknown tool %q", call.Name)
	}
	t, ok := r.tool(d.Tools[i], pt)
	if !ok {
		return tools.Errorf("unknown tool %q", call.Name)
	}
	args := json.RawMessage(call.Arguments)
	if strings.TrimSpace(call.Arguments) == "" {
		args = json.RawMessage("{}")
	}
	res, err := t.Run(ctx, env, args)
	if err != nil {
		return tools.Errorf("tool %s failed: %v", call.Name, err)
	}
	return res
}

// candidates are the registry's tools as the policy sees them, then the
// plugin tools that enter with them (the memory slot's).
func (r *Runner) candidates(pt *plugin.RunTools) []policy.Tool {
	all := r.Tools.All()
	out := make([]policy.Tool, len(all), len(all)+len(pt.Candidates))
	for i, t := range all {
		out[i] = policy.Tool{Name: t.Name(), OwnerOnly: slices.Contains(policy.OwnerOnlyTools, t.Name())}
	}
	return append(out, pt.Candidates...)
}

// Built names the candidate tools a run has, as tools.explain counts
// them built: the registry's and the memory slot's of pt. The rest of
// OpenClaw's catalog is not built in Talon.
func (r *Runner) Built(pt *plugin.RunTools) []string {
	c := r.candidates(pt)
	out := make([]string, len(c))
	for i, t := range c {
		out[i] = t.Name
	}
	return out
}

// pluginTools are the plugin tools of a run; a plugin that failed to load
// is logged and its tools are absent (tools.explain and talon plugins list
// say why).
func (r *Runner) pluginTools(ctx context.Context, agentID, agentDir string) *plugin.RunTools {
	pt := r.Plugins.Tools(ctx, plugin.Run{AgentID: agentID, AgentDir: agentDir})
	if r.Log != nil {
		for _, p := range pt.Plugins {
			if p.Enabled && len(p.Errors) > 0 {
				r.Log.Warn("plugin tools", "agent", agentID, "plugin", p.ID, "errors", p.Errors)
			}
		}
	}
	return pt
}

// tool finds the implementation of a tool the policy kept.
func (r *Runner) tool(t policy.Tool, pt *plugin.RunTools) (tools.Tool, bool) {
	if t.Plugin != "" {
		return pt.Get(t.Plugin, t.Name)
	}
	return r.Tools.Get(t.Name)
}

// specs are the definitions of the tools the policy kept, in its order.
func (r *Runner) specs(d *policy.Result, pt *plugin.RunTools) []llm.ToolSpec {
	if len(pt.Candidates) == 0 && len(pt.Registrations) == 0 {
		return r.Tools.Specs(d.Names())
	}
	out := make([]llm.ToolSpec, 0, len(d.Tools))
	for _, t := range d.Tools {
		if impl, ok := r.tool(t, pt); ok {
			out = append(out, tools.Spec(impl))
		}
	}
	return out
}

// openSandbox prepares where the run works. A sandboxed session gets its
// sandbox, and the file tools its root; a backend that cannot run here
// fails the run (closed: never on the host). Any other session works in
// the agent workspace, with the host sandbox for commands when the runner
// has a manager. The workspace is opened as a root the file tools cannot
// leave.
func (r *Runner) openSandbox(ctx context.Context, p *sandbox.Plan) (*sandbox.Session, *os.Root, error) {
	var (
		box *sandbox.Session
		err error
	)
	dir := p.AgentWorkspace
	switch {
	case p.Sandboxed && r.Sandboxes == nil:
		return nil, nil, &sandbox.Error{SessionKey: p.SessionKey, Backend: p.Backend.Value,
			Err: fmt.Errorf("session %s is sandboxed (%s), but this runner has no sandbox manager", p.SessionKey, p.Reason)}
	case p.Sandboxed:
		box, err = r.Sandboxes.Prepare(ctx, p)
		dir = p.Spec.Root
	case r.Sandboxes != nil:
		box, err = r.Sandboxes.Host(p)
	}
	if err != nil {
		return nil, nil, err
	}
	root, err := r.Sandboxes.Workspace(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("opening workspace of agent %s: %w", p.AgentID, err)
	}
	return box, root, nil
}

// sandboxLine tells the model where it works when its session is
// sandboxed; "" otherwise.
func sandboxLine(p *sandbox.Plan) string {
	if !p.Sandboxed {
		return ""
	}
	line := fmt.Sprintf("You work in a sandbox: your workspace is %s inside it, where commands start; file tools take paths relative to it.", sandbox.Workdir)
	if len(p.Spec.Mounts) > 0 {
		line += fmt.Sprintf(" The agent's own workspace is at %s, read-only, for commands only.", sandbox.AgentMount)
	}
	return line
}

func isClientTool(specs []llm.ToolSpec, name string) bool {
	return slices.ContainsFunc(specs, func(s llm.ToolSpec) bool { return s.Name == name })
}

func addUsage(sum *provider.Usage, u provider.Usage) {
	sum.PromptTokens += u.PromptTokens
	sum.CompletionTokens += u.CompletionTokens
	sum.TotalTokens += u.TotalTokens
	sum.CacheReadTokens += u.CacheReadTokens
	sum.CacheWriteTokens += u.CacheWriteTokens
}

func (r *Runner) maxRounds() int {
	if r.MaxRounds > 0 {
		return r.MaxRounds
	}
	return DefaultMaxRounds
}

func bootstrapMax(cfg *config.Config) int {
	if v := cfg.Agents.Defaults.BootstrapMaxChars; v != nil && *v > 0 {
		return *v
	}
	return DefaultBootstrapMaxChars
}

// choice is how the run's model was chosen: the operator's (Runner.Model)
// and the caller's are pinned, a job's is a job's, else the session's
// override is pinned, else the agent's configured chain applies.
func (r *Runner) choice(req *Request, e session.Entry) provider.Choice {
	c := provider.Choice{Fallbacks: req.Fallbacks}
	switch {
	case r.Model != "":
		return provider.Choice{Pinned: r.Model}
	case req.Model != "" && req.JobModel:
		c.Job = req.Model
	case req.Model != "":
		c.Pinned = req.Model
	case e.ModelOverride != "":
		c.Pinned = runModel(r.Config, "", "", e)
	}
	return c
}

// failover is what the run's model chains need: the keys of each model,
// the tenant's cool-downs, and the compaction's reading of an overflow
// and of a model's window.
func (r *Runner) failover() provider.Failover {
	return provider.Failover{
		Resolve:   r.targets,
		Cooldowns: r.Cooldowns,
		Overflow:  func(err error) bool { _, ok := overflowOf(err); return ok },
		Window:    func(ref string) int64 { return compaction.ResolveWindow(r.Config, ref).Tokens },
	}
}

// targets resolves ref to its provider's keys (Targets), or to Resolve's
// one client.
func (r *Runner) targets(ref string) ([]provider.Target, error) {
	if r.Targets != nil {
		return r.Targets(ref)
	}
	p, id, err := r.Resolve(ref)
	if err != nil {
		return nil, err
	}
	m, _ := config.ParseModelRef(ref)
	return []provider.Target{{Provider: p, Model: id, ProviderID: m.Provider}}, nil
}

// runModel is the model a turn runs with: the caller's (the
// X-OpenClaw-Model header), else the session's override (sessions.patch
// model), else the agent's.
func runModel(cfg *config.Config, agentID, requested string, e session.Entry) string {
	switch {
	case requested != "":
		return requested
	case e.ModelOverride != "" && e.ProviderOverride != "":
		return e.ProviderOverride + "/" + e.ModelOverride
	case e.ModelOverride != "":
		return e.ModelOverride
	}
	return cfg.AgentModel(agentID)
}

func on(b *bool) bool { return b != nil && *b }
