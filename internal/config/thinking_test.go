package config

import "testing"

func TestAgentThinking(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		agent string
		want  string
		err   string
	}{
		{"none", `{}`, "main", "", ""},
		{"the defaults', by alias", `{agents: {defaults: {thinkingDefault: "Think-Harder"}}}`, "main", "medium", ""},
		{"the agent's over the defaults'", `{agents: {defaults: {thinkingDefault: "low"}, list: [{id: "ops", thinkingDefault: "high"}]}}`, "ops", "high", ""},
		{"another agent keeps the defaults'", `{agents: {defaults: {thinkingDefault: "low"}, list: [{id: "ops", thinkingDefault: "high"}, {id: "main"}]}}`, "main", "low", ""},
		{"not a level", `{agents: {defaults: {thinkingDefault: "lots"}, list: [{id: "ops", thinkingDefault: "big"}]}}`, "ops", "",
			`invalid config: agents.defaults.thinkingDefault: invalid thinking level "lots" (use off|minimal|low|medium|high|xhigh); ` +
				`agents.list[0].thinkingDefault: invalid thinking level "big" (use off|minimal|low|medium|high|xhigh)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			warns, err := Decode(mustJSON5(t, tc.src), &c)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Decode: %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range warns {
				t.Errorf("warning: %v", w)
			}
			if got := c.AgentThinking(tc.agent); got != tc.want {
				t.Errorf("AgentThinking(%q) = %q, want %q", tc.agent, got, tc.want)
			}
		})
	}
}
