package approval

import (
	"errors"
	"fmt"
	"strings"

	"talon/internal/config"
)

// Host is where exec runs.
type Host string

// The values of Host.
const (
	HostSandbox Host = "sandbox"
	HostGateway Host = "gateway"
	HostNode    Host = "node"
)

// ExecSettings is one layer of requested exec settings: a session entry's
// execHost/execSecurity/execAsk, an agent's or the global tools.exec.
// Empty fields are unset and fall through to the next layer.
type ExecSettings struct {
	Host     string
	Security string
	Ask      string
}

// PolicyInput is everything the effective policy of one exec call depends
// on (spec §4.3).
type PolicyInput struct {
	AgentID string
	// Session, Agent, Global are the requested layers, strongest first.
	Session, Agent, Global ExecSettings
	// CallSecurity and CallAsk are the exec tool's own arguments; they can
	// only tighten.
	CallSecurity, CallAsk string
	// Elevated is the session's elevated level "full", which forces
	// security=full and ask=off and bypasses approvals (spec §4.3).
	Elevated bool
	// File is the approvals file (FailClosed() when it is corrupt).
	File *File
	// RunsOn is where the command will actually run, when the caller
	// knows: Talon runs a command in the session's sandbox, or on the
	// gateway when the session has none, whatever host was requested. It
	// replaces the requested host (which is still validated and kept in
	// Effective.RequestedHost), so the built-in security default is that
	// of the place the command runs, never of the place it was asked for.
	RunsOn Host
}

// Effective is the policy an exec call runs under, with the source of
// each value so that a decision can be explained.
type Effective struct {
	Host Host
	// RequestedHost is the host the layers asked for; it differs from
	// Host when PolicyInput.RunsOn overrode it.
	RequestedHost   Host
	Security        Security
	Ask             Ask
	AskFallback     Security
	AutoAllowSkills bool
	// Allowlist is agents["*"].allowlist followed by the agent's own.
	Allowlist []Entry
	// Bypass is set for elevated full: approvals do not apply.
	Bypass bool
	// Sources says where each of host, requestedHost, security, ask,
	// askFallback came from.
	Sources map[string]string
}

// Talon's built-in defaults when no layer sets a value. Talon keeps the
// cautious defaults of older OpenClaw builds rather than the current
// "full/off" (spec §4.2): on the gateway or a node a command outside the
// allowlist is asked about; in the sandbox, which isolates, it runs.
const (
	DefaultAsk         = AskOnMiss
	DefaultAskFallback = SecurityDeny
)

// DefaultSecurity is the built-in security for host.
func DefaultSecurity(h Host) Security {
	if h == HostSandbox {
		return SecurityFull
	}
	return SecurityAllowlist
}

// The validation messages of sessions.patch (spec §5.3), reused for every
// layer so an operator sees the same wording wherever the value was set.
const (
	msgHost     = `invalid execHost (use "sandbox"|"gateway"|"node")`
	msgSecurity = `invalid execSecurity (use "deny"|"allowlist"|"full")`
	msgAsk      = `invalid execAsk (use "off"|"on-miss"|"always")`
)

// ValidateSettings checks one layer of settings and returns the §5.3
// message for the first bad field, exactly as sessions.patch words it
// (clients match on it). Values are compared in lower case, as
// sessions.patch normalises them.
func ValidateSettings(s ExecSettings) error {
	_, err := badSetting(s)
	return err
}

// badSetting is ValidateSettings that also returns the offending value.
func badSetting(s ExecSettings) (string, error) {
	switch Host(strings.ToLower(s.Host)) {
	case "", HostSandbox, HostGateway, HostNode:
	default:
		return s.Host, errors.New(msgHost)
	}
	if v := Security(strings.ToLower(s.Security)); v != "" && !v.Valid() {
		return s.Security, errors.New(msgSecurity)
	}
	if v := Ask(strings.ToLower(s.Ask)); v != "" && !v.Valid() {
		return s.Ask, errors.New(msgAsk)
	}
	return "", nil
}

// Resolve computes the effective policy (spec §4.3). It is pure. A bad
// value in any layer is an error naming the layer: guessing would either
// loosen or silently change the policy.
func Resolve(in PolicyInput) (Effective, error) {
	layers := []struct {
		name string
		s    ExecSettings
	}{{"session", in.Session}, {"agent tools.exec", in.Agent}, {"tools.exec", in.Global}}
	for _, l := range layers {
		if got, err := badSetting(l.s); err != nil {
			return Effective{}, fmt.Errorf("resolving exec policy: %s: %w (got %q)", l.name, err, got)
		}
	}
	if v := Security(strings.ToLower(in.CallSecurity)); v != "" && !v.Valid() {
		return Effective{}, fmt.Errorf("resolving exec policy: exec argument security: %s (got %q)", msgSecurity, in.CallSecurity)
	}
	if v := Ask(strings.ToLower(in.CallAsk)); v != "" && !v.Valid() {
		return Effective{}, fmt.Errorf("resolving exec policy: exec argument ask: %s (got %q)", msgAsk, in.CallAsk)
	}
	switch in.RunsOn {
	case "", HostSandbox, HostGateway, HostNode:
	default:
		return Effective{}, fmt.Errorf("resolving exec policy: unknown host %q for where the command runs", in.RunsOn)
	}
	f := in.File
	if f == nil {
		return Effective{}, fmt.Errorf("resolving exec policy: no approvals file (load it; a corrupt one yields FailClosed)")
	}
	eff := Effective{Sources: map[string]string{}}

	// 1. Requested: the first layer that sets a field wins.
	pick := func(field string, get func(ExecSettings) string, def string) string {
		for _, l := range layers {
			if v := strings.ToLower(get(l.s)); v != "" {
				eff.Sources[field] = l.name
				return v
			}
		}
		eff.Sources[field] = "default"
		return def
	}
	eff.Host = Host(pick("host", func(s ExecSettings) string { return s.Host }, string(HostSandbox)))
	eff.RequestedHost = eff.Host
	eff.Sources["requestedHost"] = eff.Sources["host"]
	if in.RunsOn != "" && in.RunsOn != eff.Host {
		eff.Host, eff.Sources["host"] = in.RunsOn, "where the command runs"
	}
	reqSec := Security(pick("security", func(s ExecSettings) string { return s.Security }, string(DefaultSecurity(eff.Host))))
	reqAsk := Ask(pick("ask", func(s ExecSettings) string { return s.Ask }, string(DefaultAsk)))
	if c := Security(strings.ToLower(in.CallSecurity)); c != "" && c.rank() < reqSec.rank() {
		reqSec, eff.Sources["security"] = c, "exec argument"
	}
	if c := Ask(strings.ToLower(in.CallAsk)); c != "" && c.rank() > reqAsk.rank() {
		reqAsk, eff.Sources["ask"] = c, "exec argument"
	}
	if in.Elevated {
		eff.Security, eff.Ask, eff.AskFallback, eff.Bypass = SecurityFull, AskOff, SecurityFull, true
		eff.Sources["security"], eff.Sources["ask"], eff.Sources["askFallback"] = "elevated full", "elevated full", "elevated full"
		return eff, nil
	}

	// 2. The file's policy for the agent: agents.A → agents["*"] →
	// defaults → the requested value.
	id := config.NormalizeAgentID(in.AgentID)
	own, star := f.Agents[id], f.Agents["*"]
	fileSec, secSrc := reqSec, ""
	fileAsk, askSrc := reqAsk, ""
	fileFb, fbSrc := DefaultAskFallback, ""
	var skills *bool
	for _, c := range []struct {
		name   string
		sec    Security
		ask    Ask
		fb     Security
		skills *bool
	}{
		{"exec-approvals agents." + id, field(own, func(a *Agent) Security { return a.Security }), fieldAsk(own), field(own, func(a *Agent) Security { return a.AskFallback }), skillsOf(own)},
		{`exec-approvals agents["*"]`, field(star, func(a *Agent) Security { return a.Security }), fieldAsk(star), field(star, func(a *Agent) Security { return a.AskFallback }), skillsOf(star)},
		{"exec-approvals defaults", f.Defaults.Security, f.Defaults.Ask, f.Defaults.AskFallback, f.Defaults.AutoAllowSkills},
	} {
		if secSrc == "" && c.sec.Valid() {
			fileSec, secSrc = c.sec, c.name
		}
		if askSrc == "" && c.ask.Valid() {
			fileAsk, askSrc = c.ask, c.name
		}
		if fbSrc == "" && c.fb.Valid() {
			fileFb, fbSrc = c.fb, c.name
		}
		if skills == nil {
			skills = c.skills
		}
	}

	// 3. The file can only tighten.
	eff.Security = minSecurity(reqSec, fileSec)
	if eff.Security != reqSec {
		eff.Sources["security"] = secSrc
	}
	eff.Ask = maxAsk(reqAsk, fileAsk)
	if eff.Ask != reqAsk {
		eff.Sources["ask"] = askSrc
	}
	eff.AskFallback = minSecurity(eff.Security, fileFb)
	switch {
	case eff.AskFallback != fileFb:
		eff.Sources["askFallback"] = "effective security"
	case fbSrc == "":
		eff.Sources["askFallback"] = "default"
	default:
		eff.Sources["askFallback"] = fbSrc
	}
	eff.AutoAllowSkills = skills != nil && *skills
	if star != nil {
		eff.Allowlist = append(eff.Allowlist, star.Allowlist...)
	}
	if own != nil && id != "*" {
		eff.Allowlist = append(eff.Allowlist, own.Allowlist...)
	}
	return eff, nil
}

func field(a *Agent, get func(*Agent) Security) Security {
	if a == nil {
		return ""
	}
	return get(a)
}

func fieldAsk(a *Agent) Ask {
	if a == nil {
		return ""
	}
	return a.Ask
}

func skillsOf(a *Agent) *bool {
	if a == nil {
		return nil
	}
	return a.AutoAllowSkills
}
