package fs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"
	"strings"

	"talon/internal/tools"
)

type applyPatchTool struct{}

var _ tools.Tool = (*applyPatchTool)(nil)

// NewApplyPatch returns the apply_patch tool.
func NewApplyPatch() tools.Tool { return &applyPatchTool{} }

var applyPatchSchema = tools.Object(
	tools.Prop{Name: "input", Type: tools.TypeString, Required: true,
		Description: `The whole patch, from "*** Begin Patch" to "*** End Patch".`},
)

func (*applyPatchTool) Name() string { return "apply_patch" }

func (*applyPatchTool) Description() string {
	return `Add, delete, move and change files in the workspace with one patch. Every change is checked first; if any fails, no file is changed. Format:
*** Begin Patch
*** Add File: path/new.txt
+each line of the new file, prefixed with +
*** Delete File: path/old.txt
*** Update File: path/file.go
*** Move to: path/renamed.go (optional)
@@ func example() (optional: a line near the change, to find the spot)
 an unchanged line, prefixed with a space
-a line to remove
+a line to add
*** End of File (optional: the hunk ends at the end of the file)
*** End Patch
Paths are relative to the workspace root. Give about 3 unchanged lines before and after each change, copied exactly; start each further hunk in a file with @@.`
}

func (*applyPatchTool) Schema() json.RawMessage { return applyPatchSchema }

func (*applyPatchTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	root, err := workspace(env, "apply_patch")
	if err != nil {
		return tools.Result{}, err
	}
	if env.ReadOnly {
		return tools.Errorf(readOnlyMsg), nil
	}
	a, err := tools.ParseArgsFor(raw, applyPatchSchema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	input, err := a.String("input", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if len(input) > MaxWriteBytes {
		return tools.Errorf("the patch is %d bytes; the limit is %d MiB", len(input), MaxWriteBytes>>20), nil
	}
	changed, err := applyPatch(ctx, root, input)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Errorf("apply_patch failed and changed nothing. %v", err), nil
	}
	return tools.Result{Text: "Success. Updated the following files:\n" + strings.Join(changed, "\n")}, nil
}

// fileState is a file as the patch sees it while it is checked.
type fileState struct {
	exists bool
	data   []byte
}

// overlay holds the files a patch touches: their state on disk when first
// seen and as the patch has left them so far. Keys are resolved paths.
type overlay struct {
	root  *os.Root
	order []string
	orig  map[string]fileState
	cur   map[string]fileState
}

// load returns the current state of the file at the resolved path p.
func (o *overlay) load(shown, p string) (fileState, error) {
	if st, ok := o.cur[p]; ok {
		return st, nil
	}
	var st fileState
	fi, err := o.root.Stat(p)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
	case err != nil:
		return st, fsError(shown, err)
	case fi.IsDir():
		return st, fmt.Errorf("%q is a directory", shown)
	default:
		data, err := readRegular(o.root, shown, p)
		if err != nil {
			return st, err
		}
		st = fileState{exists: true, data: data}
	}
	o.order = append(o.order, p)
	o.orig[p] = st
	o.cur[p] = st
	return st, nil
}

// resolve checks a path from the patch and follows links in its last
// element, as write does.
func (o *overlay) resolve(shown string) (string, error) {
	rel, err := relPath(o.root, shown)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", fmt.Errorf("%q is the workspace directory, not a file", shown)
	}
	p, err := resolveLink(o.root, rel)
	if err != nil {
		return "", fsError(shown, err)
	}
	return p, nil
}

// applyPatch parses input, checks every operation against the files and
// only then writes them. It returns one line per operation: "A path",
// "M path", "D path", or "M new (moved from old)". On an error no file has
// changed; should writing itself fail half-way, the files already written
// are restored.
func applyPatch(ctx context.Context, root *os.Root, input string) ([]string, error) {
	ops, err := parsePatch(input)
	if err != nil {
		return nil, err
	}
	o := &overlay{root: root, orig: map[string]fileState{}, cur: map[string]fileState{}}
	var changed []string
	for _, op := range ops {
		line, err := o.check(op)
		if err != nil {
			return nil, fmt.Errorf("%s %q (patch line %d): %w", op.kind.header(), op.path, op.line, err)
		}
		changed = append(changed, line)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := o.commit(); err != nil {
		return nil, err
	}
	return changed, nil
}

// check applies one operation to the overlay.
func (o *overlay) check(op *fileOp) (string, error) {
	p, err := o.resolve(op.path)
	if err != nil {
		return "", err
	}
	st, err := o.load(op.path, p)
	if err != nil {
		return "", err
	}
	switch op.kind {
	case opAdd:
		if st.exists {
			return "", errors.New("the file already exists; use \"*** Update File\" to change it, or delete it first")
		}
		o.cur[p] = fileState{exists: true, data: []byte(op.content)}
		return "A " + op.path, nil
	case opDelete:
		if !st.exists {
			return "", errors.New("the file does not exist")
		}
		o.cur[p] = fileState{}
		return "D " + op.path, nil
	}
	if !st.exists {
		return "", errors.New("the file does not exist; use \"*** Add File\" to create it")
	}
	data, err := applyHunks(st.data, op.hunks)
	if err != nil {
		return "", err
	}
	if len(data) > MaxWriteBytes {
		return "", fmt.Errorf("the file would be %d bytes; the limit is %d MiB", len(data), MaxWriteBytes>>20)
	}
	if op.moveTo == "" {
		o.cur[p] = fileState{exists: true, data: data}
		return "M " + op.path, nil
	}
	dst, err := o.resolve(op.moveTo)
	if err != nil {
		return "", fmt.Errorf("Move to: %w", err)
	}
	if dst == p {
		o.cur[p] = fileState{exists: true, data: data}
		return "M " + op.path, nil
	}
	dstSt, err := o.load(op.moveTo, dst)
	if err != nil {
		return "", fmt.Errorf("Move to: %w", err)
	}
	if dstSt.exists {
		return "", fmt.Errorf("Move to %q: that file already exists", op.moveTo)
	}
	o.cur[p] = fileState{}
	o.cur[dst] = fileState{exists: true, data: data}
	return fmt.Sprintf("M %s (moved from %s)", op.moveTo, op.path), nil
}

// commit writes the overlay to disk, undoing what it wrote if a write
// fails.
func (o *overlay) commit() error {
	var done []string
	for _, p := range o.order {
		before, after := o.orig[p], o.cur[p]
		if before.exists == after.exists && (!after.exists || string(before.data) == string(after.data)) {
			continue
		}
		var err error
		if after.exists {
			_, err = atomicWrite(o.root, p, after.data)
		} else {
			err = removeFile(o.root, p)
		}
		if err != nil {
			o.rollback(done)
			return fmt.Errorf("writing %q failed (%v); the files written before it were restored", p, fsError(p, err))
		}
		done = append(done, p)
	}
	return nil
}

func (o *overlay) rollback(done []string) {
	for _, p := range slices.Backward(done) {
		if before := o.orig[p]; before.exists {
			atomicWrite(o.root, p, before.data)
		} else {
			removeFile(o.root, p)
		}
	}
}

// applyHunks applies an Update File's hunks to a file's content. Hunks are
// found in order, each after the previous one: first by exact match, then
// ignoring trailing white space. A hunk with no old lines inserts after
// its @@ line, or at the end of the file when it has none. A file with
// CRLF line ends keeps them; one without a final newline stays so.
func applyHunks(data []byte, hunks []*hunk) ([]byte, error) {
	content := string(data)
	crlf := usesCRLF(content)
	endsNL := content == "" || strings.HasSuffix(content, "\n")
	var lines []string
	if content != "" {
		lines = strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	}
	if crlf {
		for i, l := range lines {
			lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	type repl struct {
		start, n int
		new      []string
	}
	var repls []repl
	at := 0 // hunks are searched for from here on
	for i, h := range hunks {
		where := fmt.Sprintf("hunk %d (patch line %d)", i+1, h.line)
		if h.context != "" {
			idx := seekContext(lines, h.context, at)
			if idx < 0 {
				return nil, fmt.Errorf("%s: the @@ line %q was not found%s", where, h.context, afterText(at))
			}
			at = idx + 1
		}
		if len(h.old) == 0 {
			ins := len(lines)
			if h.context != "" {
				ins = at
			}
			repls = append(repls, repl{ins, 0, h.new})
			continue
		}
		start := seek(lines, h.old, at, h.eof)
		if start < 0 && h.context != "" {
			// The @@ line may itself be the first line of the hunk.
			start = seek(lines, h.old, at-1, h.eof)
		}
		if start < 0 {
			return nil, fmt.Errorf("%s: these lines were not found%s%s:\n%s\nRead the file again and copy the unchanged and removed lines exactly.",
				where, afterContext(h), endText(h), quoteLines(h.old))
		}
		repls = append(repls, repl{start, len(h.old), h.replacement(lines[start : start+len(h.old)])})
		at = start + len(h.old)
	}
	slices.SortStableFunc(repls, func(a, b repl) int { return a.start - b.start })
	for _, r := range slices.Backward(repls) {
		lines = slices.Replace(lines, r.start, r.start+r.n, r.new...)
	}
	sep := "\n"
	if crlf {
		sep = "\r\n"
	}
	out := strings.Join(lines, sep)
	if len(lines) > 0 && endsNL {
		out += sep
	}
	return []byte(out), nil
}

func afterText(at int) string {
	if at == 0 {
		return ""
	}
	return fmt.Sprintf(" after line %d (where the previous hunk ended)", at)
}

func afterContext(h *hunk) string {
	if h.context == "" {
		return ""
	}
	return fmt.Sprintf(" after the @@ line %q", h.context)
}

func endText(h *hunk) string {
	if h.eof {
		return " at the end of the file"
	}
	return ""
}

// quoteLines shows the lines a hunk expected, at most 20 of them.
func quoteLines(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if i == 20 {
			fmt.Fprintf(&b, "... (%d more)\n", len(lines)-20)
			break
		}
		b.WriteString("  ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// usesCRLF reports whether every line end of s is CRLF.
func usesCRLF(s string) bool {
	n := strings.Count(s, "\n")
	return n > 0 && strings.Count(s, "\r\n") == n
}

// seek finds pat in lines at or after from: an exact match first, then one
// ignoring trailing white space. With eof the match must end the file.
func seek(lines, pat []string, from int, eof bool) int {
	if len(pat) > len(lines) {
		return -1
	}
	for _, eq := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return strings.TrimRight(a, " \t\r") == strings.TrimRight(b, " \t\r") },
	} {
		matchAt := func(i int) bool {
			for j, p := range pat {
				if !eq(lines[i+j], p) {
					return false
				}
			}
			return true
		}
		if eof {
			if i := len(lines) - len(pat); i >= from && matchAt(i) {
				return i
			}
			continue
		}
		for i := from; i+len(pat) <= len(lines); i++ {
			if matchAt(i) {
				return i
			}
		}
	}
	return -1
}

// seekContext finds the line an @@ header names. The header text was
// trimmed, so indentation of the file's line is ignored too.
func seekContext(lines []string, ctx string, from int) int {
	if i := seek(lines, []string{ctx}, from, false); i >= 0 {
		return i
	}
	for i := from; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == ctx {
			return i
		}
	}
	return -1
}
