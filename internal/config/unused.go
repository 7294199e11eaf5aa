package config

import "strings"

// MsgUnused is the warning for an OpenClaw key Talon accepts but does not
// act on: "agents.defaults.heartbeat: not used by Talon yet".
const MsgUnused = "not used by Talon yet"

// IsUnused reports whether a warning of Decode is about such a key.
func IsUnused(is Issue) bool { return is.Message == MsgUnused }

// unusedKeys are the OpenClaw keys Talon accepts (so they are not reported
// as unknown, and are kept when the file is written back) but does not act
// on. Decode warns once for each one present, however deep, including
// inside values Talon reads only in part (tools.web.fetch is read for
// enabled; its other keys are not). The issue that builds a
// feature removes its keys here; TestUnusedKeys checks every entry is an
// OpenClaw key and that none reaches a field Talon reads.
//
// A pattern is keys joined by dots. "*" is any one key; "[]" after a key is
// any item of that array. A key that has a typed field in types.go is never
// reported, so "channels.*.*" names the keys of a channel entry that the
// tool policy does not read (it reads enabled, groups and accounts).
var unusedKeys = []string{
	// Whole sections.
	"meta", "wizard", "update", "telemetry", "logging", "ui", "skills",
	"talk",

	// HTTP hooks: Talon has no Gmail watcher, no presets (the gmail one
	// belongs with it), no JavaScript transforms (a mapping naming one is
	// refused) and of the internal event hooks only boot-md, built in (an
	// entry naming another is warned of by the checker, hooks.go).
	"hooks.gmail", "hooks.presets", "hooks.transformsDir",
	"hooks.internal.load",
	"audio", "media", "web", "discovery", "canvasHost", "diagnostics",
	"approvals", "nodeHost", "memory", "acp", "secrets",

	"env.shellEnv",

	// Webhooks are held to netguard and tenants.network.allowHosts, which
	// a tenant's policy must not loosen; retries and run history limits
	// are fixed; Talon has no trigger scripts (cron.go).
	"cron.webhookSsrfPolicy", "cron.retry", "cron.runLog", "cron.triggers",

	"gateway.mode", "gateway.remote", "gateway.reload", "gateway.tls",
	"gateway.tailscale", "gateway.trustedProxies", "gateway.nodes",
	"gateway.auth.allowTailscale",
	"gateway.http.endpoints.chatCompletions.images",
	"gateway.http.endpoints.responses", "gateway.http.securityHeaders",
	"gateway.controlUi.enabled", "gateway.controlUi.basePath",
	"gateway.controlUi.root", "gateway.controlUi.experimental",
	"gateway.controlUi.environment", "gateway.controlUi.communityInvite",
	"gateway.controlUi.github", "gateway.controlUi.sessionObserver",
	"gateway.controlUi.embedSandbox", "gateway.controlUi.allowExternalEmbedUrls",
	"gateway.controlUi.automaticallyFetchFavicons",
	"gateway.controlUi.dangerouslyAllowHostHeaderOriginFallback",
	"gateway.controlUi.dangerouslyDisableDeviceAuth",
	"gateway.controlUi.allowInsecureAuth",

	"agents.defaults.imageModel.timeoutMs",
	"agents.defaults.models.*.params", "agents.defaults.models.*.streaming",
	"agents.defaults.models.*.agentRuntime", "agents.defaults.models.*.codeMode",
	"agents.defaults.models.*.pickerRuntimes",
	// Compaction keys internal/compaction does not act on: Talon has no
	// compaction-provider plugins, sends no thinking level, preserves no
	// turns outside the kept tail, re-injects no AGENTS.md sections and
	// leaves memory re-indexing to the memory plugin.
	"agents.defaults.compaction.provider", "agents.defaults.compaction.thinkingLevel",
	"agents.defaults.compaction.recentTurnsPreserve", "agents.defaults.compaction.postCompactionSections",
	"agents.defaults.compaction.postIndexSync",
	"agents.defaults.heartbeat.agentId",
	"agents.defaults.verboseDefault", "agents.defaults.elevatedDefault",
	"agents.defaults.blockStreamingDefault", "agents.defaults.maxConcurrent",
	"agents.defaults.typingMode", "agents.defaults.humanDelay",
	// Subagents: children are kept, never archived on a timer; their
	// model has no fallbacks; Talon sends no thinking level, no
	// delegation prompt and has no announce retries to time out.
	"agents.defaults.subagents.archiveAfterMinutes", "agents.defaults.subagents.model.fallbacks",
	"agents.defaults.subagents.thinking", "agents.defaults.subagents.delegationMode",
	"agents.defaults.subagents.requireAgentId", "agents.defaults.subagents.announceTimeoutMs",
	"agents.defaults.sandbox.browser", "agents.defaults.sandbox.prune",

	"agents.list[].subagents.model.fallbacks", "agents.list[].subagents.thinking",
	"agents.list[].subagents.delegationMode", "agents.list[].subagents.requireAgentId",
	"agents.list[].groupChat.historyLimit", "agents.list[].groupChat.unmentionedInbound",
	"agents.list[].skills",
	"agents.list[].humanDelay",
	"agents.list[].sandbox.browser", "agents.list[].sandbox.prune",
	"agents.list[].tools.elevated",
	"agents.list[].tools.exec.node", "agents.list[].tools.exec.timeoutSec",
	"agents.list[].tools.exec.backgroundMs", "agents.list[].tools.exec.pathPrepend",
	"agents.list[].tools.exec.safeBins", "agents.list[].tools.exec.notifyOnExit",
	"agents.list[].tools.exec.cleanupMs", "agents.list[].tools.exec.approvalRunningNoticeMs",
	"agents.list[].tools.exec.applyPatch.workspaceOnly",

	"tools.elevated", "tools.media", "tools.links", "tools.message.*",
	"tools.exec.node", "tools.exec.timeoutSec", "tools.exec.backgroundMs",
	"tools.exec.pathPrepend", "tools.exec.safeBins", "tools.exec.notifyOnExit",
	"tools.exec.cleanupMs", "tools.exec.approvalRunningNoticeMs",
	"tools.exec.applyPatch.workspaceOnly",
	// web_search has no Codex-hosted search (it needs the Codex app
	// server); web_fetch takes no settings (the policy reads enabled).
	"tools.web.search.openaiCodex", "tools.web.fetch.*",

	// Channels: Talon reads the keys of channels.<id> and its accounts
	// that types.go (channels.go) names — access control, mentions,
	// routing, the Telegram, Slack and Discord connections, the group
	// tool policies, mediaMaxMb and actions; the rest (streaming,
	// commands, capabilities, …)
	// is kept. WhatsApp and the other platforms Talon has no adapter for
	// are reported whole (checkChannels).
	"channels.*.*", "channels.*.accounts.*.*",
	"channels.*.groups.*.*", "channels.*.accounts.*.groups.*.*",
	"channels.*.groups.*.topics.*.*", "channels.*.accounts.*.groups.*.topics.*.*",
	"channels.*.direct.*.*", "channels.*.accounts.*.direct.*.*",
	"channels.*.channels.*.*", "channels.*.accounts.*.channels.*.*",
	"channels.*.guilds.*.*", "channels.*.accounts.*.guilds.*.*",
	"channels.*.guilds.*.channels.*.*", "channels.*.accounts.*.guilds.*.channels.*.*",
	"channels.*.dm.*", "channels.*.accounts.*.dm.*",
	"channels.*.thread.*", "channels.*.accounts.*.thread.*",
	"channels.*.intents.*", "channels.*.accounts.*.intents.*",
	"bindings[].acp", "bindings[].comment", "bindings[].type",
	"accessGroups.*.type", "accessGroups.*.channelId", "accessGroups.*.guildId",
	"accessGroups.*.membership",
	// messages.groupChat's mentionPatterns and historyLimit are read.
	"messages.*", "messages.groupChat.*", "messages.inbound.*",

	// tts: the tts tool reads provider, maxTextLength, timeoutMs and the
	// openai and elevenlabs providers (tts.go). Talon does not speak its
	// replies by itself (auto, mode, summaryModel), has no personas, no
	// [[tts:...]] directives (modelOverrides), no other speech provider,
	// and no per-agent voice (an agent's tts block).
	"tts.auto", "tts.enabled", "tts.mode", "tts.persona", "tts.personas",
	"tts.summaryModel", "tts.modelOverrides", "tts.providers.*",
	"agents.list[].tts",

	// browser: the browser tool reads enabled and executablePath
	// (browser.go). Talon runs one headless managed profile per agent:
	// no named or remote (CDP) profiles, no existing-session attach, no
	// SSRF policy of its own (netguard and tools.network are the rule),
	// no act evaluate (evaluateEnabled), no tab cleanup settings.
	"browser.*",

	"commands.*", // commands.ownerAllowFrom is read

	"plugins.installs",

	"session.store", "session.reset",
	"session.sendPolicy", "session.agentToAgent",

	"models.mode", "models.catalogRefresh",
	"models.providers.*.auth",
	"models.providers.*.models[].compat",

	// memorySearch: Talon reads the embeddings provider (provider, model,
	// remote.baseUrl, apiKey and headers, the input types) and the query
	// settings; it indexes MEMORY.md and memory/ only, itself, on search.
	"agents.defaults.memorySearch.enabled", "agents.defaults.memorySearch.fallback",
	"agents.defaults.memorySearch.sources", "agents.defaults.memorySearch.extraPaths",
	"agents.defaults.memorySearch.experimental",
	"agents.defaults.memorySearch.rememberAcrossConversations", "agents.defaults.memorySearch.local",
	"agents.defaults.memorySearch.multimodal", "agents.defaults.memorySearch.outputDimensionality",
	"agents.defaults.memorySearch.cache", "agents.defaults.memorySearch.store",
	"agents.defaults.memorySearch.chunking", "agents.defaults.memorySearch.sync",
	"agents.defaults.memorySearch.remote.batch", "agents.defaults.memorySearch.query.hybrid.mmr",
	"agents.defaults.memorySearch.query.hybrid.temporalDecay",
	"agents.list[].memorySearch.enabled", "agents.list[].memorySearch.fallback",
	"agents.list[].memorySearch.sources", "agents.list[].memorySearch.extraPaths",
	"agents.list[].memorySearch.experimental",
	"agents.list[].memorySearch.rememberAcrossConversations", "agents.list[].memorySearch.local",
	"agents.list[].memorySearch.multimodal", "agents.list[].memorySearch.outputDimensionality",
	"agents.list[].memorySearch.cache", "agents.list[].memorySearch.store",
	"agents.list[].memorySearch.chunking", "agents.list[].memorySearch.sync",
	"agents.list[].memorySearch.remote.batch", "agents.list[].memorySearch.query.hybrid.mmr",
	"agents.list[].memorySearch.query.hybrid.temporalDecay",
}

// keyNode is one step of unusedTree: the patterns that have gone this far.
type keyNode struct {
	end   bool // a pattern ends here
	keys  map[string]*keyNode
	any   *keyNode // "*"
	items *keyNode // "[]"
}

var unusedTree = buildKeyTree(unusedKeys)

func buildKeyTree(patterns []string) *keyNode {
	root := &keyNode{}
	for _, p := range patterns {
		n := root
		for _, seg := range strings.Split(p, ".") {
			key, arr := strings.CutSuffix(seg, "[]")
			n = n.child(key)
			if arr {
				if n.items == nil {
					n.items = &keyNode{}
				}
				n = n.items
			}
		}
		n.end = true
	}
	return root
}

func (n *keyNode) child(key string) *keyNode {
	if key == "*" {
		if n.any == nil {
			n.any = &keyNode{}
		}
		return n.any
	}
	if n.keys == nil {
		n.keys = map[string]*keyNode{}
	}
	c := n.keys[key]
	if c == nil {
		c = &keyNode{}
		n.keys[key] = c
	}
	return c
}

// keyNodes are the places in unusedTree that a path of the config has
// reached, several when a "*" and a key both match; nil when none, which
// is the common case below the top few levels.
type keyNodes []*keyNode

func (s keyNodes) member(key string) keyNodes {
	var out keyNodes
	for _, n := range s {
		if c := n.keys[key]; c != nil {
			out = append(out, c)
		}
		if n.any != nil {
			out = append(out, n.any)
		}
	}
	return out
}

func (s keyNodes) item() keyNodes {
	var out keyNodes
	for _, n := range s {
		if n.items != nil {
			out = append(out, n.items)
		}
	}
	return out
}

func (s keyNodes) end() bool {
	for _, n := range s {
		if n.end {
			return true
		}
	}
	return false
}
