package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// groupKey runs the pipeline over [read] and returns the config key of the
// group step that removed read ("" when step 7 did not apply). Every group
// entry in the configs below denies read, so the key tells which entry won.
func groupKey(t *testing.T, cfg string, ctx Context) string {
	t.Helper()
	r := Evaluate(mustConfig(t, cfg), ctx, coreTools("read"))
	return stageKey(&r, "read", "group tools.allow")
}

// §4.5 step 1–3: {channel, groupId} from the session key (thread/topic
// suffix stripped from the last marker, empty parts dropped, leading
// agent:<id> and subagent dropped, kind group|channel, id = rest joined by
// ":"), the same for spawnedBy; explicit group id ?? session's ?? spawnedBy's;
// channel = message provider ?? session's ?? spawnedBy's (normalised).
func TestRulesGroupFromSessionKey(t *testing.T) {
	cfg := `{"channels":{
		"whatsapp":{"groups":{
			"g1":{"tools":{"deny":["read"]}},
			"G1":{"tools":{"deny":["read"]}},
			"a:b":{"tools":{"deny":["read"]}},
			"c1:thread:a":{"tools":{"deny":["read"]}}}},
		"googlechat":{"groups":{"c9":{"tools":{"deny":["read"]}}}},
		"telegram":{"groups":{"123":{"tools":{"deny":["read"]}}}}}}`
	const wa = "channels.whatsapp.groups"
	k := func(key string) Context { return Context{SessionKey: key, SenderIsOwner: true} }
	cases := []struct {
		name string
		ctx  Context
		want string
	}{
		{"agent group key", k("agent:main:whatsapp:group:g1"), wa + ".g1.tools.deny"},
		{"key without agent prefix", k("whatsapp:group:g1"), wa + ".g1.tools.deny"},
		{"thread suffix stripped", k("agent:main:whatsapp:group:g1:thread:42"), wa + ".g1.tools.deny"},
		{"topic suffix stripped", k("agent:main:whatsapp:group:g1:topic:7"), wa + ".g1.tools.deny"},
		{"only from the last thread marker", k("agent:main:whatsapp:group:c1:thread:a:thread:b"), wa + `["c1:thread:a"].tools.deny`},
		{"group id keeps its colons", k("agent:main:whatsapp:group:a:b"), wa + `["a:b"].tools.deny`},
		{"empty parts dropped", k("agent:main:whatsapp::group::g1"), wa + ".g1.tools.deny"},
		{"leading subagent dropped", k("subagent:whatsapp:group:g1"), wa + ".g1.tools.deny"},
		{"subagent after agent prefix dropped", k("agent:main:subagent:whatsapp:group:g1"), wa + ".g1.tools.deny"},
		{"kind channel", k("agent:main:googlechat:channel:c9"), "channels.googlechat.groups.c9.tools.deny"},
		{"channel name normalised", k("agent:main:WhatsApp:group:g1"), wa + ".g1.tools.deny"},
		{"group id case kept from the key", k("agent:main:whatsapp:group:G1"), wa + ".G1.tools.deny"},
		{"kind dm is not a group", k("agent:main:whatsapp:dm:g1"), ""},
		{"kind direct is not a group", k("agent:main:whatsapp:direct:g1"), ""},
		{"too few parts", k("agent:main:whatsapp:group"), ""},
		{"main session", k("agent:main:main"), ""},
		{"unknown group, no default entry", k("agent:main:whatsapp:group:zz"), ""},
		{"unconfigured channel", k("agent:main:signal:group:g1"), ""},
		{"spawnedBy inherited by a subagent",
			Context{SessionKey: "agent:main:subagent:abc", SpawnedBy: "agent:main:whatsapp:group:g1", SenderIsOwner: true}, wa + ".g1.tools.deny"},
		{"session beats spawnedBy",
			Context{SessionKey: "agent:main:whatsapp:group:a:b", SpawnedBy: "agent:main:whatsapp:group:g1", SenderIsOwner: true}, wa + `["a:b"].tools.deny`},
		{"explicit group id beats the session's",
			Context{SessionKey: "agent:main:whatsapp:group:a:b", GroupID: "g1", SenderIsOwner: true}, wa + ".g1.tools.deny"},
		{"explicit group id is case-sensitive",
			Context{SessionKey: "agent:main:whatsapp:group:a:b", GroupID: "G1", SenderIsOwner: true}, wa + ".G1.tools.deny"},
		{"explicit group id with channel from spawnedBy",
			Context{SessionKey: "agent:main:subagent:x", SpawnedBy: "agent:main:whatsapp:group:a:b", GroupID: "g1", SenderIsOwner: true}, wa + ".g1.tools.deny"},
		{"explicit group id without any channel",
			Context{SessionKey: "agent:main:main", GroupID: "g1", SenderIsOwner: true}, ""},
		{"explicit group id and message provider",
			Context{SessionKey: "agent:main:main", GroupID: "g1", MessageProvider: " WhatsApp ", SenderIsOwner: true}, wa + ".g1.tools.deny"},
		{"message provider beats the session's channel",
			Context{SessionKey: "agent:main:whatsapp:group:123", MessageProvider: "telegram", SenderIsOwner: true}, "channels.telegram.groups.123.tools.deny"},
		{"telegram strips a topic suffix from an explicit id",
			Context{SessionKey: "agent:main:main", GroupID: "123:topic:9", MessageProvider: "telegram", SenderIsOwner: true}, "channels.telegram.groups.123.tools.deny"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := groupKey(t, cfg, c.ctx); got != c.want {
				t.Errorf("group step key = %q, want %q", got, c.want)
			}
		})
	}
}

// §4.5 step 4: the groups map is channels.<ch>.accounts.<account>.groups
// if present, else channels.<ch>.groups (no fall-through between them).
func TestRulesGroupAccounts(t *testing.T) {
	cfg := `{"channels":{"whatsapp":{
		"groups":{"g1":{"tools":{"deny":["read"]}}},
		"accounts":{"biz":{"groups":{"g1":{"tools":{"deny":["read"]}}}},"plain":{}}}}}`
	cfgNoMatch := `{"channels":{"whatsapp":{
		"groups":{"g1":{"tools":{"deny":["read"]}}},
		"accounts":{"biz":{"groups":{"other":{"tools":{"deny":["read"]}}}}}}}}`
	key := "agent:main:whatsapp:group:g1"
	cases := []struct {
		name, cfg, account, want string
	}{
		{"account groups win", cfg, "biz", "channels.whatsapp.accounts.biz.groups.g1.tools.deny"},
		{"no account", cfg, "", "channels.whatsapp.groups.g1.tools.deny"},
		{"account without groups", cfg, "plain", "channels.whatsapp.groups.g1.tools.deny"},
		{"unknown account", cfg, "nope", "channels.whatsapp.groups.g1.tools.deny"},
		{"account groups without the id do not fall back", cfgNoMatch, "biz", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := Context{SessionKey: key, AccountID: c.account, SenderIsOwner: true}
			if got := groupKey(t, c.cfg, ctx); got != c.want {
				t.Errorf("group step key = %q, want %q", got, c.want)
			}
		})
	}
}

// §4.5 step 5: toolsBySender keys id:, e164:, username:, name: (prefix
// case-insensitive; username: drops a leading @), "*" wildcard; un-prefixed
// keys are ids (leading @ removed); values compared lower-cased; lookup
// order id → E.164 → username → name → wildcard.
func TestRulesToolsBySender(t *testing.T) {
	cfg := `{"channels":{"whatsapp":{"groups":{"g1":{"toolsBySender":{
		"ID:U1":{"deny":["read"]},
		"e164:+15550001":{"deny":["read"]},
		"Username:@Bob":{"deny":["read"]},
		"NAME:Alice Smith":{"deny":["read"]},
		"carol":{"deny":["read"]},
		"@dave":{"deny":["read"]},
		"*":{"deny":["read"]}}}}}}}`
	const base = "channels.whatsapp.groups.g1.toolsBySender"
	cases := []struct {
		name   string
		sender Sender
		want   string
	}{
		{"id prefix and value case-insensitive", Sender{ID: "u1"}, base + `["ID:U1"].deny`},
		{"id upper-case sender", Sender{ID: "U1"}, base + `["ID:U1"].deny`},
		{"e164", Sender{E164: "+15550001"}, base + `["e164:+15550001"].deny`},
		{"username drops @ from the key", Sender{Username: "bob"}, base + `["Username:@Bob"].deny`},
		{"display name", Sender{Name: "alice smith"}, base + `["NAME:Alice Smith"].deny`},
		{"un-prefixed key is an id", Sender{ID: "carol"}, base + ".carol.deny"},
		{"un-prefixed key drops @", Sender{ID: "dave"}, base + `["@dave"].deny`},
		{"un-prefixed key is not a username", Sender{Username: "carol"}, base + `["*"].deny`},
		{"username key is not an id", Sender{ID: "bob"}, base + `["*"].deny`},
		{"no sender: wildcard", Sender{}, base + `["*"].deny`},
		{"id first", Sender{ID: "u1", E164: "+15550001", Username: "bob", Name: "alice smith"}, base + `["ID:U1"].deny`},
		{"then e164", Sender{ID: "zz", E164: "+15550001", Username: "bob", Name: "alice smith"}, base + `["e164:+15550001"].deny`},
		{"then username", Sender{ID: "zz", E164: "+1", Username: "bob", Name: "alice smith"}, base + `["Username:@Bob"].deny`},
		{"then name", Sender{ID: "zz", Username: "nobody", Name: "Alice Smith"}, base + `["NAME:Alice Smith"].deny`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := Context{SessionKey: "agent:main:whatsapp:group:g1", Sender: c.sender, SenderIsOwner: true}
			if got := groupKey(t, cfg, ctx); got != c.want {
				t.Errorf("group step key = %q, want %q", got, c.want)
			}
		})
	}
}

// §4.5 step 4: entry toolsBySender match → entry tools → "*" toolsBySender
// match → "*" tools; the exact group id key first.
func TestRulesGroupPolicyOrder(t *testing.T) {
	cfg := `{"channels":{"whatsapp":{"groups":{
		"g1":{"toolsBySender":{"id:alice":{"deny":["read"]}},"tools":{"deny":["read"]}},
		"g2":{"toolsBySender":{"id:alice":{"deny":["read"]}}},
		"g3":{"tools":{"deny":["read"]}},
		"g4":{"toolsBySender":{"*":{"deny":["read"]}},"tools":{"deny":["read"]}},
		"*":{"toolsBySender":{"id:bob":{"deny":["read"]}},"tools":{"deny":["read"]}}}}}}`
	const wa = "channels.whatsapp.groups"
	cases := []struct {
		name, group, sender, want string
	}{
		{"entry sender match", "g1", "alice", wa + `.g1.toolsBySender["id:alice"].deny`},
		{"entry tools beat default sender match", "g1", "bob", wa + ".g1.tools.deny"},
		{"entry without tools: default sender match", "g2", "bob", wa + `["*"].toolsBySender["id:bob"].deny`},
		{"entry without tools: default tools", "g2", "carol", wa + `["*"].tools.deny`},
		{"entry tools only", "g3", "bob", wa + ".g3.tools.deny"},
		{"entry wildcard sender beats entry tools", "g4", "carol", wa + `.g4.toolsBySender["*"].deny`},
		{"missing entry: default sender match", "g9", "bob", wa + `["*"].toolsBySender["id:bob"].deny`},
		{"missing entry: default tools", "g9", "carol", wa + `["*"].tools.deny`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := Context{SessionKey: "agent:main:whatsapp:group:" + c.group, Sender: Sender{ID: c.sender}, SenderIsOwner: true}
			if got := groupKey(t, cfg, ctx); got != c.want {
				t.Errorf("group step key = %q, want %q", got, c.want)
			}
		})
	}
}

// §4.5 step 6: the chosen group policy goes through §4.3.
func TestRulesGroupUnion(t *testing.T) {
	ctx := Context{SessionKey: "agent:main:whatsapp:group:g1", SenderIsOwner: true}
	in := coreTools("read", "exec", "process")
	runEvalCases(t, []evalCase{
		{"group alsoAllow alone", `{"channels":{"whatsapp":{"groups":{"g1":{"tools":{"alsoAllow":["exec"]}}}}}}`, ctx, in, []string{"read", "exec", "process"}},
		{"group empty allow plus alsoAllow", `{"channels":{"whatsapp":{"groups":{"g1":{"tools":{"allow":[],"alsoAllow":["exec"]}}}}}}`, ctx, in, []string{"read", "exec", "process"}},
		{"group allow plus alsoAllow", `{"channels":{"whatsapp":{"groups":{"g1":{"tools":{"allow":["read"],"alsoAllow":["exec"]}}}}}}`, ctx, in, []string{"read", "exec"}},
		{"sender allow plus alsoAllow", `{"channels":{"whatsapp":{"groups":{"g1":{"toolsBySender":{"*":{"allow":["read"],"alsoAllow":["process"]}}}}}}}`, ctx, in, []string{"read", "process"}},
	})
}

// §4.6 Plugin groups, built from the tools entering the pipeline:
// group:plugins → every plugin tool (the literal stays when there are none);
// an entry equal to a (lower-cased) plugin id → that plugin's tools.
func TestRulesPluginGroups(t *testing.T) {
	in := []Tool{
		{Name: "read"}, {Name: "exec"},
		{Name: "lobster_run", Plugin: "lobster"}, {Name: "workflow", Plugin: "lobster"},
		{Name: "memory_search", Plugin: "memory-core"}, {Name: "memory_get", Plugin: "memory-core"},
		{Name: "cam_snap", Plugin: "Camera"},
	}
	sandboxed := `"agents":{"defaults":{"sandbox":{"mode":"all"}}}`
	runEvalCases(t, []evalCase{
		{"deny group:plugins", `{"tools":{"deny":["group:plugins"]}}`, ownerMain, in, []string{"read", "exec"}},
		{"deny plugin id, lower-cased", `{"tools":{"deny":["CAMERA"]}}`, ownerMain, in,
			[]string{"read", "exec", "lobster_run", "workflow", "memory_search", "memory_get"}},
		{"deny plugin id", `{"tools":{"deny":["lobster"]}}`, ownerMain, in,
			[]string{"read", "exec", "memory_search", "memory_get", "cam_snap"}},
		{"allow core plus group:plugins", `{"tools":{"allow":["read","group:plugins"]}}`, ownerMain, in,
			[]string{"read", "lobster_run", "workflow", "memory_search", "memory_get", "cam_snap"}},
		{"allow core plus plugin id", `{"tools":{"allow":["read","memory-core"]}}`, ownerMain, in,
			[]string{"read", "memory_search", "memory_get"}},
		{"group:plugins with no plugin tools matches nothing", `{"tools":{"allow":["read","group:plugins"]}}`, ownerMain,
			coreTools("read", "exec"), []string{"read"}},
		{"deny group:plugins with no plugin tools removes nothing", `{"tools":{"deny":["group:plugins"]}}`, ownerMain,
			coreTools("read", "exec"), []string{"read", "exec"}},
		{"sandbox allow by plugin id", `{"tools":{"sandbox":{"tools":{"allow":["read","lobster"]}}},` + sandboxed + `}`, ownerMain, in,
			[]string{"read", "lobster_run", "workflow"}},
		{"group step allow by plugin id", `{"channels":{"whatsapp":{"groups":{"g1":{"tools":{"allow":["exec","camera"]}}}}}}`,
			Context{SessionKey: "agent:main:whatsapp:group:g1", SenderIsOwner: true}, in, []string{"exec", "cam_snap"}},
	})
	t.Run("plugin id entry reported as the deny entry", func(t *testing.T) {
		r := Evaluate(mustConfig(t, `{"tools":{"deny":["Lobster"]}}`), ownerMain, in)
		rm, _ := removalOf(&r, "workflow")
		want := Removal{Tool: "workflow", Stage: "tools.allow", Key: "tools.deny", Rule: RuleDenied, Entry: "lobster"}
		if diff := cmp.Diff(want, rm); diff != "" {
			t.Errorf("removal (-want +got):\n%s", diff)
		}
	})
}

// §4.6 The plugin groups are built from the tools entering the pipeline,
// after the pre-filters: a plugin whose only tool the owner-only filter
// removed is no longer a plugin id, so naming it is an unknown entry (§4.7).
func TestRulesPluginGroupsAfterPrefilters(t *testing.T) {
	in := []Tool{{Name: "read"}, {Name: "exec"}, {Name: "secret", Plugin: "vault", OwnerOnly: true}}
	nonOwner := Context{SessionKey: "agent:main:main"}
	r := Evaluate(mustConfig(t, `{"tools":{"allow":["read","vault"]}}`), nonOwner, in)
	if diff := cmp.Diff([]string{"read"}, r.Names()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	want := []string{unknownWarn("tools.allow", "vault", false, wPlugin)}
	if diff := cmp.Diff(want, r.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
