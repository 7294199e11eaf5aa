package config

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUnusedKeyWarnings: each kind of place an unused key can be — a
// section, a key of a typed struct, a key inside a value Talon reads only
// in part, a key kept in a rest field, keys below map entries and array
// items — gives one warning with its path; the keys Talon reads give none.
func TestUnusedKeyWarnings(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // paths warned as unused
	}{
		{"section", `{cron: {enabled: true, runLog: {keepLines: 10}}, talk: {}}`, []string{"cron.runLog", "talk"}},
		{"browser keys Talon does not read", `{browser: {enabled: true, executablePath: "/usr/bin/chromium", headless: false, profiles: {work: {cdpPort: 18801}}}}`,
			[]string{"browser.headless", "browser.profiles"}},
		{"null is absent", `{cron: null, agents: {defaults: {heartbeat: null}}}`, nil},
		{"key of a typed section", `{agents: {defaults: {compaction: {mode: "safeguard", thinkingLevel: "low"}, heartbeat: {every: "30m", agentId: "x"}, workspace: "/w"}}}`,
			[]string{"agents.defaults.compaction.thinkingLevel", "agents.defaults.heartbeat.agentId"}},
		{"hooks Talon does not build", `{hooks: {enabled: false, presets: ["gmail"], gmail: {account: "a"}, transformsDir: "t",
				internal: {enabled: true, load: {extraDirs: ["d"]}, entries: {"boot-md": {enabled: true, env: {A: "b"}}}}}}`,
			[]string{"hooks.presets", "hooks.gmail", "hooks.transformsDir", "hooks.internal.load"}},
		{"model fallbacks are read", `{agents: {defaults: {model: {primary: "openai/gpt-5.2", fallbacks: ["anthropic/claude-opus-4-6"]}}}}`, nil},
		{"auth profiles are read", `{auth: {profiles: {"openai:work": {provider: "openai", mode: "api_key"}}, order: {openai: ["openai:work"]}}}`, nil},
		{"model as a string has no fallbacks", `{agents: {defaults: {model: "openai/gpt-5.2"}}}`, nil},
		{"per agent, under an array item", `{agents: {list: [{id: "a", model: {primary: "x/y", fallbacks: []}}, {id: "b", skills: [], tools: {elevated: {enabled: true}, exec: {host: "sandbox", safeBins: ["jq"]}}}]}}`,
			[]string{"agents.list[1].skills", "agents.list[1].tools.elevated", "agents.list[1].tools.exec.safeBins"}},
		{"rest of a section", `{tools: {web: {search: {enabled: true, provider: "brave", openaiCodex: {mode: "live"}}, fetch: {enabled: false, maxChars: 5000}}}}`,
			[]string{"tools.web.search.openaiCodex", "tools.web.fetch.maxChars"}},
		{"channel keys Talon does not read", `{channels: {telegram: {enabled: true, botToken: "t", allowFrom: ["1"], streaming: "partial",
				groups: {"-100": {requireMention: true, tools: {deny: ["exec"]}, toolsBySender: {}, systemPrompt: "p",
					topics: {"3": {agentId: "ops", skills: []}}}},
				direct: {"5": {tools: {deny: ["exec"]}, skills: []}},
				accounts: {main: {botToken: "u", proxy: "p", groups: {"*": {tools: {allow: ["read"]}, skills: []}}}}},
			slack: {mode: "socket", dm: {enabled: true, groupChannels: []}, thread: {historyScope: "thread", inheritParent: false},
				channels: {C1: {requireMention: true, users: ["U1"], systemPrompt: "p"}}, slashCommand: {}},
			discord: {token: "d", intents: {messageContent: true, presence: false},
				guilds: {"1": {slug: "g", roles: ["2"], channels: {"3": {enabled: true, skills: []}}}}}}}`,
			[]string{"channels.telegram.streaming", "channels.telegram.groups.-100.systemPrompt",
				"channels.telegram.groups.-100.topics.3.skills", "channels.telegram.direct.5.skills",
				"channels.telegram.accounts.main.proxy", `channels.telegram.accounts.main.groups["*"].skills`,
				"channels.slack.dm.groupChannels", "channels.slack.channels.C1.systemPrompt", "channels.slack.slashCommand",
				"channels.discord.intents.presence", "channels.discord.guilds.1.slug", "channels.discord.guilds.1.channels.3.skills"}},
		{"a channel Talon has no adapter for", `{channels: {whatsapp: {dmPolicy: "pairing", allowFrom: ["+1"], authDir: "/a"}}}`,
			[]string{"channels.whatsapp", "channels.whatsapp.authDir"}},
		{"bindings, messages, access groups", `{bindings: [{agentId: "a", comment: "c", match: {channel: "slack", teamId: "T"}}],
				messages: {ackReaction: "x", groupChat: {mentionPatterns: ["bot"], historyLimit: 5, visibleReplies: "automatic"}},
				accessGroups: {ops: {type: "static", members: {slack: ["U1"]}}},
				session: {dmScope: "per-peer", groupScope: "main", identityLinks: {a: ["slack:U1"]}, store: "s"},
				agents: {list: [{id: "a", groupChat: {mentionPatterns: [], historyLimit: 3}}]}}`,
			[]string{"bindings[0].comment", "messages.groupChat.visibleReplies",
				"accessGroups.ops.type", "session.store", "agents.list[0].groupChat.historyLimit"}},
		{"below a map entry", `{models: {providers: {p: {auth: "api-key", models: [{id: "m", contextWindow: 128000, compat: {supportsStore: false}}]}}}}`,
			[]string{"models.providers.p.auth", "models.providers.p.models[0].compat"}},
		{"inside a value read by its keys", `{agents: {defaults: {models: {"openai/gpt-5.2": {alias: "gpt", params: {temperature: 0}}}}}}`,
			[]string{`agents.defaults.models["openai/gpt-5.2"].params`}},
		{"commands other than ownerAllowFrom", `{commands: {native: "auto", text: true, ownerAllowFrom: ["me"]}}`,
			[]string{"commands.native", "commands.text"}},
		{"keys Talon reads", `{
				gateway: {port: 18789, bind: "loopback", auth: {mode: "token", token: "t"}, http: {endpoints: {chatCompletions: {enabled: true}}}, controlUi: {allowedOrigins: []}},
				agents: {defaults: {model: {primary: "a/b"}, imageModel: {primary: "a/b", fallbacks: ["c/d"]}, models: {"a/b": {alias: "ab"}},
					sandbox: {mode: "non-main", docker: {network: "none"}}, subagents: {maxSpawnDepth: 2}},
					list: [{id: "main", identity: {name: "M"}, tools: {exec: {host: "sandbox", security: "allowlist", applyPatch: {enabled: true}}}}]},
				tools: {profile: "coding", exec: {ask: "on-miss"}, web: {search: {enabled: false}, fetch: {enabled: true}}, sessions: {visibility: "tree"}},
				channels: {telegram: {enabled: true, groups: {"-1": {tools: {deny: ["exec"]}}}}},
				plugins: {entries: {"api-tools": {enabled: true, config: {tools: []}}}},
				session: {scope: "per-sender", mainKey: "main"},
				env: {OPENAI_API_KEY: "k", vars: {A: "b"}},
				commands: {ownerAllowFrom: ["me"]},
				models: {providers: {p: {baseUrl: "http://h", api: "openai-completions", models: [{id: "m", contextWindow: 1000}]}}},
			}`, nil},
		{"unknown keys stay unknown", `{gateway: {bogus: 1}, agents: {defaults: {model: {primary: "a/b", bogus: 1}}}}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, warns, err := decodeJSON5(t, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range warns {
				if IsUnused(w) {
					got = append(got, w.Path)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unused paths (-want +got):\n%s\nall warnings: %v", diff, warns)
			}
		})
	}
}

// earlierKeys are keys of unusedKeys that OpenClaw 2026.9.6's schema no
// longer has: earlier releases defined them (Talon's spec targets
// 2026.3.13), and 9.6 still recognises them to migrate or retire them.
var earlierKeys = map[string]string{
	"audio":                               `9.6 migrates audio.transcription (dist/legacy-*.mjs); earlier schemas had audio: AudioSchema`,
	"media":                               `earlier src/config/zod-schema.ts: media: {preserveFilenames}`,
	"web":                                 `9.6 retires web.heartbeatSeconds, web.reconnect, web.whatsapp (dist/legacy-*.mjs)`,
	"canvasHost":                          `docs/platforms/mac/canvas.md: "the older canvasHost.root"`,
	"plugins.installs":                    `9.6: "Removed retired plugins.installs after preserving plugin install records"`,
	"gateway.controlUi.allowInsecureAuth": `9.6 retires gateway.controlUi.allowInsecureAuth (dist/legacy-*.mjs)`,
	"session.agentToAgent":                `9.6 retires session.agentToAgent.maxPingPongTurns (dist/legacy-*.mjs)`,
	"cron.retry":                          `≤ 2026.7 (spec automation.md §2 [legacy]): cron.retry {maxAttempts, backoffMs, retryOn}`,
	"cron.runLog":                         `≤ 2026.7 (spec automation.md §2 [legacy]): cron.runLog {maxBytes, keepLines}`,
	"tools.exec.timeoutSec":               `9.6 moves tools.exec.timeoutSec to timeoutSeconds (dist/legacy-*.mjs)`,
	"agents.list[].tools.exec.timeoutSec": `9.6 moves <agent>.tools.exec.timeoutSec to timeoutSeconds`,

	// 9.6 retires these memory.search tuning keys
	// (RETIRED_AGENT_TUNING_PATHS in dist/legacy-*.mjs).
	"agents.defaults.memorySearch.chunking":                   `9.6 retires memory.search tuning`,
	"agents.defaults.memorySearch.sync":                       `9.6 retires memory.search tuning`,
	"agents.defaults.memorySearch.query.hybrid.mmr":           `9.6 retires memory.search tuning`,
	"agents.defaults.memorySearch.query.hybrid.temporalDecay": `9.6 retires memory.search tuning`,
	"agents.list[].memorySearch.chunking":                     `9.6 retires memory.search tuning`,
	"agents.list[].memorySearch.sync":                         `9.6 retires memory.search tuning`,
	"agents.list[].memorySearch.query.hybrid.mmr":             `9.6 retires memory.search tuning`,
	"agents.list[].memorySearch.query.hybrid.temporalDecay":   `9.6 retires memory.search tuning`,
}

// movedKeys are where OpenClaw 2026.9.6 keeps keys Talon reads at their
// earlier place: 9.6 migrates agents.defaults.memorySearch to
// memory.search and an agent's memorySearch to its memory.search.
var movedKeys = strings.NewReplacer(
	"agents.list[].memorySearch", "agents.entries.*.memory.search",
	"agents.list[]", "agents.entries.*",
	"agents.defaults.memorySearch", "memory.search",
)

// TestUnusedKeysAreOpenClaws: every entry of unusedKeys names keys
// OpenClaw's schema defines (testdata/openclaw-keys.txt, generated from
// OpenClaw 2026.9.6 by testdata/openclaw-keys.mjs; its agents.entries.<id>
// is the agents.list[] Talon reads, and movedKeys says where other keys
// went), or is a key of an earlier release.
func TestUnusedKeysAreOpenClaws(t *testing.T) {
	schema := openClawKeys(t)
	for _, p := range unusedKeys {
		t.Run(p, func(t *testing.T) {
			in := slices.ContainsFunc(schema, func(s []string) bool {
				return keysMatch(segments(movedKeys.Replace(p)), s)
			})
			_, earlier := earlierKeys[p]
			switch {
			case !in && !earlier:
				t.Errorf("%s is not a key of OpenClaw's schema", p)
			case in && earlier:
				t.Errorf("%s is in OpenClaw 2026.9.6's schema: take it off earlierKeys", p)
			}
		})
	}
	for k := range earlierKeys {
		if !slices.Contains(unusedKeys, k) {
			t.Errorf("earlierKeys names %s, which unusedKeys does not", k)
		}
	}
}

func openClawKeys(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("testdata/openclaw-keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, segments(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 1000 {
		t.Fatalf("testdata/openclaw-keys.txt has %d keys; regenerate it", len(out))
	}
	return out
}

// segments splits a key pattern at its dots, with "[]" a segment of its own.
func segments(p string) []string {
	var out []string
	for _, s := range strings.Split(p, ".") {
		key, arr := strings.CutSuffix(s, "[]")
		out = append(out, key)
		if arr {
			out = append(out, "[]")
		}
	}
	return out
}

// keysMatch reports whether a pattern of unusedKeys names keys of a schema
// path: segment by segment, "*" on either side matches any key, and a
// schema's last "**" anything below.
func keysMatch(pattern, schema []string) bool {
	for i, p := range pattern {
		if i >= len(schema) {
			return false
		}
		s := schema[i]
		switch {
		case s == "**":
			return true
		case p == s, p == "*" && s != "[]", s == "*" && p != "[]":
		default:
			return false
		}
	}
	return len(pattern) == len(schema)
}

// TestUnusedKeysReachNoField: a config with one key of every entry of
// unusedKeys set gives exactly one warning per key, so no entry names a
// field Talon decodes (a typed field is never reported), and decodes to
// the same typed Config as the config without them: only Raw values,
// which Talon reads in part or not at all, hold them.
func TestUnusedKeysReachNoField(t *testing.T) {
	base := mustJSON5(t, `{
		agents: {defaults: {model: {primary: "a/b"}, imageModel: {primary: "a/b"}}, list: [{id: "a"}]},
		models: {providers: {x: {models: [{id: "m"}]}}},
		bindings: [{agentId: "a", match: {channel: "x"}}],
	}`)
	var leaves []instance
	for _, p := range unusedKeys {
		leaves = append(leaves, instantiate(t, base, p))
	}
	full := base.Clone()
	want := map[string]bool{}
	for _, l := range leaves {
		l.parent(full).Set(l.key, NewString("x"))
		want[l.path] = true
	}

	var baseCfg, fullCfg Config
	baseWarns, err := Decode(base, &baseCfg)
	if err != nil || len(baseWarns) > 0 {
		t.Fatalf("the config without the unused keys: err %v, warnings %v", err, baseWarns)
	}
	warns, err := Decode(full, &fullCfg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, w := range warns {
		if !IsUnused(w) || got[w.Path] {
			t.Errorf("warning %s: want one %q per key", w, MsgUnused)
		}
		got[w.Path] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unused keys reported (-want +got):\n%s", diff)
	}
	anyRaw := cmp.Comparer(func(a, b Raw) bool { return true })
	rest := cmp.FilterPath(func(p cmp.Path) bool {
		f, ok := p.Last().(cmp.StructField)
		return ok && f.Name() == "Rest"
	}, cmp.Ignore())
	if diff := cmp.Diff(baseCfg, fullCfg, anyRaw, rest); diff != "" {
		t.Errorf("unused keys changed typed fields (-without +with):\n%s", diff)
	}
}

// instance is one key a pattern names: its path and where it goes.
type instance struct {
	path string
	at   []string // segments to its parent, "*" and "[]" made concrete
	key  string
}

func (i instance) parent(tree *Value) *Value {
	v := tree
	for _, s := range i.at {
		if n, err := strconv.Atoi(s); err == nil {
			v = v.Items[n]
			continue
		}
		v = v.Get(s)
	}
	return v
}

// instantiate makes pattern p concrete ("*" is "x", "[]" the first item)
// and adds its parent objects to tree, so that tree holds everything but
// the key itself.
func instantiate(t *testing.T, tree *Value, p string) instance {
	t.Helper()
	segs := segments(p)
	var in instance
	path, v := "", tree
	for i, s := range segs {
		if s == "*" {
			s = "x"
		}
		if i == len(segs)-1 {
			in.key, in.path = s, joinKey(path, s)
			return in
		}
		if s == "[]" {
			if v.Kind != Array || len(v.Items) == 0 {
				t.Fatalf("%s: the base config needs an item at %s", p, path)
			}
			in.at = append(in.at, "0")
			path, v = joinIndex(path, 0), v.Items[0]
			continue
		}
		next := v.Get(s)
		if next == nil {
			next = NewObject()
			if segs[i+1] == "[]" {
				next = NewArray(NewObject())
			}
			v.Set(s, next)
		}
		in.at = append(in.at, s)
		path, v = joinKey(path, s), next
	}
	return in
}
