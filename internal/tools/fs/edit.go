package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"talon/internal/tools"
)

type editTool struct{}

var _ tools.Tool = (*editTool)(nil)

// NewEdit returns the edit tool.
func NewEdit() tools.Tool { return &editTool{} }

var editSchema = tools.Object(
	tools.Prop{Name: "path", Type: tools.TypeString, Required: true,
		Description: "Path of the file to change, relative to the workspace root."},
	tools.Prop{Name: "old_string", Type: tools.TypeString, Required: true,
		Description: "The exact text to replace, including whitespace and indentation. It must occur exactly once unless replace_all is true; include surrounding lines to make it unique."},
	tools.Prop{Name: "new_string", Type: tools.TypeString, Required: true,
		Description: "The text to put in its place; empty to delete it."},
	tools.Prop{Name: "replace_all", Type: tools.TypeBoolean,
		Description: "Replace every occurrence of old_string instead of requiring exactly one. Default false."},
)

func (*editTool) Name() string { return "edit" }

func (*editTool) Description() string {
	return "Replace exact text in an existing workspace file. " +
		"old_string must match the file exactly, whitespace and indentation included, so read the file first; " +
		"it must be unique unless replace_all is true. The file is rewritten atomically. " +
		"For several changes in one or more files, apply_patch does them in one call."
}

func (*editTool) Schema() json.RawMessage { return editSchema }

func (*editTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	root, err := workspace(env, "edit")
	if err != nil {
		return tools.Result{}, err
	}
	if env.ReadOnly {
		return tools.Errorf(readOnlyMsg), nil
	}
	a, err := tools.ParseArgsFor(raw, editSchema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	p, err := a.String("path", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	oldS, err := a.String("old_string", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	newS, err := a.String("new_string", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	all, err := a.Bool("replace_all", false)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if oldS == "" {
		return tools.Errorf("old_string must not be empty; to create or overwrite a file, use write"), nil
	}
	if oldS == newS {
		return tools.Errorf("old_string and new_string are the same; nothing would change"), nil
	}
	rel, err := relPath(root, p)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	target, err := resolveLink(root, rel)
	if err != nil {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	data, err := readRegular(root, p, target)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	content := string(data)

	n := strings.Count(content, oldS)
	if n == 0 && strings.Contains(content, "\r\n") && strings.Contains(oldS, "\n") && !strings.Contains(oldS, "\r") {
		// The model saw CRLF lines as LF lines; match as the file has them.
		if crlfOld := strings.ReplaceAll(oldS, "\n", "\r\n"); strings.Contains(content, crlfOld) {
			oldS, newS = crlfOld, strings.ReplaceAll(newS, "\n", "\r\n")
			n = strings.Count(content, oldS)
		}
	}
	switch {
	case n == 0:
		return tools.Errorf("old_string was not found in %q. %s", p, notFoundHint(content, oldS)), nil
	case n > 1 && !all:
		return tools.Errorf("old_string occurs %d times in %q; include more surrounding lines to make it unique, or set replace_all to true to replace all %d", n, p, n), nil
	}
	if all {
		content = strings.ReplaceAll(content, oldS, newS)
	} else {
		content = strings.Replace(content, oldS, newS, 1)
	}
	if len(content) > MaxWriteBytes {
		return tools.Errorf("the edited file would be %d bytes; the limit is %d MiB", len(content), MaxWriteBytes>>20), nil
	}
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	if _, err := atomicWrite(root, target, []byte(content)); err != nil {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	return tools.Result{Text: fmt.Sprintf("edited %q: %s", p, plural(n, "replacement"))}, nil
}

// notFoundHint tells the model why an exact match may have failed.
func notFoundHint(content, old string) string {
	if strings.Contains(squashSpace(content), squashSpace(old)) {
		return "Text that differs only in whitespace or indentation exists; read the file again and copy old_string exactly, including spaces, tabs and line breaks."
	}
	if first, _, _ := strings.Cut(strings.TrimSpace(old), "\n"); first != "" && strings.Contains(content, strings.TrimSpace(first)) {
		return fmt.Sprintf("Its first line %q occurs, but the lines after it differ; read the file again and copy old_string exactly.", strings.TrimSpace(first))
	}
	return "It must match the current file exactly, including whitespace and indentation; read the file again and copy the text from it."
}

// squashSpace collapses every run of white space to one space.
func squashSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
