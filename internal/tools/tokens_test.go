package tools

import (
	"encoding/json"
	"sync"
	"testing"

	"talon/internal/llm"
)

func TestSchemaTokens(t *testing.T) {
	spec := llm.ToolSpec{
		Name:        "read",
		Description: "Read a text file from the workspace.",
		Parameters: Object(
			Prop{Name: "path", Type: TypeString, Description: "Workspace-relative path.", Required: true},
			Prop{Name: "limit", Type: TypeInteger, Description: "Maximum lines."},
		),
	}
	first := SchemaTokens(spec)
	if first <= 0 {
		t.Fatalf("SchemaTokens = %d, want > 0", first)
	}

	t.Run("known value", func(t *testing.T) {
		// o200k_base counts, fixed so an encoder change is noticed.
		if got, want := countTokens("hello world"), 2; got != want {
			t.Errorf("countTokens(hello world) = %d, want %d", got, want)
		}
		if got := countTokens(""); got != 0 {
			t.Errorf("countTokens(\"\") = %d", got)
		}
	})

	t.Run("stable and cached", func(t *testing.T) {
		before := tokenizeCalls.Load()
		for range 5 {
			if got := SchemaTokens(spec); got != first {
				t.Fatalf("SchemaTokens changed: %d then %d", first, got)
			}
		}
		if calls := tokenizeCalls.Load() - before; calls != 0 {
			t.Errorf("repeat calls tokenized %d times, want 0", calls)
		}
	})

	t.Run("formatting does not count", func(t *testing.T) {
		var indented json.RawMessage
		indented, _ = json.MarshalIndent(json.RawMessage(spec.Parameters), "", "    ")
		other := spec
		other.Parameters = indented
		before := tokenizeCalls.Load()
		if got := SchemaTokens(other); got != first {
			t.Errorf("indented schema: %d tokens, want %d", got, first)
		}
		if calls := tokenizeCalls.Load() - before; calls != 0 {
			t.Errorf("indented copy tokenized %d times, want 0 (same compact definition)", calls)
		}
	})

	t.Run("longer description costs more", func(t *testing.T) {
		longer := spec
		longer.Description += " Lines longer than the limit are cut, and binary files are refused."
		if got := SchemaTokens(longer); got <= first {
			t.Errorf("longer description: %d tokens, want more than %d", got, first)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				s := spec
				s.Name = "read_" + string(rune('a'+i))
				if SchemaTokens(s) <= 0 {
					t.Error("SchemaTokens <= 0")
				}
			})
		}
		wg.Wait()
	})
}

func BenchmarkSchemaTokensCached(b *testing.B) {
	spec := llm.ToolSpec{Name: "x", Description: "y", Parameters: Object()}
	SchemaTokens(spec)
	for b.Loop() {
		SchemaTokens(spec)
	}
}
