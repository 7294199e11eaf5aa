package config

// The typed model below covers the OpenClaw keys Talon acts on. Decoding is
// strict about types and lenient about presence: every field may be absent.
//
// Presence matters to the tool policy, so the model keeps it:
//   - a List is nil when the key is absent and non-nil (possibly empty) when
//     the key holds an array, because OpenClaw treats `allow: []` differently
//     from no `allow` at all;
//   - pointers (*bool, *int, *Raw) are nil when the key is absent;
//   - a Raw keeps any JSON value as it was written.
//
// Keys that OpenClaw defines but Talon does not act on have no field here:
// they are listed in unusedKeys (unused.go), round-trip, and are reported
// as not used yet rather than as unknown. Keys nobody defines are reported
// as unknown.

// List is an array of strings from the config. Nil means the key was absent.
type List []string

// Raw is any JSON value, kept as written.
type Raw struct{ *Value }

// Config is the decoded form of an OpenClaw-shaped config file.
type Config struct {
	Gateway  Gateway            `json:"gateway"`
	Agents   Agents             `json:"agents"`
	Tools    Tools              `json:"tools"`
	Channels map[string]Channel `json:"channels"`
	Plugins  Plugins            `json:"plugins"`
	Session  Session            `json:"session"`
	// Bindings choose the agent that answers a channel message (spec
	// channels.md §3).
	Bindings []Binding `json:"bindings"`
	Messages Messages  `json:"messages"`
	// AccessGroups are named lists of senders, per channel, that
	// allowFrom entries "accessGroup:<name>" expand to.
	AccessGroups map[string]AccessGroup `json:"accessGroups"`
	// Broadcast is decoded only to be refused (validate.go): Talon lets one
	// agent answer a room.
	Broadcast *Raw     `json:"broadcast"`
	Commands  Commands `json:"commands"`
	Models    Models   `json:"models"`
	// Auth is OpenClaw's auth profiles: several keys of one provider,
	// tried in turn on rate limits (auth.go).
	Auth Auth `json:"auth"`
	Env  *Raw `json:"env"`
	// Cron is the scheduled jobs' section (cron.go).
	Cron Cron `json:"cron"`
	// MCP is Talon's own: the MCP servers whose tools agents may use.
	MCP MCP `json:"mcp"`
	// Tenants is Talon's own, read from the operator's root config only:
	// the ceiling every tenant config is held to (internal/ceiling).
	Tenants Tenants `json:"tenants"`
	// Hooks is the HTTP hooks endpoint (hooks.go).
	Hooks Hooks `json:"hooks"`
	// TTS is the tts tool's speech provider (tts.go).
	TTS TTS `json:"tts"`
	// Browser is the browser tool's section (browser.go).
	Browser Browser `json:"browser"`
	// Usage is Talon's own: the config's monthly budget (budget.go).
	Usage Usage `json:"usage"`
}

// Gateway is the `gateway` section.
type Gateway struct {
	Port      *int        `json:"port"`
	Bind      string      `json:"bind"`
	Auth      GatewayAuth `json:"auth"`
	HTTP      *Raw        `json:"http"`
	Tools     ToolPolicy  `json:"tools"`
	ControlUI ControlUI   `json:"controlUi"`
}

// GatewayAuth is `gateway.auth`.
type GatewayAuth struct {
	// Mode "none" lets talon serve run the default tenant without a
	// token (keptToken); other values are not read.
	Mode     string `json:"mode"`
	Token    string `json:"token"`
	Password string `json:"password"`
}

// Agents is the `agents` section.
type Agents struct {
	Defaults AgentDefaults `json:"defaults"`
	List     []Agent       `json:"list"`
}

// AgentDefaults is `agents.defaults`.
type AgentDefaults struct {
	Model         *Raw           `json:"model"`
	Models        *Raw           `json:"models"`
	Workspace     string         `json:"workspace"`
	SkipBootstrap *bool          `json:"skipBootstrap"`
	Sandbox       Sandbox        `json:"sandbox"`
	Subagents     SubagentLimits `json:"subagents"`

	BootstrapMaxChars *int `json:"bootstrapMaxChars"`
	TimeoutSeconds    *int `json:"timeoutSeconds"`

	// ImageModel is the model the image tool shows images to: a model
	// reference, or {primary, fallbacks} (see ModelRefs).
	ImageModel *Raw `json:"imageModel"`
	// PDFModel is the model the pdf tool hands documents to when it reads
	// them itself (Anthropic's API): a model reference or {primary,
	// fallbacks}, as ImageModel. PDFMaxMb and PDFMaxPages bound what the
	// tool reads of each PDF (pdf.go).
	PDFModel    *Raw     `json:"pdfModel"`
	PDFMaxMb    *float64 `json:"pdfMaxMb"`
	PDFMaxPages *float64 `json:"pdfMaxPages"`

	// MemorySearch is memory_search's embeddings provider and ranking
	// (memorysearch.go).
	MemorySearch *MemorySearch `json:"memorySearch"`
	// ContextTokens is OpenClaw's earlier cap on every model's context
	// window (a number of tokens).
	ContextTokens  *float64       `json:"contextTokens"`
	Compaction     Compaction     `json:"compaction"`
	ContextPruning ContextPruning `json:"contextPruning"`
	// UserTimezone is the user's IANA time zone ("Europe/Vienna"): the
	// date a memory flush files its notes under (UserLocation).
	UserTimezone string `json:"userTimezone"`
	// Heartbeat is every heartbeat's settings (heartbeat.go).
	Heartbeat *Heartbeat `json:"heartbeat"`
	// ThinkingDefault is the thinking level of runs whose session and
	// request set none (ThinkingLevel reads it).
	ThinkingDefault string `json:"thinkingDefault"`
}

// SubagentLimits is `agents.defaults.subagents` (the subagent registry,
// internal/gateway/subagents.go, and sessions_spawn read it). Numbers are
// numbers in OpenClaw; fractions are floored.
type SubagentLimits struct {
	MaxSpawnDepth *float64 `json:"maxSpawnDepth"`
	// MaxChildrenPerAgent caps one session's children running at once
	// (default 5); MaxConcurrent caps the tenant's (default 8).
	MaxChildrenPerAgent *float64 `json:"maxChildrenPerAgent"`
	MaxConcurrent       *float64 `json:"maxConcurrent"`
	// RunTimeoutSeconds is a child run's timeout when sessions_spawn names
	// none; absent or 0 is none.
	RunTimeoutSeconds *float64 `json:"runTimeoutSeconds"`
	// AllowAgents are the agents sessions_spawn may run a child as,
	// besides the caller's own ("*": any configured one); nil: only the
	// caller's own.
	AllowAgents List `json:"allowAgents"`
	// Model is the children's model (its primary); nil: the parent's.
	Model *Raw `json:"model"`
}

// AgentSubagents is `agents.list[].subagents`: an agent's own allowAgents
// and children's model, over agents.defaults.subagents.
type AgentSubagents struct {
	AllowAgents List `json:"allowAgents"`
	Model       *Raw `json:"model"`
}

// Agent is one `agents.list[]` entry.
type Agent struct {
	ID        string     `json:"id"`
	Default   *bool      `json:"default"`
	Name      string     `json:"name"`
	Workspace string     `json:"workspace"`
	AgentDir  string     `json:"agentDir"`
	Model     *Raw       `json:"model"`
	Identity  *Raw       `json:"identity"`
	Tools     AgentTools `json:"tools"`
	Sandbox   Sandbox    `json:"sandbox"`
	// MemorySearch overrides agents.defaults.memorySearch key by key.
	MemorySearch *MemorySearch `json:"memorySearch"`
	// Compaction and ContextPruning are Talon's per-agent overrides of the
	// agents.defaults blocks, field by field.
	Compaction     Compaction     `json:"compaction"`
	ContextPruning ContextPruning `json:"contextPruning"`
	// GroupChat is how this agent is addressed in group chats.
	GroupChat GroupChat `json:"groupChat"`
	// Heartbeat overrides agents.defaults.heartbeat key by key; its
	// presence on any agent limits heartbeats to such agents (R9.1).
	Heartbeat *Heartbeat `json:"heartbeat"`
	// Subagents overrides agents.defaults.subagents' allowAgents and model
	// for this agent's spawns.
	Subagents *AgentSubagents `json:"subagents"`
	// ThinkingDefault overrides agents.defaults.thinkingDefault.
	ThinkingDefault string `json:"thinkingDefault"`
}

// GroupChat is `agents.list[].groupChat`.
type GroupChat struct {
	// MentionPatterns are case-insensitive regular expressions that count
	// as mentioning the bot; an empty list turns patterns off.
	MentionPatterns List `json:"mentionPatterns"`
	Rest            *Raw `talon:"rest"`
}

// ToolPolicy is an `{allow, alsoAllow, deny}` triple.
type ToolPolicy struct {
	Allow     List `json:"allow"`
	AlsoAllow List `json:"alsoAllow"`
	Deny      List `json:"deny"`
}

// ProviderTools is one `tools.byProvider.<key>` entry.
type ProviderTools struct {
	Profile string `json:"profile"`
	ToolPolicy
}

// Tools is the global `tools` section.
type Tools struct {
	Profile    string                   `json:"profile"`
	ToolPolicy                          // allow, alsoAllow, deny
	ByProvider map[string]ProviderTools `json:"byProvider"`
	Exec       *ExecTools               `json:"exec"`
	Fs         *Raw                     `json:"fs"`
	Web        WebTools                 `json:"web"`
	// Network is Talon's own: what web_fetch and api-tools may reach.
	Network   Network      `json:"network"`
	Sandbox   SandboxTools `json:"sandbox"`
	Subagents SandboxTools `json:"subagents"`
	// Sessions and AgentToAgent decide which sessions the session tools
	// reach (package tools/sessions).
	Sessions     SessionTools `json:"sessions"`
	AgentToAgent AgentToAgent `json:"agentToAgent"`
	// Message is the message tool's settings (spec channels.md R9.4).
	Message MessageTool `json:"message"`
}

// MessageTool is `tools.message`.
type MessageTool struct {
	// CrossContext says where the message tool may send besides the
	// conversation a turn came from: another chat of the same platform
	// (default yes) or another platform (default no: Talon's safer
	// default; OpenClaw 9.6 allows it).
	CrossContext struct {
		AllowWithinProvider  *bool `json:"allowWithinProvider"`
		AllowAcrossProviders *bool `json:"allowAcrossProviders"`
	} `json:"crossContext"`
	Rest *Raw `talon:"rest"`
}

// SessionTools is `tools.sessions`.
type SessionTools struct {
	// Visibility is self, tree, agent or all; "" means the default.
	Visibility string `json:"visibility"`
}

// AgentToAgent is `tools.agentToAgent`: whether session tools may reach
// another agent's sessions (under tools.sessions.visibility "all").
type AgentToAgent struct {
	Enabled *bool `json:"enabled"`
	// Allow lists agent ids or `*` globs; both agents must match. Empty
	// means every agent.
	Allow List `json:"allow"`
}

// AgentTools is `agents.list[].tools`.
type AgentTools struct {
	Profile    string                   `json:"profile"`
	ToolPolicy                          // allow, alsoAllow, deny
	ByProvider map[string]ProviderTools `json:"byProvider"`
	Exec       *ExecTools               `json:"exec"`
	Fs         *Raw                     `json:"fs"`
	Sandbox    SandboxTools             `json:"sandbox"`
}

// SandboxTools is `tools.sandbox` / `tools.subagents` (a nested `tools` policy).
type SandboxTools struct {
	Tools ToolPolicy `json:"tools"`
}

// ExecTools is `tools.exec`. Its presence alone matters to the tool profile.
type ExecTools struct {
	Host       string      `json:"host"`
	Security   string      `json:"security"`
	Ask        string      `json:"ask"`
	ApplyPatch *ApplyPatch `json:"applyPatch"`
	// ApprovalTimeoutMs is how long an exec approval waits for an
	// operator (Talon's key; OpenClaw has a built-in constant).
	ApprovalTimeoutMs *int `json:"approvalTimeoutMs"`
}

// ApplyPatch is `tools.exec.applyPatch`.
type ApplyPatch struct {
	Enabled     *bool `json:"enabled"`
	AllowModels List  `json:"allowModels"`
}

// WebTools is `tools.web`.
type WebTools struct {
	Search WebSearch `json:"search"`
	Fetch  Toggle    `json:"fetch"`
}

// Network is Talon's `tools.network`.
type Network struct {
	// AllowLoopback lets web_fetch and api-tools reach 127.0.0.0/8 and
	// ::1 (private, link-local and metadata addresses stay blocked). Off
	// by default; meant for tests and for a local stand-in of an API.
	AllowLoopback *bool `json:"allowLoopback"`
}

// MCP is Talon's `mcp` section.
type MCP struct {
	Servers map[string]MCPServer `json:"servers"`
}

// MCPServer is `mcp.servers.<name>`: a stdio command or a streamable HTTP
// URL. The name is the id of the plugin its tools belong to.
type MCPServer struct {
	Enabled *bool             `json:"enabled"`
	Command string            `json:"command"`
	Args    List              `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// StartupTimeoutMs bounds starting the server and listing its tools;
	// ToolTimeoutMs bounds one tool call.
	StartupTimeoutMs *int `json:"startupTimeoutMs"`
	ToolTimeoutMs    *int `json:"toolTimeoutMs"`
}

// Tenants is Talon's `tenants` section: what the operator lets tenant
// configs set. Every field is a ceiling; absent means Talon's strict
// default (internal/ceiling documents each one).
type Tenants struct {
	Sandbox TenantSandbox `json:"sandbox"`
	Network TenantNetwork `json:"network"`
	// MCP are servers the operator declares; a tenant may turn one on by
	// naming it in its own mcp.servers, which is the only way a tenant's
	// MCP server runs a program.
	MCP     MCP           `json:"mcp"`
	Plugins TenantPlugins `json:"plugins"`
	Models  TenantModels  `json:"models"`
	// Budget is every tenant's monthly budget; Budgets[id] replaces it
	// for one tenant (budget.go). A tenant's own usage.budget may only
	// lower the one in force.
	Budget  *Budget           `json:"budget"`
	Budgets map[string]Budget `json:"budgets"`
}

// TenantSandbox is `tenants.sandbox`.
type TenantSandbox struct {
	// Backends a tenant's sandboxes may use; default bwrap and docker.
	Backends List `json:"backends"`
	// Network lets tenant sandboxes have network; default false.
	Network *bool `json:"network"`
	// Limits are the largest sandbox.limits a tenant may set; each absent
	// one is Talon's default for that limit.
	Limits *SandboxLimits `json:"limits"`
}

// TenantNetwork is `tenants.network`.
type TenantNetwork struct {
	// AllowHosts are "IP:port" pairs that tenants' outbound URLs (model
	// providers, MCP servers, api-tools, web_fetch) may reach although
	// the address is private or loopback.
	AllowHosts List `json:"allowHosts"`
}

// TenantPlugins is `tenants.plugins`.
type TenantPlugins struct {
	// Allow are the compiled-in plugins a tenant may turn on; absent
	// means all of them.
	Allow List `json:"allow"`
}

// TenantModels is `tenants.models`.
type TenantModels struct {
	// OperatorKeys lets tenants use the built-in providers (openai,
	// openrouter, anthropic) with the key from the gateway's environment,
	// sent only to that provider's own host; default true.
	OperatorKeys *bool `json:"operatorKeys"`
}

// Toggle is a section whose `enabled: false` turns a tool off.
type Toggle struct {
	Enabled *bool `json:"enabled"`
	Rest    *Raw  `talon:"rest"`
}

// Sandbox is `agents.defaults.sandbox` or `agents.list[].sandbox`.
type Sandbox struct {
	Mode            string `json:"mode"`
	Scope           string `json:"scope"`
	PerSession      *bool  `json:"perSession"`
	WorkspaceAccess string `json:"workspaceAccess"`
	WorkspaceRoot   string `json:"workspaceRoot"`
	// Backend is Talon's own: bwrap, docker or host.
	Backend string `json:"backend"`
	// Limits is Talon's own: what one sandboxed command may use.
	Limits *SandboxLimits `json:"limits"`
	Docker *Raw           `json:"docker"`
	// SessionToolsVisibility is spawned or all; OpenClaw reads only the
	// agents.defaults one, and so does Talon.
	SessionToolsVisibility string `json:"sessionToolsVisibility"`
}

// SandboxLimits is Talon's `sandbox.limits`. Each field, when set, replaces
// the built-in default for every command run in the sandbox; a per-agent
// value replaces the agents.defaults one field by field.
type SandboxLimits struct {
	Processes      *int `json:"processes"`      // processes of the sandbox user
	OpenFiles      *int `json:"openFiles"`      // open files per process
	FileSizeMB     *int `json:"fileSizeMb"`     // largest file a command writes, MiB
	CPUSeconds     *int `json:"cpuSeconds"`     // CPU time per process
	MemoryMB       *int `json:"memoryMb"`       // address space (bwrap) or memory (docker), MiB
	TimeoutSeconds *int `json:"timeoutSeconds"` // wall clock per command
}

// Plugins is the `plugins` section.
type Plugins struct {
	Enabled *bool                  `json:"enabled"`
	Allow   List                   `json:"allow"`
	Deny    List                   `json:"deny"`
	Entries map[string]PluginEntry `json:"entries"`
	Slots   PluginSlots            `json:"slots"`
	Load    PluginLoad             `json:"load"`
}

// PluginEntry is `plugins.entries.<id>`.
type PluginEntry struct {
	Enabled *bool `json:"enabled"`
	Config  *Raw  `json:"config"`
}

// PluginSlots is `plugins.slots`.
type PluginSlots struct {
	Memory *string `json:"memory"`
}

// PluginLoad is `plugins.load`.
type PluginLoad struct {
	Paths List `json:"paths"`
}

// Session is the `session` section.
type Session struct {
	Scope   string `json:"scope"`
	MainKey string `json:"mainKey"`
	// DMScope and GroupScope say which direct and group messages share a
	// session (spec channels.md §4): "" is main and per-group.
	DMScope    string `json:"dmScope"`
	GroupScope string `json:"groupScope"`
	// IdentityLinks maps a canonical person to their ids on each channel
	// ("telegram:111", "+1555…"), so their DMs share one session.
	IdentityLinks map[string]List `json:"identityLinks"`
}

// Commands is the `commands` section.
type Commands struct {
	OwnerAllowFrom List `json:"ownerAllowFrom"`
	Rest           *Raw `talon:"rest"`
}

// Models is the `models` section.
type Models struct {
	Providers map[string]Provider `json:"providers"`
}

// Provider is `models.providers.<id>`.
type Provider struct {
	BaseURL        string            `json:"baseUrl"`
	APIKey         string            `json:"apiKey"`
	API            string            `json:"api"`
	Headers        map[string]string `json:"headers"`
	TimeoutSeconds *float64          `json:"timeoutSeconds"`
	// ContextWindow and ContextTokens are the defaults of the provider's
	// models (spec context.md §2).
	ContextWindow *float64 `json:"contextWindow"`
	ContextTokens *float64 `json:"contextTokens"`
	Models        []Model  `json:"models"`
}

// Model is one `models.providers.<id>.models[]` entry.
type Model struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Reasoning     *bool    `json:"reasoning"`
	Input         List     `json:"input"`
	ContextWindow *float64 `json:"contextWindow"`
	// ContextTokens caps ContextWindow: the window Talon budgets with.
	ContextTokens *float64          `json:"contextTokens"`
	MaxTokens     *float64          `json:"maxTokens"`
	Headers       map[string]string `json:"headers"`
	// Cost prices the model's calls for the usage ledger.
	Cost *ModelCost `json:"cost"`
}

// ModelCost is a model's price in US dollars per million tokens of each
// kind (OpenClaw's shape); an unset price counts as zero.
type ModelCost struct {
	Input      *float64 `json:"input"`
	Output     *float64 `json:"output"`
	CacheRead  *float64 `json:"cacheRead"`
	CacheWrite *float64 `json:"cacheWrite"`
}
