package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestModelRefs(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
		err       string // in the validation error at agents.defaults.imageModel
	}{
		{"absent", `{}`, nil, ""},
		{"null", `{agents:{defaults:{imageModel:null}}}`, nil, ""},
		{"string", `{agents:{defaults:{imageModel:" openai/gpt-4o "}}}`, []string{"openai/gpt-4o"}, ""},
		{"primary", `{agents:{defaults:{imageModel:{primary:"a/b"}}}}`, []string{"a/b"}, ""},
		{"fallbacks", `{agents:{defaults:{imageModel:{primary:"a/b",fallbacks:["c/d","e/f"]}}}}`, []string{"a/b", "c/d", "e/f"}, ""},
		{"empty string", `{agents:{defaults:{imageModel:""}}}`, nil, "empty string"},
		{"number", `{agents:{defaults:{imageModel:4}}}`, nil, "got number"},
		{"no primary", `{agents:{defaults:{imageModel:{fallbacks:["c/d"]}}}}`, nil, `"primary"`},
		{"fallbacks not a list", `{agents:{defaults:{imageModel:{primary:"a/b",fallbacks:"c/d"}}}}`, nil, `"fallbacks"`},
		{"fallback not a string", `{agents:{defaults:{imageModel:{primary:"a/b",fallbacks:["c/d",3]}}}}`, nil, "fallbacks[1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse("test.json", []byte(c.src))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), "agents.defaults.imageModel") || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Parse error %v, want one at agents.defaults.imageModel with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := ModelRefs(f.Config.Agents.Defaults.ImageModel)
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("ModelRefs = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestParseModelRef pins the one reading of a model reference. Before it,
// three parsers disagreed: the gateway's sessions.patch read "Inspect" in
// any case as the offline model, the provider resolver only "inspect" and
// "talon/inspect" exactly, and the runner called every reference without a
// slash provider "talon". The case-insensitive reading won (see
// ParseModelRef): "INSPECT" now resolves instead of failing with "no
// provider".
func TestParseModelRef(t *testing.T) {
	cases := []struct {
		in   string
		want ModelRef
		err  error
	}{
		{"openai/gpt-4o", ModelRef{"openai", "gpt-4o"}, nil},
		{"  anthropic/claude-sonnet-4-5\n", ModelRef{"anthropic", "claude-sonnet-4-5"}, nil},
		{"openrouter/google/gemini-3-flash", ModelRef{"openrouter", "google/gemini-3-flash"}, nil},
		{"inspect", InspectRef, nil},
		{"Inspect", InspectRef, nil},
		{" INSPECT ", InspectRef, nil},
		{"talon/inspect", InspectRef, nil},
		{"Talon/Inspect", InspectRef, nil},
		{"talon/other", ModelRef{"talon", "other"}, nil},
		{"inspector", ModelRef{Model: "inspector"}, nil},
		{"gpt-4o", ModelRef{Model: "gpt-4o"}, nil},
		{"MyProv/Model-X", ModelRef{"MyProv", "Model-X"}, nil}, // kept as written
		{"a /b", ModelRef{"a ", "b"}, nil},
		{"", ModelRef{}, ErrNoModel},
		{" \t", ModelRef{}, ErrNoModel},
		{"/gpt-4o", ModelRef{}, ErrEmptyPart},
		{"openai/", ModelRef{}, ErrEmptyPart},
		{"/", ModelRef{}, ErrEmptyPart},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseModelRef(c.in)
			if !errors.Is(err, c.err) || got != c.want {
				t.Errorf("ParseModelRef(%q) = %#v, %v; want %#v, %v", c.in, got, err, c.want, c.err)
			}
		})
	}
	if s := InspectRef.String(); s != "talon/inspect" {
		t.Errorf("InspectRef.String() = %q", s)
	}
	if s := (ModelRef{Model: "gpt-4o"}).String(); s != "gpt-4o" {
		t.Errorf("bare String() = %q", s)
	}
}

// FuzzParseModelRef: the parser never panics, a reference it reads is
// written back as the same reference (String parses to itself), and the
// offline model is exactly the two spellings in any case.
func FuzzParseModelRef(f *testing.F) {
	for _, s := range []string{"openai/gpt-4o", "inspect", "Talon/INSPECT", "a//b", "/x", "x/", " ", "openrouter/google/gemini", "ä/ö", "talon/inspect/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseModelRef(s)
		trimmed := strings.TrimSpace(s)
		if err != nil {
			if m != (ModelRef{}) {
				t.Fatalf("ParseModelRef(%q) = %#v with error %v", s, m, err)
			}
			if !errors.Is(err, ErrNoModel) && !errors.Is(err, ErrEmptyPart) {
				t.Fatalf("ParseModelRef(%q): unexpected error %v", s, err)
			}
			return
		}
		if m.Model == "" || strings.Contains(m.Provider, "/") {
			t.Fatalf("ParseModelRef(%q) = %#v: empty model or a slash in the provider", s, m)
		}
		inspect := strings.EqualFold(trimmed, "inspect") || strings.EqualFold(trimmed, "talon/inspect")
		if m.IsInspect() != inspect {
			t.Fatalf("ParseModelRef(%q).IsInspect() = %v, want %v", s, m.IsInspect(), inspect)
		}
		if !inspect && m.String() != trimmed {
			t.Fatalf("ParseModelRef(%q).String() = %q, want %q", s, m.String(), trimmed)
		}
		if again, err := ParseModelRef(m.String()); err != nil || again != m {
			t.Fatalf("ParseModelRef(%q) = %#v, but its String %q reads as %#v, %v", s, m, m.String(), again, err)
		}
	})
}

func TestModelPrimary(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"absent", `{}`, ""},
		{"string", `{agents: {defaults: {model: " a/b "}}}`, "a/b"},
		{"primary", `{agents: {defaults: {model: {primary: "a/b", fallbacks: 3}}}}`, "a/b"},
		{"no primary", `{agents: {defaults: {model: {fallbacks: ["a/b"]}}}}`, ""},
		{"number", `{agents: {defaults: {model: 4}}}`, ""},
		{"null", `{agents: {defaults: {model: null}}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ModelPrimary(mustParse(t, c.src).Agents.Defaults.Model); got != c.want {
				t.Errorf("ModelPrimary = %q, want %q", got, c.want)
			}
		})
	}
}
