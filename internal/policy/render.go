package policy

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Text renders an explanation as the table `talon tools explain` prints.
func (x *Explanation) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent %s", orDash(x.Agent))
	if x.SessionKey != "" {
		fmt.Fprintf(&b, " · session %s", x.SessionKey)
	}
	fmt.Fprintf(&b, " · owner %s", yesNo(x.Owner))
	if x.ModelProvider != "" {
		fmt.Fprintf(&b, " · model %s", strings.Trim(x.ModelProvider+"/"+x.ModelID, "/"))
	}
	b.WriteString("\n")
	if x.Sandboxed {
		fmt.Fprintf(&b, "sandbox: mode %s, this session is sandboxed, workspace access %s\n", x.SandboxMode, x.WorkspaceAccess)
	} else {
		fmt.Fprintf(&b, "sandbox: mode %s, this session is not sandboxed\n", x.SandboxMode)
	}
	if x.Subagent != nil {
		fmt.Fprintf(&b, "subagent: depth %d, role %s\n", x.Subagent.Depth, x.Subagent.Role)
	}
	b.WriteString("\n")
	b.WriteString(x.Counts.Summary())
	if tokens, priced := x.price(); priced > 0 {
		fmt.Fprintf(&b, "; the %d core tools among them cost %d tokens of tool definitions per model call", priced, tokens)
	}
	b.WriteString("\n\n")

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSTATUS\tTOKENS\tREMOVED BY\tKEY\tWHY")
	for _, t := range x.Tools {
		name := t.Name
		if t.Plugin != "" {
			name += " (" + t.Plugin + ")"
		}
		cost := "-"
		if t.Tokens > 0 {
			cost = fmt.Sprint(t.Tokens)
		}
		switch {
		case t.State == StateAvailable:
			fmt.Fprintf(tw, "%s\tavailable\t%s\t\t\t\n", name, cost)
		case t.State == StateNotBuilt || t.Removal == nil:
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\n", name, ReasonNotBuilt, cost)
		default:
			rm := t.Removal
			key := rm.Key
			if rm.Default && key != "" {
				key += " (default)"
			}
			fmt.Fprintf(tw, "%s\tremoved\t%s\t%s\t%s\t%s\n", name, cost, rm.Stage, orDash(key), why(rm))
		}
	}
	tw.Flush()

	if len(x.Steps) > 0 {
		b.WriteString("\nsteps applied, in order:\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for i, s := range x.Steps {
			allow := "allow: none"
			switch {
			case s.AllowIgnored:
				allow = "allow: ignored (" + s.AllowKey + ")"
			case len(s.Allow) > 0:
				allow = fmt.Sprintf("allow: %s (%s)", entries(len(s.Allow)), s.AllowKey)
			}
			deny := "deny: none"
			if len(s.Deny) > 0 {
				deny = fmt.Sprintf("deny: %s (%s)", entries(len(s.Deny)), s.DenyKey)
			}
			fmt.Fprintf(tw, "  %d. %s\t%s\t%s\tremoved %d\n", i+1, s.Label, allow, deny, s.Removed)
		}
		tw.Flush()
	}
	if len(x.Warnings) > 0 {
		b.WriteString("\nOpenClaw warnings:\n")
		for _, w := range x.Warnings {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	writeFindings(&b, x.Findings)
	return b.String()
}

// Summary is the count line of an explanation: what the model is
// offered, and what the policy allows that Talon does not have.
func (c Counts) Summary() string {
	s := fmt.Sprintf("%d of %d tools available", c.Available, c.Tools)
	if c.AllowedNotBuilt > 0 {
		s += fmt.Sprintf("; %d more the policy allows are %s", c.AllowedNotBuilt, ReasonNotBuilt)
	}
	return s
}

// price sums what the available tools Talon prices cost per model call.
func (x *Explanation) price() (tokens, priced int) {
	for _, t := range x.Tools {
		if t.Available && t.Tokens > 0 {
			tokens += t.Tokens
			priced++
		}
	}
	return tokens, priced
}

// FindingsText renders findings as the doctor prints them.
func FindingsText(fs []Finding) string {
	var b strings.Builder
	writeFindings(&b, fs)
	return b.String()
}

func writeFindings(b *strings.Builder, fs []Finding) {
	if len(fs) == 0 {
		b.WriteString("\nno problems found\n")
		return
	}
	b.WriteString("\nproblems:\n")
	for _, f := range fs {
		who := ""
		if f.Agent != "" {
			who = "agent " + f.Agent + ": "
		}
		fmt.Fprintf(b, "  %-7s %s%s [%s]\n          fix: %s\n", f.Severity, who, f.Message, f.Code, f.Fix)
	}
}

func why(rm *Removal) string {
	switch rm.Rule {
	case RuleDenied:
		return fmt.Sprintf("deny entry %q", rm.Entry)
	case RuleNotAllowed:
		return "not in allow list"
	case RuleOwnerOnly:
		return "owner-only tool, sender is not an owner"
	}
	if rm.Entry != "" {
		return rm.Entry
	}
	return rm.Rule
}

func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
