package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/bench"
)

type benchFlags struct {
	quick, compare       bool
	jsonPath, budgetPath string
	openclawDir          string
	// tenants, when set, runs only the many-tenants row with that many.
	tenants    int
	tenantIdle time.Duration
}

func newBenchCmd() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure this talon binary: cold start, memory, turn overhead, tool calls, concurrent streams",
		Long: `Starts fake OpenAI-compatible LLMs in this process and this binary as 'talon serve'
subprocesses with fresh state dirs, measures, prints a markdown table and writes the
figures as JSON. The full run takes about 1.5 minutes on 2 cores; --quick takes under
one. --budget FILE exits 1 naming every figure above its budget.
--compare-openclaw measures the OpenClaw gateway installed as ../shared/anchor/
describes the same way and prints it beside talon (adds about 3 minutes with --quick,
10 without). --tenants N measures only one gateway serving N tenants (a first turn
each, a warm turn and a cold turn after --tenant-idle for a sample, memory and files
per tenant); quick and full runs include it with 300 tenants.
See docs/bench.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.quick, "quick", false, "fewer samples: under a minute, for CI")
	fl.StringVar(&f.jsonPath, "json", "bench.json", "write the figures as JSON to this file")
	fl.StringVar(&f.budgetPath, "budget", "", "check the figures against this budget file (e.g. bench/budgets.json)")
	fl.BoolVar(&f.compare, "compare-openclaw", false, "also measure the OpenClaw gateway and print the ratio")
	fl.StringVar(&f.openclawDir, "openclaw-dir", "", "the OpenClaw install (default $ANCHOR, else $TMPDIR/anchor-openclaw)")
	fl.IntVar(&f.tenants, "tenants", 0, "measure only a gateway serving this many tenants (e.g. 10000)")
	fl.DurationVar(&f.tenantIdle, "tenant-idle", 0, "the tenants gateway's --tenant-idle (default 5s with --quick, else 10s)")
	return cmd
}

func runBench(cmd *cobra.Command, f benchFlags) error {
	plan, mode := bench.FullPlan(), "full"
	if f.quick {
		plan, mode = bench.QuickPlan(), "quick"
	}
	if err := tenantFlags(cmd, f, &plan); err != nil {
		return err
	}
	if strings.TrimSpace(f.jsonPath) == "" {
		return errors.New("--json: a file name is required")
	}
	if dir := filepath.Dir(f.jsonPath); dir != "." {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("--json %s: no directory %s", f.jsonPath, dir)
		}
	}
	var budget *bench.Budget
	if f.budgetPath != "" {
		var err error
		if budget, err = bench.LoadBudget(f.budgetPath); err != nil {
			return err
		}
		if err := budget.Validate(bench.Catalog(plan)); err != nil {
			return err
		}
	}
	if f.openclawDir != "" && !f.compare {
		return errors.New("--openclaw-dir is only used with --compare-openclaw")
	}
	var oc *bench.OpenClaw
	if f.compare {
		dir := f.openclawDir
		if dir == "" {
			dir = bench.DefaultOpenClawDir(os.Getenv)
		}
		var err error
		if oc, err = bench.FindOpenClaw(dir); err != nil {
			return fmt.Errorf("--compare-openclaw: %w", err)
		}
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the talon binary to measure: %w", err)
	}
	stderr := cmd.ErrOrStderr()
	fmt.Fprintf(stderr, "talon bench (%s): %s\n", mode, bench.Estimate(plan, oc != nil))
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, bench.Options{
		Binary: bin, Mode: mode, Plan: plan, OpenClaw: oc, Command: commandLine(cmd), Progress: stderr,
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("bench: interrupted")
		}
		return fmt.Errorf("bench: %w", err)
	}
	if budget != nil {
		rep.Budget = budget.Check(rep.Figures)
	}
	if err := rep.Markdown(cmd.OutOrStdout()); err != nil {
		return err
	}
	if err := rep.WriteJSON(f.jsonPath); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%.0f s)\n", f.jsonPath, rep.Seconds)
	if rep.Budget != nil && len(rep.Budget.Broken) > 0 {
		return exitError{1, rep.Budget.String()}
	}
	return nil
}

// tenantFlags applies --tenants and --tenant-idle to the plan.
func tenantFlags(cmd *cobra.Command, f benchFlags, plan *bench.Plan) error {
	if cmd.Flags().Changed("tenants") {
		if f.tenants < 1 {
			return fmt.Errorf("--tenants %d: want 1 or more", f.tenants)
		}
		if f.compare {
			return errors.New("--tenants measures talon alone: drop --compare-openclaw")
		}
		plan.Tenants.N = f.tenants
		plan.Only = []string{"tenants"}
	}
	if cmd.Flags().Changed("tenant-idle") {
		if f.tenantIdle%time.Millisecond != 0 {
			return fmt.Errorf("--tenant-idle %s: want whole milliseconds", f.tenantIdle)
		}
		plan.Tenants.IdleMS = int(f.tenantIdle / time.Millisecond)
	}
	if err := plan.Validate(f.compare); err != nil {
		return fmt.Errorf("--tenants/--tenant-idle: %w", err)
	}
	return nil
}

// commandLine is the command as given, for the report.
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	for _, name := range []string{"quick", "tenants", "tenant-idle", "compare-openclaw", "openclaw-dir", "budget", "json"} {
		fl := cmd.Flags().Lookup(name)
		switch {
		case !fl.Changed:
		case fl.Value.Type() == "bool":
			parts = append(parts, "--"+name)
		default:
			parts = append(parts, "--"+name, fl.Value.String())
		}
	}
	return strings.Join(parts, " ")
}
