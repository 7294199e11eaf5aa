package policy

import (
	"slices"
	"strings"

	"talon/internal/config"
)

// DoctorReport is the lint of a whole config.
type DoctorReport struct {
	// Runs are the explanations the doctor evaluated, one per agent and
	// kind of session and model provider it checked.
	Runs     []Explanation `json:"runs"`
	Findings []Finding     `json:"findings"`
}

// Errors counts error findings.
func (d *DoctorReport) Errors() int {
	n := 0
	for _, f := range d.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}

// Doctor explains every agent in the config (main when there is none) for
// its main session and, under sandbox mode non-main, a sandboxed session,
// once with no model provider and once per byProvider key. plugins are
// the plugin tools every agent's runs register, built the names of the
// candidate tools Talon has (Inventory.Built). Findings are de-duplicated
// and carry the agent they were found for.
func Doctor(cfg *config.Config, plugins []Registration, built []string) DoctorReport {
	ids := cfg.ListedAgentIDs()
	rep := DoctorReport{Findings: []Finding{}}
	seen := map[string]bool{}
	add := func(agent string, fs []Finding) {
		for _, f := range fs {
			id := f.Code + "\x00" + f.Key + "\x00" + f.Message
			if seen[id] {
				continue
			}
			seen[id] = true
			if !strings.HasPrefix(f.Key, "agents.list[") && f.Code != CodeNamedToolRemoved && f.Code != CodeAllowlistIgnored &&
				f.Code != CodePluginNotEnabled && f.Code != CodeOptionalTool {
				agent = "" // a finding about global config belongs to no one agent
			}
			f.Agent = agent
			rep.Findings = append(rep.Findings, f)
		}
	}
	add("", ConfigFindings(cfg, plugins))
	candidates := CandidateTools(cfg)
	for _, id := range ids {
		keys := []string{MainSessionKey(cfg, id)}
		if ResolveSandboxSettings(cfg, id).Mode == ModeNonMain {
			keys = append(keys, "agent:"+id+":openai-user:doctor")
		}
		for _, key := range keys {
			for _, m := range doctorModels(cfg, id) {
				ctx := Context{
					SessionKey: key, AgentID: id, SenderIsOwner: true,
					ModelProvider: m[0], ModelID: m[1], Plugins: plugins,
				}
				x := Explain(cfg, ctx, candidates, Inventory{Built: built})
				rep.Runs = append(rep.Runs, x)
				add(id, x.Findings)
			}
		}
	}
	return rep
}

// doctorModels are the provider/model pairs worth checking for an agent: none,
// and every byProvider key that applies to it.
func doctorModels(cfg *config.Config, id string) [][2]string {
	out := [][2]string{{"", ""}}
	add := func(m map[string]config.ProviderTools) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, normalizeName(k))
		}
		slices.Sort(keys)
		for _, k := range keys {
			p, model, _ := strings.Cut(k, "/")
			if pair := [2]string{p, model}; p != "" && !slices.Contains(out, pair) {
				out = append(out, pair)
			}
		}
	}
	add(cfg.Tools.ByProvider)
	if a, _ := cfg.Agent(id); a != nil {
		add(a.Tools.ByProvider)
	}
	return out
}
