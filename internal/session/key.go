package session

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"talon/internal/config"
	"talon/internal/policy"
)

// MaxKeyLen is the longest session key accepted, in bytes, before and after
// canonicalisation.
const MaxKeyLen = 512

// Literal store keys that belong to no agent.
const (
	GlobalKey  = "global"
	UnknownKey = "unknown"
)

// ValidationError is a request the protocol rejects as INVALID_REQUEST. Its
// message is the one sent to the client, unchanged.
type ValidationError struct{ Message string }

func (e *ValidationError) Error() string { return e.Message }

func invalid(format string, args ...any) error {
	return &ValidationError{Message: fmt.Sprintf(format, args...)}
}

// Canonical returns the store key for a session key sent by a client
// (spec §5.1, §7 item 10). defaultAgent is the agent that bare keys belong
// to; empty means the config's default agent.
//
//   - "global" and "unknown" stay as they are (lower-cased).
//   - The main aliases — "main", the configured session.mainKey,
//     agent:<id>:main, agent:<id>:<mainKey> — become agent:<id>:<mainKey>
//     (for bare aliases <id> is defaultAgent), or "global" under
//     session.scope "global".
//   - The legacy agent:main:main and agent:main:<mainKey> name the default
//     agent's main session when no agent "main" is configured.
//   - agent:<id>:<rest> gets a normalised agent id and a lower-cased rest.
//   - Any other key becomes agent:<defaultAgent>:<key lower-cased>.
func Canonical(cfg *config.Config, defaultAgent, key string) (string, error) {
	if cfg == nil {
		cfg = &config.Config{}
	}
	raw, err := checkKey(key)
	if err != nil {
		return "", err
	}
	lower := strings.ToLower(raw)
	if lower == GlobalKey || lower == UnknownKey {
		return lower, nil
	}
	if strings.TrimSpace(defaultAgent) == "" {
		defaultAgent = cfg.DefaultAgentID()
	}
	defaultAgent = config.NormalizeAgentID(defaultAgent)
	mk := policy.MainKey(cfg)

	var out string
	if hasPrefixFold(lower, "agent:") {
		agent, ok := policy.AgentFromSessionKey(lower)
		if !ok {
			return "", invalid("invalid session key %q: want agent:<agentId>:<rest>", raw)
		}
		rest := restOf(lower)
		switch {
		case rest != "main" && rest != mk:
			out = "agent:" + agent + ":" + rest
		case agent == config.MainAgentID && defaultAgent != config.MainAgentID && !configures(cfg, config.MainAgentID):
			out = policy.MainSessionKey(cfg, defaultAgent) // legacy agent:main:<mainKey>
		default:
			out = policy.MainSessionKey(cfg, agent)
		}
	} else if lower == "main" || lower == mk {
		out = policy.MainSessionKey(cfg, defaultAgent)
	} else {
		out = "agent:" + defaultAgent + ":" + lower
	}
	// The result must be storable too: a configured session.mainKey can
	// make it too long or bring in a control character.
	if _, err := checkKey(out); err != nil {
		return "", err
	}
	return out, nil
}

// CheckKey reports why a key cannot be stored (empty, longer than
// MaxKeyLen bytes, not UTF-8, or holding a control character), or nil. It
// does not canonicalise; keys from the builders below pass it unless built
// from bad input.
func CheckKey(key string) error {
	_, err := checkKey(key)
	return err
}

// checkKey trims a key and rejects the ones no store should hold.
func checkKey(key string) (string, error) {
	k := strings.TrimSpace(key)
	switch {
	case k == "":
		return "", invalid("invalid session key: empty")
	case len(k) > MaxKeyLen:
		return "", invalid("invalid session key: longer than %d bytes", MaxKeyLen)
	case !utf8.ValidString(k):
		return "", invalid("invalid session key: not valid UTF-8")
	case strings.IndexFunc(k, unicode.IsControl) >= 0:
		return "", invalid("invalid session key: contains a control character")
	}
	return k, nil
}

func configures(cfg *config.Config, id string) bool {
	a, _ := cfg.Agent(id)
	return a != nil
}

// restOf returns <rest> of agent:<id>:<rest>, or the whole key for other
// shapes. The key is already trimmed.
func restOf(key string) string {
	if _, ok := policy.AgentFromSessionKey(key); !ok {
		return key
	}
	rest := key[len("agent:"):]
	return rest[strings.IndexByte(rest, ':')+1:]
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// reservedPrefixes are the namespaces the gateway mints itself; HTTP
// callers may not name them in x-openclaw-session-key.
var reservedPrefixes = []string{"subagent:", "cron:", "acp:"}

// IsReserved reports whether a key, bare or agent-prefixed, lies in a
// namespace HTTP callers may not use: subagent:, cron: or acp:.
func IsReserved(key string) bool {
	rest := restOf(strings.TrimSpace(key))
	for _, p := range reservedPrefixes {
		if hasPrefixFold(rest, p) {
			return true
		}
	}
	return false
}

// IsSubagent reports whether a key names a subagent session.
func IsSubagent(key string) bool { return policy.IsSubagentKey(key) }

// AgentOf returns the agent a key belongs to: the second segment of
// agent:<id>:<rest>, normalised, else defaultAgent normalised.
func AgentOf(key, defaultAgent string) string {
	if id, ok := policy.AgentFromSessionKey(key); ok {
		return id
	}
	return config.NormalizeAgentID(defaultAgent)
}

// OpenAIUser is the stable session of an OpenAI-endpoint caller that sent
// a `user`: agent:<agentId>:openai-user:<user>, the user trimmed and
// lower-cased as OpenClaw's buildAgentMainSessionKey does. The user is the
// caller's: check the result with CheckKey to answer 400 rather than have
// the store refuse it.
func OpenAIUser(agent, user string) string {
	return "agent:" + config.NormalizeAgentID(agent) + ":openai-user:" + strings.ToLower(strings.TrimSpace(user))
}

// OpenAIFresh is the one-call session of an OpenAI-endpoint request without
// `user`: agent:<agentId>:openai:<id>, id being a fresh UUID.
func OpenAIFresh(agent, id string) string {
	return "agent:" + config.NormalizeAgentID(agent) + ":openai:" + strings.ToLower(strings.TrimSpace(id))
}

// Subagent is the session of a spawned subagent run:
// agent:<agentId>:subagent:<id>, id being a fresh UUID.
func Subagent(agent, id string) string {
	return "agent:" + config.NormalizeAgentID(agent) + ":subagent:" + strings.ToLower(strings.TrimSpace(id))
}
