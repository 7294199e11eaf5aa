package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"talon/internal/config"
	"talon/internal/policy"
)

func newDoctorCmd() *cobra.Command {
	var (
		cfgPath     string
		asJSON      bool
		strict      bool
		pluginTools []string
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Lint a config: every agent's tools, with the fix for each mistake",
		Long: `Checks the config the way 'tools explain' checks one run, for every agent: its main
session, a sandboxed session when the sandbox mode is non-main, and each model provider
named in byProvider. A tenant's config (STATE/tenants/ID/talon.json) is checked as the
gateway runs it: held to the ceiling of STATE's root config, each key beyond it reported
as an error. It also lists the OpenClaw keys the config sets that Talon accepts but does
not act on yet (agents.defaults.humanDelay, channel streaming, …) and keys nobody
defines. Exit status 1 when it finds an error (or, with --strict, a warning, unused
and unknown keys included), 2 when the config cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			regs, err := parsePluginTools(pluginTools)
			if err != nil {
				return err
			}
			f, err := loadFile(cfgPath)
			var verr *config.ValidationError
			if errors.As(err, &verr) {
				// A config with type errors is something wrong, not bad usage.
				for _, is := range verr.Issues {
					fmt.Fprintf(cmd.OutOrStdout(), "  error   %s\n", is)
				}
				return exitError{1, plural(len(verr.Issues), "config error")}
			}
			if err != nil {
				return err
			}
			f, held, err := heldToCeiling(f)
			if err != nil {
				return err
			}
			var beyond []config.Issue
			if held != nil {
				beyond = held.Violations
			}
			_, built, err := builtTools()
			if err != nil {
				return err
			}
			rep := policy.Doctor(f.Config, regs, built)
			unused, other := splitWarnings(f.Warnings)
			warnings := len(f.Warnings)
			for _, fd := range rep.Findings {
				if fd.Severity == policy.SeverityWarning {
					warnings++
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					Path     string           `json:"path"`
					Config   []string         `json:"config_warnings"`
					Unused   []string         `json:"unused_keys"`
					Ceiling  []string         `json:"beyond_ceiling,omitempty"`
					Findings []policy.Finding `json:"findings"`
				}{f.Path, issueStrings(f.Warnings), issuePaths(unused), issueStrings(beyond), rep.Findings}); err != nil {
					return err
				}
			} else {
				printDoctor(out, f.Path, rep, beyond, unused, other)
			}
			switch {
			case rep.Errors()+len(beyond) > 0:
				return exitError{1, fmt.Sprintf("%s, %s", plural(rep.Errors()+len(beyond), "error"), plural(warnings, "warning"))}
			case strict && warnings > 0:
				return exitError{1, plural(warnings, "warning") + " (--strict)"}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfgPath, "config", "", "config file (default: talon.json, openclaw.json or clawdbot.json in the working directory)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	fl.BoolVar(&strict, "strict", false, "fail on warnings too")
	fl.StringArrayVar(&pluginTools, "plugin-tool", nil, "a plugin tool: NAME=PLUGIN[,optional][,origin=ORIGIN] (repeatable)")
	return cmd
}

// printDoctor is the doctor's text report.
func printDoctor(out io.Writer, path string, rep policy.DoctorReport, beyond, unused, other []config.Issue) {
	fmt.Fprintf(out, "%s: %d agents checked in %d runs\n", path, countAgents(rep), len(rep.Runs))
	if len(beyond) > 0 {
		fmt.Fprintf(out, "\nbeyond the operator's ceiling for tenants (the gateway runs this tenant held to it, as if these keys said what the ceiling allows):\n  %s\n", strings.Join(issueStrings(beyond), "\n  "))
	}
	if len(unused) > 0 {
		fmt.Fprintf(out, "\nOpenClaw keys Talon accepts but does not act on (kept in the file; --strict fails on them):\n  %s\n", strings.Join(issueStrings(unused), "\n  "))
	}
	if len(other) > 0 {
		fmt.Fprintf(out, "\nconfig warnings:\n  %s\n", strings.Join(issueStrings(other), "\n  "))
	}
	if len(rep.Findings) == 0 && len(unused)+len(other) > 0 {
		// "no problems found" would contradict the warnings above.
		fmt.Fprint(out, "\nno tool-policy problems found\n")
		return
	}
	fmt.Fprint(out, policy.FindingsText(rep.Findings))
}

// splitWarnings separates the unused OpenClaw keys from the other config
// warnings (unknown and ignored keys, values OpenClaw tolerates).
func splitWarnings(ws []config.Issue) (unused, other []config.Issue) {
	for _, w := range ws {
		if config.IsUnused(w) {
			unused = append(unused, w)
		} else {
			other = append(other, w)
		}
	}
	return unused, other
}

func issuePaths(is []config.Issue) []string {
	out := make([]string, len(is))
	for i, x := range is {
		out[i] = x.Path
	}
	return out
}

func issueStrings(is []config.Issue) []string {
	out := make([]string, len(is))
	for i, x := range is {
		out[i] = x.String()
	}
	return out
}

func countAgents(rep policy.DoctorReport) int {
	seen := map[string]bool{}
	for _, r := range rep.Runs {
		seen[r.Agent] = true
	}
	return len(seen)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
