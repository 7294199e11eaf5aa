package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"talon/internal/approval"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/netguard"
	"talon/internal/sandbox"
)

// Forgetter is a tool that keeps state by workspace beyond a call
// (exec's background jobs): Forget drops, and stops, all of it under dir,
// when the tenant that owns dir is deleted.
type Forgetter interface {
	Forget(dir string)
	// Holds says work of it runs now under dir (a background job that
	// has not ended): the tenant that owns dir must keep its sandboxes.
	Holds(dir string) bool
}

// Tool is one capability the model can call. Implementations are safe for
// concurrent use; per-call state lives in Env.
type Tool interface {
	// Name is the tool's id, lower case with underscores.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON Schema of the arguments: a flat object with a
	// description on every property and string enums, never unions.
	Schema() json.RawMessage
	// Run executes one call. A problem the model caused (bad arguments, a
	// missing file) is a Result with IsError; an error return is a failure
	// of Talon itself.
	Run(ctx context.Context, env *Env, args json.RawMessage) (Result, error)
}

// Env is what a tool call may touch.
type Env struct {
	AgentID    string
	SessionKey string
	// Workspace is the directory file tools are confined to, opened as an
	// os.Root so no path leads out of it.
	Workspace *os.Root
	// AgentDir is the agent's own workspace directory on the host, where
	// its MEMORY.md and memory/ live, also when Workspace is a sandbox's.
	AgentDir string
	// StateDir is the tenant's state directory on the host, outside every
	// workspace: state a tool keeps that the model must not write (the
	// browser's profiles). "" when the caller has none.
	StateDir string
	// AllowLoopback lets network tools (web_fetch, api-tools) reach
	// loopback addresses: tools.network.allowLoopback, off by default.
	AllowLoopback bool
	// ReadOnly forbids writes (sandbox workspaceAccess ro).
	ReadOnly bool
	// Sandboxed says the session is sandboxed (its sandbox mode applies);
	// the image tool then refuses remote URLs, as OpenClaw's does.
	Sandboxed bool
	// Sandbox runs the commands of exec and process: the session's
	// sandbox, or a host sandbox when the session is not sandboxed; nil
	// when the run has none, and exec says so.
	Sandbox sandbox.Sandbox
	// Isolated is the Isolated() of the backend that opened Sandbox; false
	// for the host backend, whose commands run on the gateway host, where
	// the exec approval policy's defaults are strict (security allowlist).
	Isolated bool
	// Approvals is the tenant's exec approvals: the approvals file, the
	// pending approvals an operator resolves, and the session's system
	// events. exec consults it for every command. Nil means no approvals
	// file and nobody to ask: the requested policy alone applies, and a
	// command that needs approval falls back at once to askFallback.
	Approvals *approval.Service
	// ExecPolicy is the exec policy the run requests (spec §4.3): the
	// session entry's execHost/execSecurity/execAsk over the agent's
	// tools.exec over the global one (exec.Policy builds it). exec adds
	// its call's own arguments, the approvals file and where the command
	// runs.
	ExecPolicy approval.PolicyInput
	// ApprovalTimeout is how long an approval asked for in this run waits
	// for an operator (tools.exec.approvalTimeoutMs); 0 means the
	// approvals Manager's own (approval.DefaultTimeout).
	ApprovalTimeout time.Duration
	// Background says the process tool is offered in this run, so exec may
	// leave a command running as a background job; without it exec runs
	// every command to its end, as OpenClaw does when process is not
	// allowed.
	Background bool
	// Sessions serves the sessions_* and session_status tools; nil when
	// the caller offers none.
	Sessions Sessions
	// Vision asks an image-capable model about one image and returns its
	// text: the image tool's model call, set by the agent runner to
	// agents.defaults.imageModel or the agent's own model. Nil when no
	// such model is known; the image tool then says so.
	Vision func(ctx context.Context, prompt string, img llm.Image) (string, error)
	// Documents asks a model that reads PDFs itself about docs with
	// prompt: model when the call names one, else
	// agents.defaults.pdfModel, else the run's own model. Nil when none
	// of those can read documents; the pdf tool then returns the text it
	// extracts.
	Documents func(ctx context.Context, prompt, model string, docs []llm.Document) (string, error)
	// Messenger sends the message tool's messages through the tenant's
	// chat channels; nil when the caller has none, and message says so.
	Messenger Messenger
	// Crons serves the cron tool: the tenant's cron jobs as this run may
	// see and change them; nil when the caller has none.
	Crons Crons
	// Configs serves the gateway tool: the config file of the run's own
	// tenant; nil when the caller has none.
	Configs Configs
	// Owner says the run's sender is an owner (commands.ownerAllowFrom,
	// the operator): the cron tool then reaches every job, and only an
	// owner's run may use the gateway tool.
	Owner bool
	// ToolNames are the tools this run is offered: a job the run makes
	// gets at most these (spec automation.md R3.11).
	ToolNames []string
	// Outbound is how tools that call a remote API (web_search, tts)
	// read its key and reach it.
	Outbound Outbound
	// Config is the run's config (a tenant's, held to the operator's
	// ceiling): a tool reads its own section (tools.web.search, ...).
	// Nil in tests that need none.
	Config *config.Config
}

// Outbound is a tenant's keys and network rule for tools that call remote
// APIs, as its model providers have them (provider.Options).
type Outbound struct {
	// Env reads a key written "${NAME}" in the tool's config and the
	// variable a provider's key falls back on (BRAVE_API_KEY): the
	// tenant's own config env, the process environment for the
	// operator's tenant. Nil reads nothing.
	Env func(string) string
	// Builtin reads the operator's keys for a tenant: such a key may go
	// only to its provider's own default host, never to a base URL the
	// tenant chose. Nil when the tenant gets none (and for the
	// operator's tenant, whose Env is the environment already).
	Builtin func(string) string
	// Guard is the network rule every such call dials through; nil means
	// netguard's defaults with Env.AllowLoopback (the operator's tenant).
	Guard *netguard.Options
}

// Client is an HTTP client for one remote-API call that dials only what
// the rule allows: Guard, or netguard's defaults with allowLoopback
// (Env.AllowLoopback) when there is none. timeout bounds the whole
// request; a redirect is an error (an API answers; following one would
// carry the key elsewhere).
func (o Outbound) Client(allowLoopback bool, timeout time.Duration) *http.Client {
	g := netguard.Options{AllowLoopback: allowLoopback}
	if o.Guard != nil {
		g = *o.Guard
	}
	g.Timeout, g.MaxRedirects = timeout, -1
	return netguard.NewClient(g)
}

// Key is the key of a call: the tool's configured apiKey when set (a
// variable it names is read from Env, and an unset one is an error), else
// the fallback variable from Env, else from Builtin when the call goes to
// the provider's own host (defaultHost). "" without error means none.
func (o Outbound) Key(apiKey *config.Secret, fallback string, defaultHost bool) (string, error) {
	read := func(f func(string) string, k string) string {
		if f == nil || k == "" {
			return ""
		}
		return f(k)
	}
	if apiKey != nil && (apiKey.Text != "" || apiKey.Env != "") {
		return apiKey.Resolve(func(k string) string { return read(o.Env, k) })
	}
	if v := read(o.Env, fallback); v != "" {
		return v, nil
	}
	if defaultHost {
		return read(o.Builtin, fallback), nil
	}
	return "", nil
}

// Crons is what the cron tool needs from the gateway (spec automation.md
// §7). It is owned here, by its consumer.
type Crons interface {
	Cron(ctx context.Context, sessionKey string, r CronRequest) (json.RawMessage, error)
}

// CronRequest is one call of the cron tool, checked: Action, the job it
// names, and for add a job object and for update a patch, both in
// OpenClaw's job JSON; Owner and Tools are the calling run's.
type CronRequest struct {
	Action          string
	JobID           string
	Job             json.RawMessage
	IncludeDisabled bool
	Limit, Offset   int
	RunMode         string
	Text, Mode      string
	// ContextMessages is add's: how many recent chat lines a systemEvent
	// reminder carries (R7.1).
	ContextMessages int
	Owner           bool
	Tools           []string
}

// Configs is what the gateway tool needs from the gateway: the config
// file of the run's own tenant, read as config.get shows it (secrets
// redacted) and patched through config.patch's checks (baseHash, schema,
// the tenant ceiling, an atomic write). It is owned here, by its
// consumer. Errors are written for the model.
type Configs interface {
	// Get is config.get's payload.
	Get(ctx context.Context) (json.RawMessage, error)
	// Patch merges raw, a JSON5 object, into the file read at baseHash;
	// its result is config.patch's.
	Patch(ctx context.Context, raw, baseHash string) (json.RawMessage, error)
}

// Messenger is what the message tool needs from the gateway: sending
// text to a chat through the tenant's channel accounts. It is owned
// here, by its consumer.
type Messenger interface {
	// Send delivers m for the session sessionKey. An empty Channel or
	// Target is the conversation the session's turn came from.
	Send(ctx context.Context, sessionKey string, m OutMessage) (json.RawMessage, error)
}

// ErrNoChat is matched (errors.Is) by Messenger.Send's error when the
// message names no chat and the session has no conversation to default
// to, or the tenant no chat channel: a tool that sends only when there is
// a chat (tts) then just keeps its file.
var ErrNoChat = errors.New("no chat to send to")

// OutMessage is what the model asks the message tool to do (spec
// channels.md §9): send (or thread-reply) Text; react with Emoji to
// MessageID (or Remove the bot's); list a message's reactions; read the
// conversation's history; edit MessageID to Text; delete MessageID; post
// a Poll; or send File with Text as its caption (sendAttachment).
type OutMessage struct {
	Action                                              string
	Channel, AccountID, Target, ThreadID, ReplyTo, Text string
	MessageID, Emoji                                    string
	Remove                                              bool
	File                                                *Attachment
	Poll                                                *Poll
	Read                                                *ReadQuery
	// DryRun checks and resolves the message without sending it.
	DryRun bool
}

// Attachment is a file the message tool sends, already read.
type Attachment struct {
	Name string // a base name
	MIME string // "" when neither the model nor the content says
	Data []byte
	// Voice sends audio as a voice note where the chat has them
	// (Telegram); elsewhere it is an ordinary file.
	Voice bool
}

// Poll is the message tool's poll.
type Poll struct {
	Question string
	Options  []string
	Duration time.Duration // 0: the platform's default
	Multi    bool
}

// ReadQuery is the message tool's read: up to Limit messages, before,
// after or around a message id.
type ReadQuery struct {
	Limit                 int
	Before, After, Around string
}

// Result is what a tool call returns to the model.
type Result struct {
	Text    string
	IsError bool
	// EndTurn ends the run after this round's tool calls without asking
	// the model again (sessions_yield: the turn waits for its children).
	EndTurn bool
}

// Errorf is a Result reporting a problem to the model.
func Errorf(format string, args ...any) Result {
	return Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// Sessions is what the session tools need from the gateway. It is owned
// here, by its consumer, and implemented by the agent runner.
type Sessions interface {
	Status(ctx context.Context, sessionKey string) (json.RawMessage, error)
	List(ctx context.Context, agentID string, limit int) (json.RawMessage, error)
	History(ctx context.Context, sessionKey string, limit int) (json.RawMessage, error)
	Send(ctx context.Context, fromKey, toKey, message string) (json.RawMessage, error)
	// Spawn starts a child run and returns at once; the child's result is
	// announced to the calling session when it ends.
	Spawn(ctx context.Context, r SpawnRequest) (json.RawMessage, error)
	// Subagents lists, steers or kills the calling session's children.
	Subagents(ctx context.Context, r SubagentsRequest) (json.RawMessage, error)
	// Yield checks the calling session has children whose results are
	// still owed and keeps message for the turn their announce starts.
	Yield(ctx context.Context, message string) (json.RawMessage, error)
	// AgentsList lists the agents the calling agent may spawn.
	AgentsList(ctx context.Context) (json.RawMessage, error)
}

// SpawnRequest is one checked sessions_spawn call.
type SpawnRequest struct {
	Task  string
	Label string
	// AgentID is the agent asked for; "" for the caller's own.
	AgentID string
	// Model overrides the child's model; "" for the configured one.
	Model string
	// RunTimeoutSeconds is the child's timeout; nil for the configured
	// one, 0 for none.
	RunTimeoutSeconds *int
	// Delete removes the child's session once its result is announced
	// (cleanup "delete").
	Delete bool
	// Announce is expectsCompletionMessage: false spawns fire-and-forget.
	Announce bool
	// RequireSandbox refuses a child that would not be sandboxed
	// (sandbox "require").
	RequireSandbox bool
}

// SubagentsRequest is one checked subagents call: Action list (children
// of the last RecentMinutes, and every running one), kill or steer
// Target (a runId, a child session key, a label, a 1-based index in the
// list, "last", or for kill "all") with Message.
type SubagentsRequest struct {
	Action        string
	Target        string
	Message       string
	RecentMinutes int
}
