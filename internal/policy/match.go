package policy

import "strings"

// pattern is one compiled allow or deny entry (§3.3): `*` matches
// everything, an entry with `*` is an anchored glob whose `*` matches any run
// of characters, anything else is compared exactly. No other character is
// special.
type pattern struct {
	all   bool
	exact string
	parts []string // glob pieces between the stars; nil for exact entries
}

func compilePattern(e string) pattern {
	switch {
	case e == "*":
		return pattern{all: true}
	case strings.Contains(e, "*"):
		return pattern{parts: strings.Split(e, "*")}
	default:
		return pattern{exact: e}
	}
}

func (p *pattern) match(n string) bool {
	if p.all {
		return true
	}
	if p.parts == nil {
		return n == p.exact
	}
	first, last := p.parts[0], p.parts[len(p.parts)-1]
	if len(n) < len(first)+len(last) || !strings.HasPrefix(n, first) || !strings.HasSuffix(n, last) {
		return false
	}
	mid := n[len(first) : len(n)-len(last)]
	for _, part := range p.parts[1 : len(p.parts)-1] {
		i := strings.Index(mid, part)
		if i < 0 {
			return false
		}
		mid = mid[i+len(part):]
	}
	return true
}

func isGlob(e string) bool { return strings.Contains(e, "*") }

// MatchGlob reports whether name matches one list entry read as the tool
// policy reads its entries: "*" matches everything, an entry holding "*"
// is an anchored glob whose "*" matches any run of characters, any other
// entry is compared exactly. No character is folded.
func MatchGlob(entry, name string) bool {
	p := compilePattern(entry)
	return p.match(name)
}

// entry is one normalised allow or deny entry with its core-group expansion
// compiled. Plugin groups are resolved per evaluation, because which plugins
// exist depends on the tool list (§4.6).
type entry struct {
	name string
	pats []pattern
}

// ruleList is a compiled allow or deny list. raw keeps the list as
// configured, for reports.
type ruleList struct {
	raw     []string
	entries []entry
}

func compileList(list []string) ruleList {
	l := ruleList{raw: list}
	for _, e := range list {
		n := Normalize(e)
		if n == "" {
			continue
		}
		var pats []pattern
		if members, ok := Groups[n]; ok {
			pats = make([]pattern, len(members))
			for i, m := range members {
				pats[i] = pattern{exact: m}
			}
		} else {
			pats = []pattern{compilePattern(n)}
		}
		l.entries = append(l.entries, entry{name: n, pats: pats})
	}
	return l
}

func (l *ruleList) empty() bool { return len(l.entries) == 0 }

// match reports the entry that matches the normalised tool name n, with
// plugin groups expanded against plugins.
func (l *ruleList) match(n string, plugins *pluginIndex) (string, bool) {
	for i := range l.entries {
		e := &l.entries[i]
		if plugins.expands(e.name) {
			if plugins.inGroup(e.name, n) {
				return e.name, true
			}
			continue
		}
		for j := range e.pats {
			if e.pats[j].match(n) {
				return e.name, true
			}
		}
	}
	return "", false
}

// Verdict says whether a policy lets a tool through and, if not, why.
type Verdict uint8

// Verdicts.
const (
	Allowed    Verdict = iota
	Denied             // a deny entry matched
	NotAllowed         // an allow list exists and no entry matched
)

// Rules is one compiled {allow, deny} policy, the input of the matcher
// (§3.4). The zero Rules allows everything.
type Rules struct {
	allow, deny ruleList
}

// NewRules compiles an allow and a deny list.
func NewRules(allow, deny []string) Rules {
	return Rules{allow: compileList(allow), deny: compileList(deny)}
}

// Check applies the matcher to one tool name without plugin groups.
func (r *Rules) Check(name string) (Verdict, string) {
	return r.check(Normalize(name), nil)
}

// check is §3.4: deny wins, no allow list allows, an allow match allows, and
// apply_patch passes wherever exec does.
func (r *Rules) check(n string, plugins *pluginIndex) (Verdict, string) {
	if e, ok := r.deny.match(n, plugins); ok {
		return Denied, e
	}
	if r.allow.empty() {
		return Allowed, ""
	}
	if e, ok := r.allow.match(n, plugins); ok {
		return Allowed, e
	}
	if n == "apply_patch" {
		if e, ok := r.allow.match("exec", plugins); ok {
			return Allowed, e
		}
	}
	return NotAllowed, ""
}
