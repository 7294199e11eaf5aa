package main

import (
	"encoding/json"
	"errors"
	"fmt"
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
as an error. Exit status 1 when it finds an error (or, with --strict, a warning),
2 when the config cannot be read.`,
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
			warnings := 0
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
					Ceiling  []string         `json:"beyond_ceiling,omitempty"`
					Findings []policy.Finding `json:"findings"`
				}{f.Path, issueStrings(f.Warnings), issueStrings(beyond), rep.Findings}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "%s: %d agents checked in %d runs\n", f.Path, countAgents(rep), len(rep.Runs))
				if len(beyond) > 0 {
					fmt.Fprintf(out, "\nbeyond the operator's ceiling for tenants (the gateway runs this tenant held to it, as if these keys said what the ceiling allows):\n  %s\n", strings.Join(issueStrings(beyond), "\n  "))
				}
				if len(f.Warnings) > 0 {
					fmt.Fprintf(out, "\nconfig keys Talon keeps but does not act on:\n  %s\n", strings.Join(issueStrings(f.Warnings), "\n  "))
				}
				fmt.Fprint(out, policy.FindingsText(rep.Findings))
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
