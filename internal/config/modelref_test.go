package config

import (
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
