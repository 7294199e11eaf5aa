package policy

import (
	"slices"
	"strings"
)

// Why an allow list was dropped, as reported in IgnoredAllowlist.Why.
const (
	WhyPluginOnly      = "plugin-only"      // only plugin tools, plugin ids or group:plugins
	WhyGlobsOnly       = "globs-only"       // only glob patterns, which never count as core
	WhyUnavailableCore = "unavailable-core" // only core tools that this run does not have
	WhyUnknown         = "unknown"          // only names nothing provides
	WhyMixed           = "mixed"            // a mix of the above
)

// Warning suffixes, exactly as OpenClaw 2026.3.13 logs them.
const (
	warnIgnoring = "Ignoring allowlist so core tools remain available. "
	warnMixed    = "Some entries are shipped core tools but unavailable in the current runtime/provider/model/config; other entries won't match any tool unless the plugin is enabled."
	warnCore     = "These entries are shipped core tools but unavailable in the current runtime/provider/model/config."
	warnPlugin   = "These entries won't match any tool unless the plugin is enabled."
)

// analyzeAllowlist is §4.7 for one step whose allow list is non-empty: it
// logs unknown entries and reports whether the allow list stays. A list
// with no entry naming an available core tool (or `*`) is dropped.
func analyzeAllowlist(r *Result, s *step, plugins *pluginIndex, core []string) bool {
	hasCore := false
	var unknown []string
	classes := 0 // bit set of why* classes among non-core entries
	for i := range s.rules.allow.entries {
		e := s.rules.allow.entries[i].name
		if e == "*" {
			hasCore = true
			continue
		}
		isPlugin := e == GroupPlugins || plugins.hasPlugin(e) || plugins.isPluginTool(e)
		isCore := false
		for _, p := range s.rules.allow.entries[i].pats {
			if p.parts == nil && !p.all && slices.Contains(core, p.exact) {
				isCore = true
				break
			}
		}
		if isCore {
			hasCore = true
			continue
		}
		switch {
		case isPlugin:
			classes |= 1
			continue
		case isGlob(e):
			classes |= 2
		case IsCoreToolID(e):
			classes |= 4
		default:
			classes |= 8
		}
		if !slices.Contains(unknown, e) {
			unknown = append(unknown, e)
		}
	}
	if len(unknown) > 0 {
		r.Warnings = append(r.Warnings, unknownWarning(s.label, unknown, !hasCore))
	}
	if hasCore {
		return true
	}
	ig := IgnoredAllowlist{Step: s.label, Key: s.allowKey, Why: WhyMixed}
	switch classes {
	case 1:
		ig.Why = WhyPluginOnly
	case 2:
		ig.Why = WhyGlobsOnly
	case 4:
		ig.Why = WhyUnavailableCore
	case 8:
		ig.Why = WhyUnknown
	}
	for i := range s.rules.allow.entries {
		ig.Entries = append(ig.Entries, s.rules.allow.entries[i].name)
	}
	r.Ignored = append(r.Ignored, ig)
	return false
}

func unknownWarning(label string, unknown []string, dropped bool) string {
	var b strings.Builder
	b.WriteString("tools: ")
	b.WriteString(label)
	b.WriteString(" allowlist contains unknown entries (")
	b.WriteString(strings.Join(unknown, ", "))
	b.WriteString("). ")
	if dropped {
		b.WriteString(warnIgnoring)
	}
	nCore := 0
	for _, e := range unknown {
		if IsCoreToolID(e) {
			nCore++
		}
	}
	switch nCore {
	case len(unknown):
		b.WriteString(warnCore)
	case 0:
		b.WriteString(warnPlugin)
	default:
		b.WriteString(warnMixed)
	}
	return b.String()
}
