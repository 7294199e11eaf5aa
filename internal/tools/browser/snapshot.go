package browser

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// axNode is one node of Chromium's accessibility tree
// (Accessibility.getFullAXTree), reduced to what a snapshot shows.
type axNode struct {
	ID       string
	Ignored  bool
	Role     string
	Name     string
	Value    string
	States   []string // " [checked]", " [level=2]", in the snapshot's spelling
	Children []string
	Backend  int64 // the DOM node's backend id; 0 when it has none
}

// interactiveRoles always get a ref; contentRoles get one when named
// (OpenClaw's role snapshot: the same classification).
var (
	interactiveRoles = []string{"button", "checkbox", "combobox", "link", "listbox", "menuitem",
		"menuitemcheckbox", "menuitemradio", "option", "radio", "searchbox", "slider",
		"spinbutton", "switch", "tab", "textbox", "treeitem"}
	contentRoles = []string{"article", "cell", "columnheader", "gridcell", "heading", "listitem",
		"main", "navigation", "region", "rowheader"}
	structuralRoles = []string{"application", "directory", "document", "generic", "grid", "group",
		"ignored", "list", "menu", "menubar", "none", "presentation", "row", "rowgroup", "table",
		"tablist", "toolbar", "tree", "treegrid"}
)

// snapOptions shape a snapshot: only interactive elements (flat),
// compact (no unnamed structure), a depth limit (-1: none), the lines
// that contain every query token, and a size cap in characters.
type snapOptions struct {
	interactive, compact bool
	depth                int
	query                string
	maxChars             int
}

// snapshot is a rendered accessibility snapshot: its text, the refs it
// names (ref → backend DOM node id), and its counts.
type snapshot struct {
	text        string
	refs        map[string]int64
	lines       int
	interactive int
	truncated   bool
	matches     int // lines kept by a query
}

// truncMarker ends a snapshot cut at maxChars, as OpenClaw's does.
const truncMarker = "[...TRUNCATED - page too large]"

// render turns nodes (in any order; the root is the node no other names
// as a child) into the snapshot text: one line a node, "- role "name"
// [ref=e1] [checked] value="…"", indented by depth. Ignored nodes and
// unnamed generic or presentational wrappers are transparent (their
// children move up); a text node repeating its parent's name is left out.
func render(nodes []axNode, o snapOptions) snapshot {
	byID := make(map[string]*axNode, len(nodes))
	child := map[string]bool{}
	for i := range nodes {
		byID[nodes[i].ID] = &nodes[i]
		for _, c := range nodes[i].Children {
			child[c] = true
		}
	}
	s := snapshot{refs: map[string]int64{}}
	var lines []string
	var walk func(id string, depth int, parentName string)
	walk = func(id string, depth int, parentName string) {
		n := byID[id]
		if n == nil || depth > 200 {
			return
		}
		role := strings.ToLower(n.Role)
		if role == "rootwebarea" {
			role = "document"
		}
		transparent := n.Ignored || role == "none" || role == "presentation" || role == "inlinetextbox" ||
			role == "linebreak" || (role == "generic" || role == "") && n.Name == ""
		text := role == "statictext"
		if text && (n.Name == "" || strings.TrimSpace(n.Name) == strings.TrimSpace(parentName)) {
			transparent = true
		}
		next := depth
		if !transparent {
			next = depth + 1
			if line, ok := s.line(n, role, text, depth, o); ok {
				lines = append(lines, line)
			}
		}
		name := parentName
		if !transparent && !text {
			name = n.Name
		}
		for _, c := range n.Children {
			walk(c, next, name)
		}
	}
	for i := range nodes {
		if !child[nodes[i].ID] {
			walk(nodes[i].ID, 0, "")
			break
		}
	}
	s.finish(lines, o)
	return s
}

// line renders one node, or says it is left out by the options.
func (s *snapshot) line(n *axNode, role string, text bool, depth int, o snapOptions) (string, bool) {
	if o.depth >= 0 && depth > o.depth {
		return "", false
	}
	inter := slices.Contains(interactiveRoles, role)
	if o.interactive && !inter {
		return "", false
	}
	if o.compact && slices.Contains(structuralRoles, role) && n.Name == "" {
		return "", false
	}
	var b strings.Builder
	if !o.interactive {
		b.WriteString(strings.Repeat("  ", depth))
	}
	if text {
		b.WriteString("- text ")
		b.WriteString(quote(n.Name))
		return b.String(), true
	}
	b.WriteString("- ")
	b.WriteString(role)
	if n.Name != "" {
		b.WriteString(" ")
		b.WriteString(quote(n.Name))
	}
	if n.Backend > 0 && (inter || n.Name != "" && slices.Contains(contentRoles, role)) {
		ref := "e" + strconv.Itoa(len(s.refs)+1)
		s.refs[ref] = n.Backend
		fmt.Fprintf(&b, " [ref=%s]", ref)
	}
	if inter {
		s.interactive++
	}
	for _, st := range n.States {
		b.WriteString(st)
	}
	if n.Value != "" {
		b.WriteString(" value=")
		b.WriteString(quote(n.Value))
	}
	return b.String(), true
}

// finish applies the query and the size cap.
func (s *snapshot) finish(lines []string, o snapOptions) {
	if toks := strings.Fields(strings.ToLower(o.query)); len(toks) > 0 {
		kept := lines[:0]
		for _, l := range lines {
			ll := strings.ToLower(l)
			if !slices.ContainsFunc(toks, func(t string) bool { return !strings.Contains(ll, t) }) {
				kept = append(kept, l)
			}
		}
		lines = kept
		s.matches = len(lines)
	}
	var b strings.Builder
	for i, l := range lines {
		if o.maxChars > 0 && b.Len()+len(l)+1 > o.maxChars {
			s.truncated = true
			b.WriteString(truncMarker)
			s.lines = i + 1
			s.text = b.String()
			return
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	s.lines = len(lines)
	s.text = strings.TrimSuffix(b.String(), "\n")
}

// quote is a name as the snapshot shows it: a JSON string, cut at 300
// characters (a name is a label, not the page's prose).
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// stateNames are the properties a line shows, in this order.
var stateNames = []string{"checked", "disabled", "expanded", "pressed", "selected", "level", "invalid", "required"}

// states spells the properties of a node that a line shows: a true
// boolean as " [checked]", "mixed" and levels as " [checked=mixed]".
func states(props map[string]json.RawMessage) []string {
	var out []string
	for _, name := range stateNames {
		raw, ok := props[name]
		if !ok {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		switch v := v.(type) {
		case bool:
			if v {
				out = append(out, " ["+name+"]")
			}
		case string:
			if v == "true" {
				out = append(out, " ["+name+"]")
			} else if v != "false" && v != "" {
				out = append(out, " ["+name+"="+v+"]")
			}
		case float64:
			if name == "level" {
				out = append(out, fmt.Sprintf(" [level=%d]", int(v)))
			}
		}
	}
	return out
}
