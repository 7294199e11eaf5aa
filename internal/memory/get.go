package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"os"
	"path"
	"strings"

	"talon/internal/tools"
)

// Limits and defaults of memory_get.
const (
	defaultLines = 200
	maxLines     = 2000
)

var getSchema = tools.Object(
	tools.Prop{Name: "path", Type: tools.TypeString, Required: true,
		Description: `Memory file to read, relative to the workspace: "MEMORY.md", "memory.md" or a .md file under memory/, e.g. "memory/2025-01-15.md" (the paths memory_search returns).`},
	tools.Prop{Name: "from", Type: tools.TypeInteger,
		Description: "First line to return, counting from 1; default 1."},
	tools.Prop{Name: "lines", Type: tools.TypeInteger,
		Description: "How many lines to return, 1 to 2000; default 200."},
)

type getTool struct{}

func (*getTool) Name() string { return "memory_get" }

func (*getTool) Description() string {
	return "Read lines of one of the agent's memory files (MEMORY.md, memory.md or memory/**/*.md), " +
		"for example around a passage memory_search found. Returns the lines with their range and the file's line count."
}

func (*getTool) Schema() json.RawMessage { return getSchema }

// getResult is memory_get's answer. From and To are 1-based and inclusive;
// To is From-1 when no line was returned (an empty file).
type getResult struct {
	Path       string `json:"path"`
	From       int    `json:"from"`
	To         int    `json:"to"`
	TotalLines int    `json:"totalLines"`
	Text       string `json:"text"`
}

func (*getTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	if env == nil {
		return tools.Result{}, errors.New("running memory_get: no tool environment")
	}
	a, err := tools.ParseArgsFor(raw, getSchema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	p, err := a.String("path", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	from, err := a.Int("from", false, 1, math.MaxInt)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	n, err := a.Int("lines", false, 1, maxLines)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	from, n = max(from, 1), cmp.Or(n, defaultLines)
	p, err = memoryPath(p)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if env.AgentDir == "" {
		return tools.Errorf("%s: this agent has no workspace directory, so it has no memory files", p), nil
	}
	data, err := readMemory(env.AgentDir, p)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("%s: %w", p, err)), nil
	}
	res, err := lineRange(p, string(data), from, n)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	return tools.JSONResult(res)
}

// memoryPath checks the path the model gave and returns it cleaned.
func memoryPath(p string) (string, error) {
	switch {
	case strings.TrimSpace(p) == "":
		return "", errors.New(`argument "path" must not be empty`)
	case strings.IndexByte(p, 0) >= 0:
		return "", errors.New(`argument "path" contains a NUL byte`)
	case strings.Contains(p, `\`):
		return "", fmt.Errorf(`path %q contains a backslash; use / between directories`, p)
	case path.IsAbs(p):
		return "", fmt.Errorf("path %q is absolute; give the path relative to the workspace, such as MEMORY.md or memory/notes.md", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q contains ..; memory_get reads only MEMORY.md, memory.md and .md files under memory/", p)
		}
	}
	c := path.Clean(p)
	if !isMemoryName(c) {
		return "", fmt.Errorf("path %q is not a memory file; memory_get reads only MEMORY.md, memory.md and .md files under memory/ (use read for other files)", p)
	}
	return c, nil
}

// readMemory reads one memory file through an os.Root on the workspace,
// refusing symbolic links and files with more than one hard link, as the
// index does.
func readMemory(dir, p string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, errors.New("the agent workspace does not exist")
	}
	if err != nil {
		return nil, pathErr(err)
	}
	defer root.Close()
	fi, err := root.Lstat(p)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return nil, errors.New("no such memory file")
	case err != nil:
		return nil, pathErr(err)
	case fi.Mode()&os.ModeSymlink != 0:
		return nil, errors.New("is a symbolic link; memory files are not read through links")
	case fi.IsDir():
		return nil, errors.New("is a directory")
	case !fi.Mode().IsRegular():
		return nil, errors.New("is not a regular file")
	case fi.Size() > MaxFileBytes:
		return nil, fmt.Errorf("is %s; memory files are read up to %s (use read for larger files)", sizeText(fi.Size()), sizeText(MaxFileBytes))
	}
	if tools.SingleLink(fi, p) != nil {
		return nil, errors.New("has more than one hard link, and another name may be outside the workspace, so it is not read")
	}
	f, err := root.Open(p)
	if err != nil {
		return nil, pathErr(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, pathErr(err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("grew past %s while being read", sizeText(MaxFileBytes))
	}
	return data, nil
}

// lineRange cuts lines from..from+n-1 out of text.
func lineRange(p, text string, from, n int) (getResult, error) {
	text = strings.ToValidUTF8(strings.ReplaceAll(text, "\r\n", "\n"), "\uFFFD")
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // a final newline ends the last line, it starts none
	}
	total := len(lines)
	if from > max(total, 1) {
		return getResult{}, fmt.Errorf(`argument "from" is %d but %s has %d lines`, from, p, total)
	}
	to := min(total, from-1+n)
	res := getResult{Path: p, From: from, To: max(to, from-1), TotalLines: total}
	if to >= from {
		res.Text = strings.TrimSuffix(strings.Join(lines[from-1:to], ""), "\n")
	}
	return res, nil
}
