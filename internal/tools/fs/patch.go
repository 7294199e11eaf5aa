package fs

import (
	"fmt"
	"regexp"
	"strings"
)

// The apply_patch format, as OpenAI's Codex defines it:
//
//	*** Begin Patch
//	*** Add File: path          lines that follow start with "+"
//	*** Delete File: path
//	*** Update File: path
//	*** Move to: new/path       optional, right after Update File
//	@@ optional context line    starts a hunk; the first hunk may omit it
//	 context line               " " kept, "-" removed, "+" added
//	*** End of File             optional: the hunk ends at the end of the file
//	*** End Patch
//
// Lenient where models slip and the meaning is clear: surrounding blank
// lines and a heredoc wrapper (<<'EOF' ... EOF) are dropped, CRLF line
// ends are read as LF, an empty line inside a hunk is an empty context
// line, unified-diff headers like "@@ -1,3 +1,4 @@" count as a bare "@@",
// and blank lines in an added file are empty lines.

type opKind int

const (
	opAdd opKind = iota + 1
	opDelete
	opUpdate
)

func (k opKind) header() string {
	switch k {
	case opAdd:
		return "Add File"
	case opDelete:
		return "Delete File"
	default:
		return "Update File"
	}
}

// fileOp is one file operation of a patch.
type fileOp struct {
	kind    opKind
	path    string
	moveTo  string  // Update File only; "" when not moving
	content string  // Add File only
	hunks   []*hunk // Update File only
	line    int     // 1-based line of the header in the patch
}

// hunk is one change within an updated file.
type hunk struct {
	context  string     // the text after "@@", trimmed; "" for none
	lines    []hunkLine // in patch order
	old, new []string   // the lines the hunk expects and leaves
	eof      bool       // "*** End of File": old must end the file
	line     int        // 1-based line in the patch where the hunk starts
}

// hunkLine is one line of a hunk: kind ' ' (context), '-' or '+'.
type hunkLine struct {
	kind byte
	text string
}

// replacement is the hunk's new lines for the file lines it matched:
// context lines keep the file's text, so a match that ignored trailing
// white space does not rewrite them.
func (h *hunk) replacement(matched []string) []string {
	out := make([]string, 0, len(h.new))
	i := 0
	for _, l := range h.lines {
		switch l.kind {
		case ' ':
			out = append(out, matched[i])
			i++
		case '-':
			i++
		case '+':
			out = append(out, l.text)
		}
	}
	return out
}

const (
	beginPatch = "*** Begin Patch"
	endPatch   = "*** End Patch"
	addFile    = "*** Add File: "
	deleteFile = "*** Delete File: "
	updateFile = "*** Update File: "
	moveTo     = "*** Move to: "
	endOfFile  = "*** End of File"
)

// PatchError is a problem with a patch: it cannot be parsed, or it does
// not fit the files. Nothing has been changed when one is returned.
type PatchError struct {
	Line int    // 1-based line of the patch the problem is at; 0 if none
	Msg  string // what is wrong
}

func (e *PatchError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("invalid patch, line %d: %s", e.Line, e.Msg)
	}
	return "invalid patch: " + e.Msg
}

func patchErr(line int, format string, args ...any) error {
	return &PatchError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

var (
	heredocStart   = regexp.MustCompile(`^(?:(?:apply_patch|applypatch)\s+)?<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?\s*$`)
	unifiedHunkHdr = regexp.MustCompile(`^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@`)
)

// parsePatch parses the text of an apply_patch call.
func parsePatch(input string) ([]*fileOp, error) {
	text := strings.ReplaceAll(input, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	first := 0 // index of lines[0] in the input, for line numbers
	// Drop blank lines around the patch.
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
		first++
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) >= 2 {
		if m := heredocStart.FindStringSubmatch(strings.TrimSpace(lines[0])); m != nil && strings.TrimSpace(lines[len(lines)-1]) == m[1] {
			lines = lines[1 : len(lines)-1]
			first++
		}
	}
	if len(lines) == 0 {
		return nil, patchErr(0, "the patch is empty; it must start with %q and end with %q", beginPatch, endPatch)
	}
	if strings.TrimSpace(lines[0]) != beginPatch {
		return nil, patchErr(first+1, "the first line must be %q, not %q", beginPatch, clip(lines[0]))
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1]) != endPatch {
		return nil, patchErr(first+len(lines), "the last line must be %q, not %q", endPatch, clip(lines[len(lines)-1]))
	}
	p := &parser{lines: lines[1 : len(lines)-1], base: first + 2}
	return p.parse()
}

// clip shortens a line quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

type parser struct {
	lines []string
	i     int // next line
	base  int // patch line number of lines[0]
}

func (p *parser) lineNo() int { return p.base + p.i }

func (p *parser) parse() ([]*fileOp, error) {
	var ops []*fileOp
	for p.i < len(p.lines) {
		raw := p.lines[p.i]
		t := strings.TrimSpace(raw)
		if t == "" {
			p.i++
			continue
		}
		line := p.lineNo()
		var op *fileOp
		var err error
		switch {
		case strings.HasPrefix(t+" ", addFile):
			op, err = p.parseAdd(line, headerPath(t, addFile))
		case strings.HasPrefix(t+" ", deleteFile):
			op, err = &fileOp{kind: opDelete, path: headerPath(t, deleteFile), line: line}, nil
			p.i++
		case strings.HasPrefix(t+" ", updateFile):
			op, err = p.parseUpdate(line, headerPath(t, updateFile))
		case t == beginPatch:
			return nil, patchErr(line, "a second %q; send one patch, with all file operations between one %q and one %q", beginPatch, beginPatch, endPatch)
		case t == endPatch:
			return nil, patchErr(line, "%q before the last line; put every file operation before it", endPatch)
		default:
			return nil, patchErr(line, "%q is not a file operation; expected %q, %q or %q followed by a path", clip(raw), addFile+"...", deleteFile+"...", updateFile+"...")
		}
		if err != nil {
			return nil, err
		}
		if op.path == "" {
			return nil, patchErr(line, "%s has no path", op.kind.header())
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, patchErr(0, "the patch has no file operations")
	}
	return ops, nil
}

func headerPath(t, prefix string) string {
	return strings.TrimSpace(strings.TrimPrefix(t, strings.TrimSpace(prefix)))
}

// isHeader reports whether a line starts the next file operation or ends
// the patch.
func isHeader(raw string) bool {
	t := strings.TrimSpace(raw)
	return strings.HasPrefix(t, "*** ") && t != endOfFile && !strings.HasPrefix(t, moveTo)
}

func (p *parser) parseAdd(line int, path string) (*fileOp, error) {
	p.i++
	var body []string
	blanks := 0 // blank lines seen since the last "+" line
	for p.i < len(p.lines) {
		raw := p.lines[p.i]
		switch {
		case strings.HasPrefix(raw, "+"):
			for ; blanks > 0; blanks-- {
				body = append(body, "")
			}
			body = append(body, raw[1:])
		case strings.TrimSpace(raw) == "":
			blanks++
		default:
			if !isHeader(raw) {
				return nil, patchErr(p.lineNo(), "in Add File %q every line must start with \"+\" (an empty line is a lone \"+\"), not %q", path, clip(raw))
			}
			return addOp(line, path, body), nil
		}
		p.i++
	}
	return addOp(line, path, body), nil
}

func addOp(line int, path string, body []string) *fileOp {
	content := ""
	if len(body) > 0 {
		content = strings.Join(body, "\n") + "\n"
	}
	return &fileOp{kind: opAdd, path: path, content: content, line: line}
}

func (p *parser) parseUpdate(line int, path string) (*fileOp, error) {
	op := &fileOp{kind: opUpdate, path: path, line: line}
	p.i++
	if p.i < len(p.lines) {
		if t := strings.TrimSpace(p.lines[p.i]); strings.HasPrefix(t+" ", moveTo) {
			op.moveTo = headerPath(t, moveTo)
			if op.moveTo == "" {
				return nil, patchErr(p.lineNo(), "Move to has no path")
			}
			p.i++
		}
	}
	for p.i < len(p.lines) {
		raw := p.lines[p.i]
		if strings.TrimSpace(raw) == "" {
			p.i++ // blank lines between hunks
			continue
		}
		if isHeader(raw) {
			break
		}
		h, err := p.parseHunk(path, len(op.hunks) == 0)
		if err != nil {
			return nil, err
		}
		op.hunks = append(op.hunks, h)
	}
	if len(op.hunks) == 0 && op.moveTo == "" {
		return nil, patchErr(line, "Update File %q has no hunks; add lines starting with \"@@\", \" \", \"-\" or \"+\"", path)
	}
	return op, nil
}

func (p *parser) parseHunk(path string, first bool) (*hunk, error) {
	h := &hunk{line: p.lineNo()}
	raw := p.lines[p.i]
	if t := strings.TrimSpace(raw); strings.HasPrefix(t, "@@") {
		ctx := strings.TrimSpace(strings.TrimPrefix(t, "@@"))
		if unifiedHunkHdr.MatchString(ctx) || ctx == "@@" {
			ctx = ""
		}
		h.context = ctx
		p.i++
	} else if !first {
		return nil, patchErr(p.lineNo(), "in Update File %q a new hunk must start with \"@@\", not %q", path, clip(raw))
	}
	blanks := 0 // trailing raw blank lines, read as empty context lines
loop:
	for ; p.i < len(p.lines); p.i++ {
		raw := p.lines[p.i]
		if strings.TrimSpace(raw) == endOfFile {
			h.eof = true
			p.i++
			break
		}
		switch {
		case raw == "":
			h.lines = append(h.lines, hunkLine{' ', ""})
			blanks++
			continue
		case raw[0] == ' ' || raw[0] == '-' || raw[0] == '+':
			h.lines = append(h.lines, hunkLine{raw[0], raw[1:]})
		default:
			if !isHeader(raw) && !strings.HasPrefix(strings.TrimSpace(raw), "@@") {
				return nil, patchErr(p.lineNo(), "in Update File %q, %q: every line of a hunk must start with \" \" (context), \"-\" (remove) or \"+\" (add)", path, clip(raw))
			}
			break loop
		}
		blanks = 0
	}
	// Blank lines before the next hunk or file are separators, not context.
	if !h.eof {
		h.lines = h.lines[:len(h.lines)-blanks]
	}
	if len(h.lines) == 0 {
		return nil, patchErr(h.line, "in Update File %q a hunk has no lines", path)
	}
	for _, l := range h.lines {
		if l.kind != '+' {
			h.old = append(h.old, l.text)
		}
		if l.kind != '-' {
			h.new = append(h.new, l.text)
		}
	}
	return h, nil
}
