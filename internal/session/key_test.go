package session

import (
	"errors"
	"strings"
	"testing"

	"talon/internal/config"
)

func boolp(b bool) *bool { return &b }

// §5.1: every canonicalisation rule and alias.
func TestCanonical(t *testing.T) {
	plain := &config.Config{}
	work := &config.Config{Session: config.Session{MainKey: " Work "}}
	global := &config.Config{Session: config.Session{Scope: "global"}}
	globalWork := &config.Config{Session: config.Session{Scope: "global", MainKey: "work"}}
	opsDefault := &config.Config{Agents: config.Agents{List: []config.Agent{
		{ID: "research"}, {ID: "Ops", Default: boolp(true)},
	}}}
	withMain := &config.Config{Agents: config.Agents{List: []config.Agent{
		{ID: "ops", Default: boolp(true)}, {ID: "main"},
	}}}

	cases := []struct {
		name  string
		cfg   *config.Config
		agent string // default agent passed in
		key   string
		want  string
	}{
		// main aliases
		{"main", plain, "main", "main", "agent:main:main"},
		{"main trimmed and folded", plain, "main", "  MAIN ", "agent:main:main"},
		{"main for default agent", plain, "ops", "main", "agent:ops:main"},
		{"agent main", plain, "main", "agent:ops:main", "agent:ops:main"},
		{"agent main folded", plain, "main", "Agent:OPS:Main", "agent:ops:main"},
		{"custom mainKey", work, "main", "work", "agent:main:work"},
		{"main with custom mainKey", work, "main", "main", "agent:main:work"},
		{"agent:id:main with custom mainKey", work, "ops", "agent:ops:main", "agent:ops:work"},
		{"agent:id:mainKey", work, "ops", "agent:ops:WORK", "agent:ops:work"},
		{"legacy agent:main:mainKey", work, "ops", "agent:main:work", "agent:ops:work"},
		{"legacy agent:main:main", work, "ops", "agent:main:main", "agent:ops:work"},
		{"legacy with plain mainKey", plain, "ops", "agent:main:main", "agent:ops:main"},
		{"legacy, agent main configured", withMain, "ops", "agent:main:main", "agent:main:main"},
		{"legacy, default agent is main", plain, "main", "agent:main:main", "agent:main:main"},
		{"empty default agent uses config", opsDefault, "", "main", "agent:ops:main"},
		{"empty default agent, empty config", plain, "", "main", "agent:main:main"},
		{"default agent normalised", plain, " Sales Team ", "main", "agent:sales-team:main"},

		// global scope
		{"global: main", global, "main", "main", "global"},
		{"global: agent main", global, "main", "agent:ops:main", "global"},
		{"global: mainKey", globalWork, "main", "work", "global"},
		{"global: agent:id:mainKey", globalWork, "ops", "agent:ops:work", "global"},
		{"global: legacy", globalWork, "ops", "agent:main:work", "global"},
		{"global: other keys keep their shape", global, "main", "agent:ops:discord:group:42", "agent:ops:discord:group:42"},
		{"global: bare other key", global, "main", "Scratch", "agent:main:scratch"},
		{"global literal", plain, "main", "GLOBAL", "global"},
		{"unknown literal", plain, "main", "unknown", "unknown"},

		// bare keys
		{"bare key", plain, "ops", "Scratch", "agent:ops:scratch"},
		{"bare key with colons", plain, "ops", "Discord:Group:ABC", "agent:ops:discord:group:abc"},
		{"bare subagent key", plain, "ops", "subagent:X", "agent:ops:subagent:x"},
		{"bare cron key", plain, "ops", "cron:job-1", "agent:ops:cron:job-1"},

		// agent:<id>:<rest>
		{"agent key lower-cased", plain, "main", "agent:Ops:Telegram:Direct:Alice", "agent:ops:telegram:direct:alice"},
		{"agent id normalised", plain, "main", "agent:Sales Team!:x", "agent:sales-team:x"},
		{"agent rest keeps empty segments", plain, "main", "agent:ops:a::b", "agent:ops:a::b"},
		{"openai user", plain, "main", "agent:ops:openai-user:Bob", "agent:ops:openai-user:bob"},
		{"thread", plain, "main", "agent:ops:slack:channel:c1:thread:T9", "agent:ops:slack:channel:c1:thread:t9"},
		{"mainKey only as whole rest", work, "main", "agent:ops:work:thread:1", "agent:ops:work:thread:1"},
		{"nil config", nil, "main", "main", "agent:main:main"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Canonical(c.cfg, c.agent, c.key)
			if err != nil {
				t.Fatalf("Canonical(%q) error: %v", c.key, err)
			}
			if got != c.want {
				t.Errorf("Canonical(%q) = %q, want %q", c.key, got, c.want)
			}
			// Canonical keys are fixed points.
			again, err := Canonical(c.cfg, c.agent, got)
			if err != nil || again != got {
				t.Errorf("Canonical(%q) = %q, %v; want it unchanged", got, again, err)
			}
		})
	}
}

func TestCanonicalErrors(t *testing.T) {
	cases := []struct {
		name, key, want string
	}{
		{"empty", "", "invalid session key: empty"},
		{"blank", " \t\n ", "invalid session key: empty"},
		{"too long", strings.Repeat("k", MaxKeyLen+1), "invalid session key: longer than 512 bytes"},
		{"too long once prefixed", strings.Repeat("k", MaxKeyLen-5), "invalid session key: longer than 512 bytes"},
		{"control character", "agent:ops:a\x00b", "invalid session key: contains a control character"},
		{"newline inside", "ab\ncd", "invalid session key: contains a control character"},
		{"DEL", "ab\x7f", "invalid session key: contains a control character"},
		{"C1 control", "a\u0085b", "invalid session key: contains a control character"},
		{"invalid UTF-8", "ab\xffcd", "invalid session key: not valid UTF-8"},
		{"agent without rest", "agent:ops", `invalid session key "agent:ops": want agent:<agentId>:<rest>`},
		{"agent with empty rest", "agent:ops:", `invalid session key "agent:ops:": want agent:<agentId>:<rest>`},
		{"agent with empty id", "agent::main", `invalid session key "agent::main": want agent:<agentId>:<rest>`},
		{"bare agent prefix", "AGENT:", `invalid session key "AGENT:": want agent:<agentId>:<rest>`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Canonical(&config.Config{}, "main", c.key)
			if err == nil {
				t.Fatalf("Canonical(%q) = %q, want error %q", c.key, got, c.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("error %T is not a *ValidationError", err)
			}
			if err.Error() != c.want {
				t.Errorf("error = %q, want %q", err, c.want)
			}
		})
	}
	// Exactly MaxKeyLen bytes is fine.
	k := "agent:ops:" + strings.Repeat("k", MaxKeyLen-len("agent:ops:"))
	if got, err := Canonical(nil, "main", k); err != nil || got != k {
		t.Errorf("Canonical(512-byte key) = %q, %v", got, err)
	}
}

func TestIsReserved(t *testing.T) {
	cases := []struct {
		key  string
		want bool
	}{
		{"subagent:abc", true},
		{"cron:job", true},
		{"acp:x", true},
		{"agent:ops:subagent:abc", true},
		{"Agent:Ops:CRON:job", true},
		{" agent:ops:acp:session ", true},
		{"agent:ops:main", false},
		{"agent:ops:openai-user:cron:x", false},
		{"main", false},
		{"hook:uuid", false},
		{"subagentx", false},
		{"agent:subagent:x", false}, // agent id "subagent", rest "x"
		{"", false},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			if got := IsReserved(c.key); got != c.want {
				t.Errorf("IsReserved(%q) = %v, want %v", c.key, got, c.want)
			}
		})
	}
}

func TestAgentOf(t *testing.T) {
	cases := []struct{ key, def, want string }{
		{"agent:ops:main", "main", "ops"},
		{"AGENT:Sales Team:x", "main", "sales-team"},
		{"global", "ops", "ops"},
		{"cron:job", "Ops", "ops"},
		{"agent:ops", "main", "main"}, // unparsable
		{"x", "", "main"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			if got := AgentOf(c.key, c.def); got != c.want {
				t.Errorf("AgentOf(%q, %q) = %q, want %q", c.key, c.def, got, c.want)
			}
		})
	}
}

func TestBuilders(t *testing.T) {
	cases := []struct{ name, got, want string }{
		{"fresh", OpenAIFresh("Ops", "0F8FAD5B-D9CB-469F-A165-70867728950E"), "agent:ops:openai:0f8fad5b-d9cb-469f-a165-70867728950e"},
		{"fresh default agent", OpenAIFresh("", "u"), "agent:main:openai:u"},
		{"subagent", Subagent("Research", "abc"), "agent:research:subagent:abc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %q, want %q", c.got, c.want)
			}
		})
	}
	if !IsReserved(Subagent("ops", "x")) || !IsSubagent(Subagent("ops", "x")) {
		t.Error("Subagent key is not reserved / not a subagent key")
	}
	if IsReserved(OpenAIFresh("ops", "x")) {
		t.Error("OpenAIFresh key is reserved")
	}

	users := []struct{ name, agent, user, want, err string }{
		{"user", "ops", "Alice@Example.com", "agent:ops:openai-user:alice@example.com", ""},
		{"trimmed", "Ops", "  bob ", "agent:ops:openai-user:bob", ""},
		{"control", "ops", "a\tb", "agent:ops:openai-user:a\tb", "invalid session key: contains a control character"},
		{"too long", "ops", strings.Repeat("u", 500), "agent:ops:openai-user:" + strings.Repeat("u", 500), "invalid session key: longer than 512 bytes"},
	}
	for _, c := range users {
		t.Run("OpenAIUser/"+c.name, func(t *testing.T) {
			got := OpenAIUser(c.agent, c.user)
			if got != c.want {
				t.Fatalf("OpenAIUser = %q, want %q", got, c.want)
			}
			err := CheckKey(got)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("CheckKey(%q) = %v, want %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckKey(%q) = %v", got, err)
			}
			if canon, err := Canonical(nil, "main", got); err != nil || canon != got {
				t.Errorf("OpenAIUser key %q is not canonical (%q, %v)", got, canon, err)
			}
		})
	}
}
