package analyze

import (
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// MatchesAllowlist reports whether plan is a hit for an allowlist of patterns (spec §4.6):
// the plan is decidable and every segment's resolved executable matches some pattern. HOME
// for ~ in patterns and the file system used to realpath literal patterns are the plan's
// env. An undecidable plan never matches.
func MatchesAllowlist(plan *Plan, patterns []string, env Env) bool {
	if env.FS == nil {
		env.FS = HostFS{}
	}
	return plan.Hit(func(s Segment) bool {
		for _, p := range patterns {
			if MatchPattern(p, s.Path, env) {
				return true
			}
		}
		return false
	})
}

// MatchPattern reports whether the absolute executable path matches one allowlist pattern
// (spec §4.6). A pattern must look like a path (contain / or ~; a bare name never matches)
// or be a bare "*" (any resolved executable). In a glob, ** matches any characters
// including /, * any run without /, ? one character other than /; everything else is
// literal and matching is case-sensitive and anchored at both ends. A leading ~ is HOME. A
// pattern with no wildcard is compared after resolving its symlinks, as path already is.
func MatchPattern(pattern, execPath string, env Env) bool {
	if !path.IsAbs(execPath) || pattern == "" {
		return false
	}
	if pattern == "*" {
		return true
	}
	if !strings.ContainsAny(pattern, `/~\`) {
		return false
	}
	if pattern == "~" || strings.HasPrefix(pattern, "~/") {
		if env.HOME == "" {
			return false
		}
		pattern = strings.TrimSuffix(env.HOME, "/") + pattern[1:]
	}
	if !strings.ContainsAny(pattern, "*?") {
		if !path.IsAbs(pattern) {
			return false
		}
		if env.FS == nil {
			env.FS = HostFS{}
		}
		if real, err := env.FS.EvalSymlinks(pattern); err == nil {
			pattern = real
		}
		return path.Clean(pattern) == execPath
	}
	re := compiledGlob(pattern)
	return re != nil && re.MatchString(execPath)
}

// globs caches compiled glob patterns: an allowlist is matched against
// every segment of every command, and compiling was a quarter of the cost
// of deciding one. Bounded: past maxGlobs patterns, new ones are compiled
// each time instead of cached.
var globs sync.Map // pattern → *regexp.Regexp (nil when it does not compile)

const maxGlobs = 4096

var globCount atomic.Int64

func compiledGlob(pattern string) *regexp.Regexp {
	if re, ok := globs.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	re, err := regexp.Compile(globRegexp(pattern))
	if err != nil {
		re = nil
	}
	if globCount.Load() < maxGlobs {
		if _, loaded := globs.LoadOrStore(pattern, re); !loaded {
			globCount.Add(1)
		}
	}
	return re
}

func globRegexp(glob string) string {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case c == '*' && i+1 < len(glob) && glob[i+1] == '*':
			b.WriteString(`.*`)
			i++
		case c == '*':
			b.WriteString(`[^/]*`)
		case c == '?':
			b.WriteString(`[^/]`)
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	b.WriteString(`$`)
	return b.String()
}
