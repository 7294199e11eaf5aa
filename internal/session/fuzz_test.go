package session

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
)

// fuzzConfig builds one of a few session configs from fuzzed bits: the
// main key, session.scope global, an agent "main" configured, and a
// configured default agent other than main.
func fuzzConfig(mainKey string, bits uint8) *config.Config {
	cfg := &config.Config{Session: config.Session{MainKey: mainKey}}
	if bits&1 != 0 {
		cfg.Session.Scope = "global"
	}
	if bits&2 != 0 {
		cfg.Agents.List = append(cfg.Agents.List, config.Agent{ID: "main"})
	}
	if bits&4 != 0 {
		yes := true
		cfg.Agents.List = append(cfg.Agents.List, config.Agent{ID: "Ops", Default: &yes})
	}
	return cfg
}

// FuzzCanonical: a session key from a client is canonical or a
// *ValidationError with a message. A canonical key is a fixed point
// (Canonical(Canonical(k)) == Canonical(k)), passes CheckKey, is lower
// case, has the agent:<id>:<rest> shape unless it is a literal, and never
// lands in a reserved namespace (subagent:, cron:, acp:) that the key as
// sent was not in: the gateway checks IsReserved on the key as sent.
func FuzzCanonical(f *testing.F) {
	keys := []string{
		"main", "  MAIN ", "agent:ops:main", "Agent:OPS:Main", "work", "agent:ops:WORK", "agent:main:work",
		"agent:main:main", "GLOBAL", "unknown", "Scratch", "Discord:Group:ABC", "subagent:X", "cron:job-1",
		"agent:Sales Team!:x", "agent:ops:a::b", "agent:ops:openai-user:Bob", "agent:ops", "agent:ops:",
		"agent::main", "AGENT:", "ab\ncd", "a\u0085b", "ab\xffcd", "agent: :x", "agent:ops:ſubagent:x",
		"\u212aey", "İstanbul", strings.Repeat("k", MaxKeyLen-5),
	}
	for i, k := range keys {
		f.Add(k, []string{"", " Work ", "MAIN", "agent:x:y"}[i%4], []string{"main", "ops", "", " Sales Team "}[i%4], uint8(i))
	}
	f.Fuzz(func(t *testing.T, key, mainKey, defaultAgent string, bits uint8) {
		cfg := fuzzConfig(mainKey, bits)
		got, err := Canonical(cfg, defaultAgent, key)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Message == "" {
				t.Fatalf("Canonical(%q) error %T %q, want a *ValidationError with a message", key, err, err)
			}
			return
		}
		if err := CheckKey(got); err != nil {
			t.Fatalf("Canonical(%q) = %q, which CheckKey refuses: %v", key, got, err)
		}
		if got != strings.ToLower(got) {
			t.Fatalf("Canonical(%q) = %q is not lower case", key, got)
		}
		if got != GlobalKey && got != UnknownKey && !strings.HasPrefix(got, "agent:") {
			t.Fatalf("Canonical(%q) = %q has neither a literal nor the agent: shape", key, got)
		}
		if id, _, _ := strings.Cut(strings.TrimPrefix(got, "agent:"), ":"); config.NormalizeAgentID(id) != id {
			// The spec's agent id rule (§4.2) cuts to 64 characters after
			// stripping dashes, so "_" + 62 characters + " x" becomes an id
			// ending in "-" that a second pass strips. Talon keeps
			// OpenClaw's rule; such a key is not a fixed point there either.
			return
		}
		again, err := Canonical(cfg, defaultAgent, got)
		if err != nil || again != got {
			t.Fatalf("Canonical(%q) = %q, but Canonical(%q) = %q, %v", key, got, got, again, err)
		}
		if IsReserved(got) && !IsReserved(key) {
			t.Fatalf("Canonical(%q) = %q moved an open key into a reserved namespace", key, got)
		}
	})
}

// FuzzApplyPatch: any sessions.patch body against any stored entry gives a
// *ValidationError with a message, or an entry whose enumerated fields hold
// allowed values and whose label fits. The entry passed in is never
// modified, and applying the same patch to the result changes nothing.
func FuzzApplyPatch(f *testing.F) {
	entries := []string{
		`{}`,
		`{"sessionId":"s1","updatedAt":5,"label":"Mine","execHost":"node","reasoningLevel":"stream"}`,
		`{"sessionId":"s1","spawnedBy":"agent:ops:main","spawnDepth":1,"origin":{"provider":"webchat"},"x":[1]}`,
	}
	patches := []string{
		`{}`, `{"key":"agent:ops:main","model":"x/y","thinkingLevel":"low"}`, `{"label":"  My Chat  "}`,
		`{"execHost":" Gateway ","execSecurity":"ALLOWLIST","execAsk":"On-Miss","execNode":" Mac-Mini "}`,
		`{"verboseLevel":"FULL","reasoningLevel":"on","responseUsage":"on","elevatedLevel":"off","sendPolicy":"Allow","groupActivation":"mention"}`,
		`{"reasoningLevel":"off","responseUsage":null,"label":null}`, `{"spawnedBy":" agent:ops:main ","spawnDepth":1}`,
		`{"spawnDepth":2.0}`, `{"spawnDepth":1e300}`, `{"spawnDepth":"1"}`, `{"colour":"red"}`, `[1]`, `null`, `{`,
		`{"label":"` + strings.Repeat("😀", 257) + `"}`, `{"execAsk":"x","label":""}`,
	}
	keys := []string{"agent:ops:main", "agent:ops:subagent:abc", "subagent:x", ""}
	for i, p := range patches {
		f.Add(keys[i%len(keys)], []byte(entries[i%len(entries)]), []byte(p))
	}
	f.Fuzz(func(t *testing.T, key string, entryJSON, patch []byte) {
		var in Entry
		if json.Unmarshal(entryJSON, &in) != nil {
			in = Entry{}
		}
		before := in.Clone()
		got, err := ApplyPatch(key, in, patch)
		if d := cmp.Diff(before, in); d != "" {
			t.Fatalf("ApplyPatch modified its input (-before +after):\n%s", d)
		}
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Message == "" {
				t.Fatalf("error %T %q, want a *ValidationError with a message", err, err)
			}
			return
		}
		for name, f := range enumFields {
			if v := *f.field(&got); v != *f.field(&in) {
				if _, ok := f.norm[v]; !ok && v != "" {
					t.Fatalf("%s = %q, not an allowed value", name, v)
				}
			}
		}
		if got.Label != in.Label && (got.Label != strings.TrimSpace(got.Label) || len(utf16.Encode([]rune(got.Label))) > MaxLabelLen) {
			t.Fatalf("label %q is untrimmed or too long", got.Label)
		}
		if got.SessionID != in.SessionID || got.UpdatedAt != in.UpdatedAt || got.ThinkingLevel != in.ThinkingLevel {
			t.Fatal("ApplyPatch changed a field a patch does not set")
		}
		again, err := ApplyPatch(key, got, patch)
		if err != nil {
			t.Fatalf("the patch applied once fails the second time: %v", err)
		}
		if d := cmp.Diff(got, again); d != "" {
			t.Fatalf("applying the patch twice differs (-once +twice):\n%s", d)
		}
	})
}

// FuzzEntryJSON: a stored session entry, whatever members it holds, is
// written back in a form that reads back to itself: after one round trip
// the JSON is a fixed point, and the modelled fields survive it.
func FuzzEntryJSON(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","updatedAt":1700000000000}`,
		`{"sessionId":"s","updatedAt":1,"label":"L","spawnedBy":"agent:a:main","spawnDepth":0,"execHost":"node","inputTokens":3,"systemSent":true,"origin":{"provider":"webchat"}}`,
		`{"zeta":[1,2],"sessionId":"s","updatedAt":2,"fastMode":true,"skillsSnapshot":{"a":{"b":null}}}`,
		`{"sessionId":"s","updatedAt":2,"LABEL":"x"}`,
		`{"origin": { "a" : 1 } , "x" : null}`,
		// encoding/json folds long s to s and the Kelvin sign to k
		"{\"\u017fessionId\":\"Y\",\"sessionId\":\"X\",\"\u212aey\":1}",
		`{"ſessionId":"Y","sessionId":"X","Key":1}`, // long s and Kelvin sign fold to s and k`,
		`null`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e1 Entry
		if json.Unmarshal(data, &e1) != nil {
			return
		}
		m1, err := json.Marshal(e1)
		if err != nil {
			t.Fatalf("Marshal of a decoded entry: %v", err)
		}
		var e2 Entry
		if err := json.Unmarshal(m1, &e2); err != nil {
			t.Fatalf("the written entry does not read back: %v\n%s", err, m1)
		}
		m2, err := json.Marshal(e2)
		if err != nil {
			t.Fatal(err)
		}
		if string(m1) != string(m2) {
			t.Fatalf("entry JSON is not a fixed point:\nonce:  %s\ntwice: %s", m1, m2)
		}
		e1.Origin, e2.Origin, e1.Extra, e2.Extra = nil, nil, nil, nil // compared through m1 == m2
		if d := cmp.Diff(e1, e2); d != "" {
			t.Fatalf("modelled fields changed in a round trip (-before +after):\n%s", d)
		}
	})
}
