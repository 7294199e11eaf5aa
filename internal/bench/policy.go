package bench

import (
	"fmt"
	"slices"
	"time"

	"talon/internal/config"
	"talon/internal/policy"
)

const groupPolicy = "tool policy"

func init() {
	measurements = append(measurements, measurement{
		name: "tool policy", figures: policyFigures, method: policyMethod, run: policyEval,
	})
}

func policyFigures(Plan) []Figure {
	return []Figure{
		{ID: "policy.evaluate_us.p50", Group: groupPolicy, What: "one effective-tool-set decision with its trace, p50", Unit: "µs"},
		{ID: "policy.evaluate_us.p99", Group: groupPolicy, What: "one effective-tool-set decision, p99", Unit: "µs"},
	}
}

// policyRuns is how many decisions the row times: 20 per tool pair of the
// plan, at most 20,000 (well under a second).
func policyRuns(p Plan) int { return min(20*p.Talon.ToolPairs, 20000) }

func policyMethod(p Plan) string {
	return fmt.Sprintf("%d evaluations (after 100 unmeasured) of the per-turn tool decision in this process, "+
		"the code talon runs before every model call: the %d standard OpenClaw tools (memory tools as plugin tools) "+
		"through a coding profile, a global deny, a byProvider entry, an agent's allow/alsoAllow/deny and its "+
		"sandbox allow list for a sandboxed non-main session, with the full trace; talon only", policyRuns(p), len(policy.StandardTools))
}

// policyConfig is a support agent the way tenants write them: a profile
// and a global deny, an agent that narrows its tools, and a sandbox for
// everyone but the main session with its own allow list.
func policyConfig() *config.Config {
	var cfg config.Config
	cfg.Tools.Profile = "coding"
	cfg.Tools.Deny = config.List{"gateway", "nodes"}
	cfg.Tools.ByProvider = map[string]config.ProviderTools{"openai": {ToolPolicy: config.ToolPolicy{Deny: config.List{"process"}}}}
	cfg.Agents.Defaults.Sandbox = config.Sandbox{Mode: "non-main", WorkspaceAccess: "ro"}
	support := config.Agent{ID: "support"}
	support.Tools.Allow = config.List{"group:fs", "group:sessions", "exec", "process", "image", "web_*"}
	support.Tools.AlsoAllow = config.List{"memory_search", "memory_get"}
	support.Tools.Deny = config.List{"sessions_spawn"}
	support.Tools.Sandbox.Tools.Allow = config.List{"read", "exec", "image", "sessions_list", "sessions_history", "session_status", "memory_search"}
	cfg.Agents.List = []config.Agent{{ID: "main"}, support}
	return &cfg
}

// policyEval times policy.Engine.Evaluate in this process; the gateway is
// not involved. OpenClaw has no such figure.
func policyEval(e *env) (map[string]float64, error) {
	if e.t.lenient {
		return map[string]float64{}, nil
	}
	eng := policy.New(policyConfig())
	tools := make([]policy.Tool, len(policy.StandardTools))
	for i, n := range policy.StandardTools {
		tools[i] = policy.Tool{Name: n, OwnerOnly: slices.Contains(policy.OwnerOnlyTools, n)}
		if n == "memory_search" || n == "memory_get" {
			tools[i].Plugin = policy.MemoryPlugin
		}
	}
	ctx := policy.Context{SessionKey: "agent:support:openai-user:customer-42", AgentID: "support", ModelProvider: "openai", ModelID: "gpt-5.2"}
	r := eng.Evaluate(ctx, tools)
	// The decision must be a real one: some tools kept, some removed, and
	// the session sandboxed, or the figure measures the wrong thing.
	if len(r.Tools) == 0 || len(r.Tools) == len(tools) || !r.Sandboxed {
		return nil, fmt.Errorf("policy row: the benchmark config kept %d of %d tools (sandboxed %v); it must keep some and remove some in a sandboxed session", len(r.Tools), len(tools), r.Sandboxed)
	}
	for range 100 {
		eng.Evaluate(ctx, tools)
	}
	n := policyRuns(e.plan)
	d := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		eng.Evaluate(ctx, tools)
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	us := func(p float64) float64 { return float64(Percentile(d, p)) / 1e3 }
	e.logf("%s: policy %d evaluations", e.t.name, n)
	return map[string]float64{
		"policy.evaluate_us.p50": us(50),
		"policy.evaluate_us.p99": us(99),
	}, nil
}
