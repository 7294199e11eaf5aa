package policy

import (
	"slices"
	"strconv"
)

// dedupe removes repeated strings, keeping first occurrences.
func dedupe(list []string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// unionAllow is §4.3's union of allow and alsoAllow: alsoAllow adds to an
// allow list, and turns a missing or empty one into ["*", ...alsoAllow].
func unionAllow(allow, also []string) []string {
	switch {
	case len(also) == 0:
		return allow
	case len(allow) == 0:
		return append([]string{"*"}, also...)
	}
	return dedupe(append(slices.Clone(allow), also...))
}

// keySegment renders a map key as a path segment: `.key` for plain words,
// `["k/ey"]` for anything else.
func keySegment(k string) string {
	if k == "" {
		return `[""]`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "[" + strconv.Quote(k) + "]"
		}
	}
	return "." + k
}
