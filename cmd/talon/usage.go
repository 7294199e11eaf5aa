package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/store"
	"talon/internal/tenantid"
	"talon/internal/usage"
)

// newUsageCmd is `talon usage`: a tenant's usage ledger, read from its
// database, so it works with the gateway stopped as well as running.
func newUsageCmd() *cobra.Command {
	var stateDir, tenant, since, by string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Print the model calls, tokens and cost a tenant's usage ledger records",
		Long: `Sums the usage ledger of the state directory's database (a tenant's with --tenant):
every model call that answered, with its tokens and its cost from
models.providers.*.models[].cost. --since takes a date (YYYY-MM-DD, midnight UTC) or a
span back from now (30d, 12h; default 30d); --by adds one row per agent, model
(provider/model) or UTC day. Calls to a model with no price are counted as unpriced,
not in the cost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := usage.ParseSince(since, time.Now())
			if err != nil {
				return fmt.Errorf("usage: --since: %w", err)
			}
			if err := usage.CheckBy(by); err != nil {
				return fmt.Errorf("usage: --by: %w", err)
			}
			q := usage.Query{Since: from, By: by}
			path, err := usageStorePath(stateDir, tenant)
			if err != nil {
				return fmt.Errorf("usage: %w", err)
			}
			rep, err := usage.Read(cmd.Context(), path, q)
			if err != nil {
				return fmt.Errorf("usage: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return printUsage(cmd.OutOrStdout(), &rep)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&stateDir, "state-dir", "", "state directory (default ~/.talon)")
	fl.StringVar(&tenant, "tenant", "", "tenant id (default: the operator's own)")
	fl.StringVar(&since, "since", usage.DefaultSince, "from a date (YYYY-MM-DD) or a span back from now (30d, 12h)")
	fl.StringVar(&by, "by", "", "one row per agent, model or day")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// usageStorePath is the database of the state directory or of one of
// its tenants; the directory must exist, the database need not (a
// tenant that has made no call yet).
func usageStorePath(stateDir, tenant string) (string, error) {
	dir, err := resolveStateDir(stateDir)
	if err != nil {
		return "", err
	}
	if tenant != "" {
		if !tenantid.Valid(tenant) {
			return "", fmt.Errorf("--tenant %q is not a tenant id", tenant)
		}
		dir = filepath.Join(dir, "tenants", tenant)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if tenant != "" {
			return "", fmt.Errorf("no tenant %q under %s", tenant, filepath.Dir(filepath.Dir(dir)))
		}
		return "", fmt.Errorf("no state directory %s (run the gateway once, or pass --state-dir)", dir)
	}
	return filepath.Join(dir, store.File), nil
}

// printUsage writes the report as a table: its rows, then the total.
func printUsage(w io.Writer, rep *usage.Report) error {
	fmt.Fprintf(w, "since %s\n", rep.Since.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "total"
	if rep.By != "" {
		head = rep.By
	}
	fmt.Fprintf(tw, "%s\tcalls\tinput\toutput\tcache read\tcache write\ttotal tokens\tcost USD\tunpriced\t\n", head)
	line := func(key string, t *usage.Totals) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t\n", key, t.Calls, t.InputTokens, t.OutputTokens,
			t.CacheReadTokens, t.CacheWriteTokens, t.TotalTokens, strconv.FormatFloat(t.CostUsd, 'f', 6, 64), t.UnpricedCalls)
	}
	for i := range rep.Rows {
		line(rep.Rows[i].Key(), &rep.Rows[i].Totals)
	}
	line("total", &rep.Totals)
	return tw.Flush()
}
