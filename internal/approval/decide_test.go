package approval

import (
	"testing"
)

func TestDecideTable(t *testing.T) {
	hit := Verdict{Decidable: true, AllowlistHit: true, ResolvedPaths: []string{"/usr/bin/git"}}
	miss := Verdict{Decidable: true, ResolvedPaths: []string{"/usr/bin/curl"}}
	undecidable := Verdict{Decidable: false, AllowlistHit: true} // never a hit
	eff := func(s Security, a Ask) Effective { return Effective{Host: HostGateway, Security: s, Ask: a} }
	type row struct {
		name    string
		eff     Effective
		v       Verdict
		opt     DecideOptions
		outcome Outcome
		reason  string
	}
	var rows []row
	// Spec §4.4, one row per line of its table; "any" expanded to every value.
	for _, a := range []Ask{AskOff, AskOnMiss, AskAlways} {
		for _, v := range []Verdict{hit, miss} {
			rows = append(rows, row{"deny/" + string(a), eff(SecurityDeny, a), v, DecideOptions{}, OutcomeDeny, "exec denied: host=gateway security=deny"})
		}
	}
	for _, a := range []Ask{AskOff, AskOnMiss} {
		for _, v := range []Verdict{hit, miss, undecidable} {
			rows = append(rows, row{"full/" + string(a), eff(SecurityFull, a), v, DecideOptions{}, OutcomeRun, "security=full"})
		}
	}
	for _, v := range []Verdict{hit, miss} {
		rows = append(rows, row{"full/always", eff(SecurityFull, AskAlways), v, DecideOptions{}, OutcomePrompt, "ask=always"})
		rows = append(rows, row{"allowlist/always", eff(SecurityAllowlist, AskAlways), v, DecideOptions{}, OutcomePrompt, "ask=always"})
	}
	rows = append(rows,
		row{"allowlist/off/hit", eff(SecurityAllowlist, AskOff), hit, DecideOptions{}, OutcomeRun, "allowlist hit"},
		row{"allowlist/off/miss", eff(SecurityAllowlist, AskOff), miss, DecideOptions{}, OutcomeDeny, "exec denied: allowlist miss"},
		row{"allowlist/on-miss/hit", eff(SecurityAllowlist, AskOnMiss), hit, DecideOptions{}, OutcomeRun, "allowlist hit"},
		row{"allowlist/on-miss/miss", eff(SecurityAllowlist, AskOnMiss), miss, DecideOptions{}, OutcomePrompt, "allowlist miss"},

		// Analysis that could not decide is a miss even if it claims a hit.
		row{"allowlist/off/undecidable", eff(SecurityAllowlist, AskOff), undecidable, DecideOptions{}, OutcomeDeny, "exec denied: allowlist miss"},
		row{"allowlist/on-miss/undecidable", eff(SecurityAllowlist, AskOnMiss), undecidable, DecideOptions{}, OutcomePrompt, "allowlist miss: analysis could not decide what would run"},

		// Extra prompt triggers.
		row{"heredoc in allowlist mode", eff(SecurityAllowlist, AskOnMiss), Verdict{Decidable: true, AllowlistHit: true, Heredoc: true}, DecideOptions{}, OutcomePrompt, "heredoc in allowlist mode"},
		row{"heredoc with ask off is denied", eff(SecurityAllowlist, AskOff), Verdict{Decidable: true, AllowlistHit: true, Heredoc: true}, DecideOptions{}, OutcomeDeny, "exec denied: heredoc in allowlist mode needs approval and ask=off"},
		row{"heredoc in full mode runs", eff(SecurityFull, AskOnMiss), Verdict{Decidable: true, Heredoc: true}, DecideOptions{}, OutcomeRun, "security=full"},
		row{"obfuscation in allowlist mode", eff(SecurityAllowlist, AskOnMiss), Verdict{Decidable: true, AllowlistHit: true, Obfuscated: true}, DecideOptions{}, OutcomePrompt, "command obfuscation detected"},
		row{"obfuscation in full/on-miss", eff(SecurityFull, AskOnMiss), Verdict{Decidable: true, Obfuscated: true}, DecideOptions{}, OutcomePrompt, "command obfuscation detected"},
		row{"obfuscation in full/off (YOLO) runs", eff(SecurityFull, AskOff), Verdict{Decidable: true, Obfuscated: true}, DecideOptions{}, OutcomeRun, "security=full"},
		row{"inline eval, strict", eff(SecurityAllowlist, AskOnMiss), Verdict{Decidable: true, AllowlistHit: true, InlineEval: true}, DecideOptions{StrictInlineEval: true}, OutcomePrompt, "interpreter inline eval (strictInlineEval)"},
		row{"inline eval, not strict", eff(SecurityAllowlist, AskOnMiss), Verdict{Decidable: true, AllowlistHit: true, InlineEval: true}, DecideOptions{}, OutcomeRun, "allowlist hit"},
		row{"inline eval, strict, full", eff(SecurityFull, AskOff), Verdict{Decidable: true, InlineEval: true}, DecideOptions{StrictInlineEval: true}, OutcomePrompt, "interpreter inline eval (strictInlineEval)"},

		// The durable exact-command marker skips the prompt unless ask=always.
		row{"marker skips on-miss prompt", eff(SecurityAllowlist, AskOnMiss), Verdict{Decidable: true, ExactApproved: true}, DecideOptions{}, OutcomeRun, "allow-always for this exact command"},
		row{"marker with ask off", eff(SecurityAllowlist, AskOff), Verdict{Decidable: false, ExactApproved: true}, DecideOptions{}, OutcomeRun, "allow-always for this exact command"},
		row{"marker does not skip ask=always", eff(SecurityAllowlist, AskAlways), Verdict{Decidable: true, ExactApproved: true}, DecideOptions{}, OutcomePrompt, "ask=always"},
		row{"marker does not beat deny", eff(SecurityDeny, AskOff), Verdict{Decidable: true, ExactApproved: true}, DecideOptions{}, OutcomeDeny, "exec denied: host=gateway security=deny"},

		// Programs configured by files the agent can write always ask, and say why.
		row{"configured asks even when the allowlist matches", eff(SecurityAllowlist, AskOnMiss), Verdict{Decidable: true, AllowlistHit: true, Configured: "git is configured by .git/config"}, DecideOptions{}, OutcomePrompt, "git is configured by .git/config"},
		row{"configured asks despite a marker", eff(SecurityAllowlist, AskOnMiss), Verdict{Decidable: false, ExactApproved: true, Configured: "git is configured by .git/config"}, DecideOptions{}, OutcomePrompt, "git is configured by .git/config"},
		row{"configured with ask off is denied", eff(SecurityAllowlist, AskOff), Verdict{Decidable: false, ExactApproved: true, Configured: "git is configured by .git/config"}, DecideOptions{}, OutcomeDeny, "exec denied: git is configured by .git/config, and ask=off"},
		row{"configured under full runs", eff(SecurityFull, AskOnMiss), Verdict{Decidable: false, Configured: "git is configured by .git/config"}, DecideOptions{}, OutcomeRun, "security=full"},

		row{"elevated bypass", Effective{Host: HostGateway, Security: SecurityFull, Ask: AskOff, Bypass: true}, miss, DecideOptions{}, OutcomeRun, "elevated full: approvals bypassed"},
		row{"unknown security fails closed", Effective{Security: "yolo"}, hit, DecideOptions{}, OutcomeDeny, `exec denied: unknown security "yolo"`},
	)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			d := Decide(r.eff, r.v, r.opt)
			if d.Outcome != r.outcome || d.Reason != r.reason {
				t.Errorf("Decide = %s %q, want %s %q", d.Outcome, d.Reason, r.outcome, r.reason)
			}
			if d.Outcome == OutcomePrompt && d.AllowAlways != (r.eff.Ask != AskAlways && r.v.Configured == "") {
				t.Errorf("AllowAlways = %v with ask %s", d.AllowAlways, r.eff.Ask)
			}
		})
	}
}

func TestCommandMarker(t *testing.T) {
	m := CommandMarker("rg -n TODO")
	if len(m) != len("=command:")+16 || m == CommandMarker("rg -n TODO ") {
		t.Errorf("marker %q", m)
	}
	if !HasMarker([]Entry{{Pattern: "/bin/ls"}, {Pattern: m}}, "rg -n TODO") || HasMarker([]Entry{{Pattern: m}}, "rg -n todo") {
		t.Error("HasMarker")
	}
}
