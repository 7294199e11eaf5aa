package policy

import (
	"strings"

	"talon/internal/config"
)

// normalizeName trims and lower-cases. It does not allocate for names that
// are already normalised, which is nearly all of them.
func normalizeName(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}

// Normalize is OpenClaw's normalizeToolName: trim, lower-case, then map the
// aliases bash → exec and apply-patch → apply_patch. It applies to policy
// entries and to the tool names being tested alike.
func Normalize(name string) string {
	switch n := normalizeName(name); n {
	case "bash":
		return "exec"
	case "apply-patch":
		return "apply_patch"
	default:
		return n
	}
}

// normalizeList normalises entries and drops the ones that become empty.
func normalizeList(list []string) []string {
	out := make([]string, 0, len(list))
	for _, e := range list {
		if n := Normalize(e); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// ExpandGroups normalises entries, replaces core group names with their
// members (one level) and de-duplicates, keeping first occurrences.
func ExpandGroups(list []string) []string {
	out := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, e := range list {
		n := Normalize(e)
		if n == "" {
			continue
		}
		if members, ok := Groups[n]; ok {
			for _, m := range members {
				add(m)
			}
			continue
		}
		add(n)
	}
	return out
}

// AgentFromSessionKey returns the agent id of a key shaped
// agent:<id>:<rest>, lower-cased and normalised, and false for other shapes.
func AgentFromSessionKey(key string) (string, bool) {
	k := strings.TrimSpace(key)
	if len(k) < 6 || !strings.EqualFold(k[:6], "agent:") {
		return "", false
	}
	rest := k[6:]
	i := strings.IndexByte(rest, ':')
	if i <= 0 || i == len(rest)-1 {
		return "", false
	}
	return config.NormalizeAgentID(rest[:i]), true
}

// sessionRest returns <rest> of agent:<id>:<rest>, or the whole key.
func sessionRest(key string) string {
	k := strings.TrimSpace(key)
	if _, ok := AgentFromSessionKey(k); !ok {
		return k
	}
	rest := k[6:]
	return rest[strings.IndexByte(rest, ':')+1:]
}

// IsSubagentKey reports whether a session key names a subagent session:
// subagent:… or agent:<id>:subagent:….
func IsSubagentKey(key string) bool {
	k := strings.TrimSpace(key)
	if hasPrefixFold(k, "subagent:") {
		return true
	}
	if _, ok := AgentFromSessionKey(k); ok {
		return hasPrefixFold(sessionRest(k), "subagent:")
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
