package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Verdict is what command analysis concluded about one command. The
// analyser (approval/analyze) fills it; Decide only reads it.
type Verdict struct {
	// Decidable is false when analysis could not tell what would run
	// (substitutions, unresolvable executables, parse errors): always a miss.
	Decidable bool
	// AllowlistHit is true when every top-level segment is satisfied
	// (allowlist match, safe bin or skill bin).
	AllowlistHit bool
	// ResolvedPaths are the segments' executables as absolute paths, which
	// allow-always persists.
	ResolvedPaths []string
	// Extra prompt triggers (spec §4.4).
	Heredoc    bool
	Obfuscated bool
	InlineEval bool
	// ExactApproved is set when the allowlist holds the exact-command
	// marker (CommandMarker) for this command.
	ExactApproved bool
	// Configured says why a program of the command is configured by files
	// the agent can write (git's .git/config, a Makefile, package.json);
	// empty when none is. Such a command is never allowed without asking:
	// not by an allowlist entry, nor by an exact-command marker, since
	// the same text runs whatever the agent has written since.
	Configured string
}

// Hit is the decision table's "hit": analysis succeeded and matched.
func (v Verdict) Hit() bool { return v.Decidable && v.AllowlistHit }

// Outcome is what happens to a command.
type Outcome string

// The values of Outcome.
const (
	OutcomeRun    Outcome = "run"
	OutcomeDeny   Outcome = "deny"
	OutcomePrompt Outcome = "prompt"
)

// Decision is Decide's answer with the reason, in words an operator reads.
type Decision struct {
	Outcome Outcome
	Reason  string
	// AllowAlways is whether the prompt may offer allow-always (not when
	// ask is always, spec §4.5).
	AllowAlways bool
}

// DecideOptions are policy switches outside the decision table.
type DecideOptions struct {
	// StrictInlineEval makes interpreter eval (python -c, node -e) prompt.
	StrictInlineEval bool
}

// Decide applies the decision table of spec §4.4 to one command on host
// (used in the deny message). It is pure.
func Decide(eff Effective, v Verdict, opt DecideOptions) Decision {
	if eff.Bypass {
		return Decision{Outcome: OutcomeRun, Reason: "elevated full: approvals bypassed"}
	}
	prompt := func(why string) Decision {
		return Decision{Outcome: OutcomePrompt, Reason: why, AllowAlways: eff.Ask != AskAlways}
	}
	hit := v.Hit()
	switch eff.Security {
	case SecurityDeny:
		return Decision{Outcome: OutcomeDeny, Reason: fmt.Sprintf("exec denied: host=%s security=deny", eff.Host)}
	case SecurityFull:
		if eff.Ask == AskAlways {
			return prompt("ask=always")
		}
		// "YOLO" (full/off) ignores obfuscation; full/on-miss still asks.
		if v.ExactApproved {
			return Decision{Outcome: OutcomeRun, Reason: "security=full; allow-always for this exact command"}
		}
		if v.Obfuscated && eff.Ask != AskOff {
			return prompt("command obfuscation detected")
		}
		if v.InlineEval && opt.StrictInlineEval {
			return prompt("interpreter inline eval (strictInlineEval)")
		}
		return Decision{Outcome: OutcomeRun, Reason: "security=full"}
	case SecurityAllowlist:
		if eff.Ask == AskAlways {
			return prompt("ask=always")
		}
		if v.Configured != "" {
			if eff.Ask == AskOff {
				return Decision{Outcome: OutcomeDeny, Reason: "exec denied: " + v.Configured + ", and ask=off"}
			}
			// Allow-always would store what cannot make it safe.
			return Decision{Outcome: OutcomePrompt, Reason: v.Configured}
		}
		if !hit {
			if v.ExactApproved {
				return Decision{Outcome: OutcomeRun, Reason: "allow-always for this exact command"}
			}
			if eff.Ask == AskOff {
				return Decision{Outcome: OutcomeDeny, Reason: "exec denied: allowlist miss"}
			}
			if !v.Decidable {
				return prompt("allowlist miss: analysis could not decide what would run")
			}
			return prompt("allowlist miss")
		}
		// A hit still asks for the extra triggers; with ask=off nobody can
		// be asked, so it is denied rather than run unasked.
		var trigger string
		switch {
		case v.Heredoc:
			trigger = "heredoc in allowlist mode"
		case v.Obfuscated:
			trigger = "command obfuscation detected"
		case v.InlineEval && opt.StrictInlineEval:
			trigger = "interpreter inline eval (strictInlineEval)"
		}
		if trigger != "" && !v.ExactApproved {
			if eff.Ask == AskOff {
				return Decision{Outcome: OutcomeDeny, Reason: "exec denied: " + trigger + " needs approval and ask=off"}
			}
			return prompt(trigger)
		}
		return Decision{Outcome: OutcomeRun, Reason: "allowlist hit"}
	}
	// An Effective not built by Resolve: never run on a guess.
	return Decision{Outcome: OutcomeDeny, Reason: fmt.Sprintf("exec denied: unknown security %q", eff.Security)}
}

// CommandMarker is the allowlist pattern allow-always stores for one exact
// command: "=command:" and the first 16 hex digits of the SHA-256 of the
// command text, so the file does not hold the command itself.
func CommandMarker(command string) string {
	sum := sha256.Sum256([]byte(command))
	return "=command:" + hex.EncodeToString(sum[:])[:16]
}

// HasMarker reports whether allowlist holds the exact-command marker for
// command.
func HasMarker(allowlist []Entry, command string) bool {
	m := CommandMarker(command)
	for _, e := range allowlist {
		if e.Pattern == m {
			return true
		}
	}
	return false
}
