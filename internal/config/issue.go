package config

import (
	"sort"
	"strings"
)

// Issue is a problem at a place in the config. Path is "(root)" for the
// whole document, else like agents.list[2].tools.allow.
type Issue struct {
	Path    string
	Message string
}

func (i Issue) String() string { return i.Path + ": " + i.Message }

// ValidationError lists every type and value error found in a config, so a
// person can fix them all in one edit.
type ValidationError struct {
	Issues []Issue
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = is.String()
	}
	return "invalid config: " + strings.Join(parts, "; ")
}

// issueOrder puts issues found in separate passes (decoding, then
// validation) back into file order, using the order in which decoding
// visited each path.
type issueOrder map[string]int

func (o issueOrder) visit(path string) {
	if _, ok := o[path]; !ok {
		o[path] = len(o)
	}
}

// rank is the visit order of path or of its nearest visited ancestor, so an
// issue about a missing key sorts with the object that lacks it.
func (o issueOrder) rank(path string) int {
	if r, ok := o[path]; ok {
		return r
	}
	for i := len(path) - 1; i > 0; i-- {
		if path[i] == '.' || path[i] == '[' {
			if r, ok := o[path[:i]]; ok {
				return r
			}
		}
	}
	return len(o)
}

func (o issueOrder) sort(issues []Issue) {
	sort.SliceStable(issues, func(i, j int) bool {
		return o.rank(issues[i].Path) < o.rank(issues[j].Path)
	})
}
