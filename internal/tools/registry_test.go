package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

type fakeTool struct {
	name   string
	schema json.RawMessage
}

var _ Tool = (*fakeTool)(nil)

func (f *fakeTool) Name() string        { return f.name }
func (f *fakeTool) Description() string { return "Fake tool " + f.name + "." }
func (f *fakeTool) Schema() json.RawMessage {
	if f.schema != nil {
		return f.schema
	}
	return Object(Prop{Name: "x", Type: TypeString, Description: "An x."})
}
func (f *fakeTool) Run(context.Context, *Env, json.RawMessage) (Result, error) {
	return Result{Text: f.name}, nil
}

func fake(name string) Tool { return &fakeTool{name: name} }

func TestNewRegistryErrors(t *testing.T) {
	tests := []struct {
		name  string
		tools []Tool
		want  string // substring of the error; "" for success
	}{
		{"empty", nil, ""},
		{"ok", []Tool{fake("read"), fake("apply_patch"), fake("x1")}, ""},
		{"duplicate", []Tool{fake("read"), fake("write"), fake("read")}, `registering tool 2: duplicate name "read"`},
		{"upper case", []Tool{fake("Read")}, `invalid name "Read"`},
		{"leading digit", []Tool{fake("1read")}, `invalid name "1read"`},
		{"leading underscore", []Tool{fake("_read")}, `invalid name "_read"`},
		{"dash", []Tool{fake("apply-patch")}, `invalid name "apply-patch"`},
		{"dot", []Tool{fake("fs.read")}, `invalid name "fs.read"`},
		{"empty name", []Tool{fake("")}, `invalid name ""`},
		{"too long", []Tool{fake("a" + strings.Repeat("b", MaxNameLen))}, "invalid name"},
		{"max length", []Tool{fake("a" + strings.Repeat("b", MaxNameLen-1))}, ""},
		{"nil tool", []Tool{fake("a"), nil}, "registering tool 1: tool is nil"},
		{"schema not object", []Tool{&fakeTool{name: "a", schema: json.RawMessage(`[]`)}}, `registering tool "a": schema is not a JSON object`},
		{"schema invalid", []Tool{&fakeTool{name: "a", schema: json.RawMessage(`{"type":`)}}, "schema is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.tools...)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("NewRegistry: %v", err)
				}
				if got := len(r.All()); got != len(tt.tools) {
					t.Errorf("len(All()) = %d, want %d", got, len(tt.tools))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewRegistry error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRegistryLookups(t *testing.T) {
	r, err := NewRegistry(fake("read"), fake("write"), fake("edit"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("get", func(t *testing.T) {
		tool, ok := r.Get("write")
		if !ok || tool.Name() != "write" {
			t.Fatalf("Get(write) = %v, %v", tool, ok)
		}
		if _, ok := r.Get("exec"); ok {
			t.Fatal("Get(exec) found a tool")
		}
	})
	t.Run("all in registration order", func(t *testing.T) {
		var names []string
		for _, tool := range r.All() {
			names = append(names, tool.Name())
		}
		if diff := cmp.Diff([]string{"read", "write", "edit"}, names); diff != "" {
			t.Errorf("All() (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"read", "write", "edit"}, r.Names()); diff != "" {
			t.Errorf("Names() (-want +got):\n%s", diff)
		}
	})
	t.Run("all is a copy", func(t *testing.T) {
		all := r.All()
		all[0] = fake("evil")
		if r.All()[0].Name() != "read" {
			t.Fatal("modifying All() changed the registry")
		}
	})
	t.Run("specs in given order", func(t *testing.T) {
		specs := r.Specs([]string{"edit", "nope", "read", "edit"})
		var names []string
		for _, s := range specs {
			names = append(names, s.Name)
		}
		if diff := cmp.Diff([]string{"edit", "read"}, names); diff != "" {
			t.Errorf("Specs names (-want +got):\n%s", diff)
		}
		want := llm.ToolSpec{Name: "edit", Description: "Fake tool edit.", Parameters: fake("edit").Schema()}
		if diff := cmp.Diff(want, specs[0]); diff != "" {
			t.Errorf("Specs[0] (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, Spec(fake("edit"))); diff != "" {
			t.Errorf("Spec (-want +got):\n%s", diff)
		}
	})
	t.Run("specs of nothing", func(t *testing.T) {
		if got := r.Specs(nil); len(got) != 0 {
			t.Errorf("Specs(nil) = %v", got)
		}
	})
	t.Run("concurrent reads", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 100 {
					r.Get("read")
					r.All()
					r.Specs([]string{"write", "read"})
				}
			})
		}
		wg.Wait()
	})
}

func TestJSONResult(t *testing.T) {
	res, err := JSONResult(map[string]any{"status": "ok", "n": 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{Text: `{"n":2,"status":"ok"}`}, res); diff != "" {
		t.Errorf("JSONResult (-want +got):\n%s", diff)
	}
	if _, err := JSONResult(make(chan int)); err == nil {
		t.Error("JSONResult(chan) succeeded")
	}
}
