package config

import (
	"slices"
	"testing"
)

func TestAgentFallbacks(t *testing.T) {
	cases := []struct {
		name, cfg, agent string
		want             []string
	}{
		{"none", `{}`, "main", nil},
		{"the defaults'", `{agents: {defaults: {model: {primary: "a/b", fallbacks: ["c/d", " e/f "]}}}}`, "main", []string{"c/d", "e/f"}},
		{"an agent primary is strict", `{agents: {defaults: {model: {primary: "a/b", fallbacks: ["c/d"]}}, list: [{id: "ops", model: "x/y"}]}}`, "ops", nil},
		{"an agent's own list", `{agents: {defaults: {model: {primary: "a/b", fallbacks: ["c/d"]}}, list: [{id: "ops", model: {primary: "x/y", fallbacks: ["g/h"]}}]}}`, "ops", []string{"g/h"}},
		{"an agent's list without a primary", `{agents: {defaults: {model: {primary: "a/b", fallbacks: ["c/d"]}}, list: [{id: "ops", model: {fallbacks: ["g/h"]}}]}}`, "ops", []string{"g/h"}},
		{"an agent's [] is strict", `{agents: {defaults: {model: {primary: "a/b", fallbacks: ["c/d"]}}, list: [{id: "ops", model: {fallbacks: []}}]}}`, "ops", []string{}},
		{"a malformed list is none", `{agents: {defaults: {model: {primary: "a/b", fallbacks: ["c/d"]}}, list: [{id: "ops", model: {fallbacks: [1]}}]}}`, "ops", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustParse(t, c.cfg).AgentFallbacks(c.agent); !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
				t.Errorf("AgentFallbacks = %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestAuthProfiles(t *testing.T) {
	const profiles = `{auth: {profiles: {"openai:b": {provider: "openai", mode: "api_key"}, "openai:a": {provider: "OpenAI", mode: "token"},
		"openai:sso": {provider: "openai", mode: "oauth"}, "anthropic:x": {provider: "anthropic", mode: "api_key"}}`
	cases := []struct {
		name, cfg, provider string
		want                []string
	}{
		{"none", `{}`, "openai", nil},
		{"keyed profiles of the provider, in id order", profiles + `}}`, "openai", []string{"openai:a", "openai:b"}},
		{"auth.order, without duplicates or strangers", profiles + `, order: {openai: ["openai:b", "anthropic:x", "openai:b", "openai:sso", "openai:a"]}}}`, "openai", []string{"openai:b", "openai:a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustParse(t, c.cfg).AuthProfiles(c.provider); !slices.Equal(got, c.want) {
				t.Errorf("AuthProfiles = %q, want %q", got, c.want)
			}
		})
	}
	for id, want := range map[string]string{"openai:work": "OPENAI_API_KEY_WORK", "openai:default": "", "my-llm:team.2": "MY_LLM_API_KEY_TEAM_2", "plain": "OPENAI_API_KEY_PLAIN"} {
		provider := "openai"
		if id == "my-llm:team.2" {
			provider = "my-llm"
		}
		if got := ProfileKeyEnv(provider, id); got != want {
			t.Errorf("ProfileKeyEnv(%s, %s) = %q, want %q", provider, id, got, want)
		}
	}
}

func TestAuthValidation(t *testing.T) {
	cases := []struct {
		name, cfg string
		errs      []string // paths
		warns     []string
	}{
		{"good", `{auth: {profiles: {"openai:a": {provider: "openai", mode: "api_key", email: "a@example.com", displayName: "A"}}, order: {openai: ["openai:a"]}}}`, nil, nil},
		{"no provider, bad mode", `{auth: {profiles: {"x:a": {mode: "magic"}}}}`, []string{"auth.profiles.x:a.provider", "auth.profiles.x:a.mode"}, nil},
		{"oauth is not used; order names a stranger", `{auth: {profiles: {"openai:s": {provider: "openai", mode: "oauth"}}, order: {openai: ["openai:s", "anthropic:z"]}}}`,
			nil, []string{"auth.profiles.openai:s.mode", "auth.order.openai[1]"}},
		{"malformed fallbacks are warned of", `{agents: {defaults: {model: {primary: "a/b", fallbacks: "c/d"}}, list: [{id: "x", model: {fallbacks: ["/y"]}}]}}`,
			nil, []string{"agents.defaults.model.fallbacks", "agents.list[0].model.fallbacks"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse("t.json5", []byte(c.cfg))
			var errs, warns []string
			if err != nil {
				for _, is := range issuesOf(t, err) {
					errs = append(errs, is.Path)
				}
			} else {
				for _, w := range f.Warnings {
					if !IsUnused(w) {
						warns = append(warns, w.Path)
					}
				}
			}
			if !slices.Equal(errs, c.errs) || !slices.Equal(warns, c.warns) {
				t.Errorf("errors %q warnings %q; want %q and %q (err %v)", errs, warns, c.errs, c.warns, err)
			}
		})
	}
}
