package provider

import (
	"errors"
	"testing"

	"talon/internal/config"
)

// TestChooseModel: agents.defaults.models is an allowlist with aliases;
// without it the providers' models are the catalog; a model whose
// provider cannot be reached is refused with the resolver's reason. Every
// refusal is a *ChoiceError.
func TestChooseModel(t *testing.T) {
	parse := func(js string) *config.Config {
		f, err := config.Parse("talon.json", []byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return f.Config
	}
	allow := parse(`{"agents":{"defaults":{"model":"local/small","models":{"local/big":{"alias":"Fast"},"openai/gpt-4o":{}}}},
		"models":{"providers":{"local":{"baseUrl":"http://127.0.0.1:9/v1","models":[{"id":"big"},{"id":"small"},{"id":"other"}]}}}}`)
	open := parse(`{"models":{"providers":{"local":{"baseUrl":"http://127.0.0.1:9/v1","models":[{"id":"big"}]}}}}`)
	noKey := func(string) string { return "" }
	withKey := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-test"
		}
		return ""
	}
	cases := []struct {
		cfg  *config.Config
		env  func(string) string
		in   string
		want string // model, or the error
	}{
		{allow, noKey, "fast", "local/big"},
		{allow, noKey, "big", "local/big"}, // a bare id takes the agent's provider
		{allow, noKey, "local/small", "local/small"},
		{allow, noKey, "inspect", "talon/inspect"},
		{allow, noKey, "local/other", "model not allowed: local/other"},
		{allow, noKey, "openai/gpt-4o", "invalid model: openai: no API key: set OPENAI_API_KEY or models.providers.openai.apiKey"},
		{allow, withKey, "OpenAI/GPT-4o", "openai/gpt-4o"},
		{open, noKey, "local/big", "local/big"},
		{open, noKey, "local/other", "model not allowed: local/other"},
		{open, noKey, "talon/inspect", "talon/inspect"},
	}
	for _, tc := range cases {
		m, err := ChooseModel(tc.cfg, Options{Env: tc.env}, "main", tc.in)
		got := m.String()
		if err != nil {
			got = err.Error()
			if _, ok := errors.AsType[*ChoiceError](err); !ok {
				t.Errorf("%q: %T is not a *ChoiceError", tc.in, err)
			}
		}
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestChooseThinking: OpenClaw's aliases read as levels, "xhigh" only for
// a model whose catalog entry reasons, and a stored "xhigh" lowered to
// "high" when the session moves to a model without it.
func TestChooseThinking(t *testing.T) {
	f, err := config.Parse("talon.json", []byte(`{"models":{"providers":{"local":{"baseUrl":"http://127.0.0.1:9/v1",
		"models":[{"id":"deep","reasoning":true},{"id":"plain"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config
	deep := config.ModelRef{Provider: "Local", Model: "DEEP"} // the catalog matches in any case
	plain := config.ModelRef{Provider: "local", Model: "plain"}
	cases := []struct {
		name string
		m    config.ModelRef
		in   string
		want string // level, or the error
	}{
		{"alias", plain, " Think-Hard ", "low"},
		{"none is off", plain, "none", "off"},
		{"xhigh for a reasoning model", deep, "extra_high", "xhigh"},
		{"xhigh refused elsewhere", plain, "xhigh", `thinkingLevel "xhigh" is not supported for local/plain (use off|minimal|low|medium|high)`},
		{"a profile level no model here offers", deep, "max", `thinkingLevel "max" is not supported for Local/DEEP (use off|minimal|low|medium|high|xhigh)`},
		{"unknown", plain, "lots", "invalid thinkingLevel (use off|minimal|low|medium|high)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChooseThinking(cfg, tc.m, tc.in)
			if err != nil {
				got = err.Error()
				if _, ok := errors.AsType[*ChoiceError](err); !ok {
					t.Errorf("%T is not a *ChoiceError", err)
				}
			}
			if got != tc.want {
				t.Errorf("ChooseThinking(%s, %q) = %q, want %q", tc.m, tc.in, got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		m           config.ModelRef
		level, want string
	}{{plain, "xhigh", "high"}, {deep, "xhigh", "xhigh"}, {plain, "low", "low"}, {plain, "", ""}} {
		if got := FitThinking(cfg, tc.m, tc.level); got != tc.want {
			t.Errorf("FitThinking(%s, %q) = %q, want %q", tc.m, tc.level, got, tc.want)
		}
	}
}

// TestExpandAndMaxTokens: a summary model named by alias is its
// reference, and a model's maxTokens comes from models.providers.
func TestExpandAndMaxTokens(t *testing.T) {
	f, err := config.Parse("talon.json", []byte(`{"agents":{"defaults":{"models":{"local/big":{"alias":"Summ"}}}},
		"models":{"providers":{"local":{"baseUrl":"http://127.0.0.1:9/v1","models":[{"id":"big","maxTokens":2048},{"id":"small"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config
	for _, c := range []struct {
		name, ref string
		max       int64
	}{
		{"summ", "local/big", 2048}, {" local/big ", "local/big", 2048}, {"local/small", "local/small", 0},
		{"inspect", "inspect", 0}, {"/x", "/x", 0},
	} {
		ref := Expand(cfg, c.name)
		if ref != c.ref || MaxTokens(cfg, ref) != c.max {
			t.Errorf("%q: %q with maxTokens %d, want %q and %d", c.name, ref, MaxTokens(cfg, ref), c.ref, c.max)
		}
	}
}
