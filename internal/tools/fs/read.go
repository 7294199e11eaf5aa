package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"talon/internal/tools"
)

// Limits of read.
const (
	// MaxReadLines is the default and largest number of lines one read
	// returns.
	MaxReadLines = 2000
	// MaxReadBytes is the most file text one read returns.
	MaxReadBytes = 256 << 10
	// MaxListEntries is the most directory entries one read lists.
	MaxListEntries = 1000
	// binarySniff is how much of a file is checked for NUL bytes.
	binarySniff = 8 << 10
)

type readTool struct{}

var _ tools.Tool = (*readTool)(nil)

// NewRead returns the read tool.
func NewRead() tools.Tool { return &readTool{} }

var readSchema = tools.Object(
	tools.Prop{Name: "path", Type: tools.TypeString, Required: true,
		Description: `Path of the file or directory, relative to the workspace root, e.g. "src/main.go"; "." is the root.`},
	tools.Prop{Name: "offset", Type: tools.TypeInteger,
		Description: "Line number to start at, counting from 1. Default 1."},
	tools.Prop{Name: "limit", Type: tools.TypeInteger,
		Description: fmt.Sprintf("Maximum number of lines to return, 1 to %d. Default %d.", MaxReadLines, MaxReadLines)},
)

func (*readTool) Name() string { return "read" }

func (*readTool) Description() string {
	return "Read a text file in the workspace, or list a directory. " +
		fmt.Sprintf("Returns the file's text as it is, at most %d lines and %d KiB per call; ", MaxReadLines, MaxReadBytes>>10) +
		"a note in square brackets at the end says when lines were left out and which offset continues. " +
		"Binary files are not shown. For a directory, returns its entries sorted by name, with \"/\" after subdirectories."
}

func (*readTool) Schema() json.RawMessage { return readSchema }

func (*readTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	root, err := workspace(env, "read")
	if err != nil {
		return tools.Result{}, err
	}
	a, err := tools.ParseArgsFor(raw, readSchema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	p, err := a.String("path", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	offset, limit := 1, MaxReadLines
	if a.Has("offset") {
		if offset, err = a.Int("offset", false, 1, math.MaxInt); err != nil {
			return tools.ErrorResult(err), nil
		}
	}
	if a.Has("limit") {
		if limit, err = a.Int("limit", false, 1, MaxReadLines); err != nil {
			return tools.ErrorResult(err), nil
		}
	}
	rel, err := relPath(root, p)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	fi, err := root.Stat(rel)
	if err != nil {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return tools.Errorf("%q is not a regular file or directory", p), nil
	}
	// O_NONBLOCK: should the file have become a FIFO since Stat, do not hang.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	if fi.IsDir() {
		return listDir(f, p)
	}
	if !fi.Mode().IsRegular() {
		return tools.Errorf("%q is not a regular file or directory", p), nil
	}
	if err := tools.SingleLink(fi, p); err != nil {
		return tools.ErrorResult(err), nil
	}
	return readText(ctx, f, p, fi.Size(), offset, limit)
}

func listDir(f *os.File, p string) (tools.Result, error) {
	entries, err := f.ReadDir(-1)
	if err != nil {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	if len(entries) == 0 {
		return tools.Result{Text: fmt.Sprintf("%q is an empty directory", p)}, nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
		if e.IsDir() {
			names[i] += "/"
		}
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%q is a directory with %s:\n", p, plural(len(names), "entry"))
	shown := names[:min(len(names), MaxListEntries)]
	for _, n := range shown {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	if len(shown) < len(names) {
		fmt.Fprintf(&b, "[first %d of %d entries shown]\n", len(shown), len(names))
	}
	return tools.Result{Text: strings.TrimSuffix(b.String(), "\n")}, nil
}

// readText streams the file once: it skips to offset, keeps up to limit
// whole lines within MaxReadBytes, and counts the remaining lines for the
// note. Only a first line longer than MaxReadBytes is cut mid-line.
func readText(ctx context.Context, f io.Reader, p string, size int64, offset, limit int) (tools.Result, error) {
	head := make([]byte, binarySniff)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	head = head[:n]
	if bytes.IndexByte(head, 0) >= 0 {
		return tools.Errorf("binary file, %d bytes", size), nil
	}
	r := io.MultiReader(bytes.NewReader(head), f)

	var (
		out      bytes.Buffer
		line     []byte // the window line being collected
		lineNo   = 1    // the line the next byte belongs to
		lastFull = 0    // last line added to out whole
		cut      = 0    // a line cut short because it alone exceeds MaxReadBytes
		full     bool   // out can take no more lines
		endsNL   bool
		total    int64
		buf      = make([]byte, 64<<10)
	)
	end := offset + limit // first line after the window
	if offset > math.MaxInt-limit {
		end = math.MaxInt
	}
	for {
		if err := ctx.Err(); err != nil {
			return tools.Result{}, err
		}
		n, rerr := r.Read(buf)
		chunk := buf[:n]
		total += int64(n)
		if n > 0 {
			endsNL = chunk[n-1] == '\n'
		}
		for len(chunk) > 0 {
			if full || lineNo >= end {
				lineNo += bytes.Count(chunk, []byte{'\n'})
				break
			}
			i := bytes.IndexByte(chunk, '\n')
			seg := chunk
			if i >= 0 {
				seg = chunk[:i+1]
			}
			chunk = chunk[len(seg):]
			if lineNo >= offset {
				if out.Len()+len(line)+len(seg) > MaxReadBytes {
					if lastFull == 0 {
						// The first line alone is too long: show its start.
						line = append(line, seg...)
						out.Write(trimPartialRune(line[:MaxReadBytes-out.Len()]))
						cut = lineNo
					}
					full = true
					line = nil
				} else {
					line = append(line, seg...)
				}
			}
			if i >= 0 {
				if lineNo >= offset && !full {
					out.Write(line)
					line = line[:0]
					lastFull = lineNo
				}
				lineNo++
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return tools.ErrorResult(fsError(p, rerr)), nil
		}
	}
	// A last line without a newline is still a line.
	if len(line) > 0 && !full {
		out.Write(line)
		lastFull = lineNo
	}
	lines := lineNo - 1
	if total > 0 && !endsNL {
		lines = lineNo
	}
	if lines == 0 {
		if offset > 1 {
			return tools.Errorf("offset %d is past the end of %q, which is empty", offset, p), nil
		}
		return tools.Result{Text: fmt.Sprintf("[%q is empty]", p)}, nil
	}
	if offset > lines {
		return tools.Errorf("offset %d is past the end of %q, which has %s", offset, p, plural(lines, "line")), nil
	}

	text := out.String()
	var note string
	switch {
	case cut > 0:
		note = fmt.Sprintf("[line %d is longer than %d KiB and was cut", cut, MaxReadBytes>>10)
		if cut < lines {
			note += fmt.Sprintf("; the file has %s; call read with offset=%d to continue", plural(lines, "line"), cut+1)
		}
		note += "]"
	case lastFull < lines && full:
		note = fmt.Sprintf("[lines %d-%d of %d shown (output limit %d KiB); call read with offset=%d to continue]",
			offset, lastFull, lines, MaxReadBytes>>10, lastFull+1)
	case lastFull < lines:
		note = fmt.Sprintf("[lines %d-%d of %d shown; call read with offset=%d to continue]", offset, lastFull, lines, lastFull+1)
	case offset > 1:
		note = fmt.Sprintf("[lines %d-%d of %d shown]", offset, lastFull, lines)
	}
	if note != "" {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += note
	}
	return tools.Result{Text: text}, nil
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
