package fs

import (
	"context"
	"encoding/json"
	"fmt"

	"talon/internal/tools"
)

type writeTool struct{}

var _ tools.Tool = (*writeTool)(nil)

// NewWrite returns the write tool.
func NewWrite() tools.Tool { return &writeTool{} }

var writeSchema = tools.Object(
	tools.Prop{Name: "path", Type: tools.TypeString, Required: true,
		Description: `Path of the file to write, relative to the workspace root, e.g. "notes/todo.md". Missing parent directories are created.`},
	tools.Prop{Name: "content", Type: tools.TypeString, Required: true,
		Description: "The complete new content of the file."},
)

func (*writeTool) Name() string { return "write" }

func (*writeTool) Description() string {
	return "Create a file in the workspace, or replace an existing file's whole content. " +
		"The file is replaced atomically, so readers never see half a file. " +
		fmt.Sprintf("At most %d MiB. To change part of an existing file, use edit instead.", MaxWriteBytes>>20)
}

func (*writeTool) Schema() json.RawMessage { return writeSchema }

func (*writeTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	root, err := workspace(env, "write")
	if err != nil {
		return tools.Result{}, err
	}
	if env.ReadOnly {
		return tools.Errorf(readOnlyMsg), nil
	}
	a, err := tools.ParseArgsFor(raw, writeSchema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	p, err := a.String("path", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	content, err := a.String("content", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if len(content) > MaxWriteBytes {
		return tools.Errorf("content is %d bytes; the limit is %d MiB", len(content), MaxWriteBytes>>20), nil
	}
	rel, err := relPath(root, p)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if rel == "." {
		return tools.Errorf("%q is the workspace directory, not a file", p), nil
	}
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	target, err := resolveLink(root, rel)
	if err != nil {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	created, err := atomicWrite(root, target, []byte(content))
	if err != nil {
		return tools.ErrorResult(fsError(p, err)), nil
	}
	verb := "replaced"
	if created {
		verb = "created"
	}
	return tools.Result{Text: fmt.Sprintf("%s %q (%s)", verb, p, plural(len(content), "byte"))}, nil
}
