package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"talon/internal/platform"
	"talon/internal/store/catalog"
)

// templatesFlags are the flags every templates subcommand shares.
type templatesFlags struct {
	stateDir, templates, database string
}

func (f *templatesFlags) open(ctx context.Context) (*platform.Platform, func(), error) {
	state, err := resolveStateDir(f.stateDir)
	if err != nil {
		return nil, nil, err
	}
	st, err := platform.OpenStore(ctx, state, f.database)
	if err != nil {
		return nil, nil, err
	}
	p, err := platform.New(ctx, platform.Options{StateDir: state, Templates: f.templates, Store: st})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return p, func() { st.Close() }, nil
}

func newTemplatesCmd() *cobra.Command {
	var f templatesFlags
	cmd := &cobra.Command{Use: "templates", Short: "The employee templates: list them, sync their installations"}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.stateDir, "state-dir", "", "state directory whose tenants/ are synced (default ~/.talon)")
	pf.StringVar(&f.templates, "templates", "templates", "directory of templates/<slug>/")
	pf.StringVar(&f.database, "database", os.Getenv("TALON_PLATFORM_DATABASE"), "platform database: sqlite:[PATH] (default <state-dir>/platform.db) or a postgres:// URL ($TALON_PLATFORM_DATABASE)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List the templates that load, with their installations, and those that do not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, done, err := f.open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			lib, err := p.Library(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SLUG\tNAME\tMODEL\tINSTALLED\tHASH")
			for _, e := range lib {
				ins, err := p.Installations(cmd.Context(), catalog.Filter{Slug: e.Slug})
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.12s\n", e.Slug, e.Name, e.DefaultModel, len(ins), e.TemplateHash)
			}
			tw.Flush()
			for _, err := range p.LoadErrors() {
				fmt.Fprintf(cmd.ErrOrStderr(), "not loaded: %v\n", err)
			}
			if len(p.LoadErrors()) > 0 {
				return fmt.Errorf("%d template(s) did not load", len(p.LoadErrors()))
			}
			return nil
		},
	}
	var dryRun bool
	syncCmd := &cobra.Command{
		Use:   "sync [SLUG]",
		Short: "Bring every installation (of SLUG, or of every template) up to its template; --dry-run prints what would change",
		Long: `Re-syncs the files and agent config of every tenant that installed the template,
reading the templates as they are on disk now. The template owns exactly the files it
ships: new and changed ones are written (+, ~), ones an earlier version shipped and this
one does not are removed (-), and nothing else in a workspace is touched (memory/,
MEMORY.md, USER.md, TOOLS.md, canvas/, the employee's own files and skills). A file the
employee edited is never overwritten or removed: when the template changes it too, the
employee's copy is kept as <name>.local-<date> (!), and when the template drops it, it
stays (=). An unchanged template writes nothing. The agent's tools config is rebuilt
(stale tenant-level tools.alsoAllow entries removed) and required plugins enabled.
Prints per tenant what changed (or, with --dry-run, what would), and exits 1 if any
tenant failed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, done, err := f.open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			var res []platform.SyncResult
			if len(args) == 1 {
				res, err = p.Sync(cmd.Context(), args[0], dryRun)
			} else {
				res, err = p.SyncAll(cmd.Context(), dryRun)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			failed := 0
			for _, r := range res {
				switch {
				case r.Error != "":
					failed++
					fmt.Fprintf(out, "%s/%s: error: %s\n", r.Tenant, r.Slug, r.Error)
				case len(r.Summary) == 0:
					fmt.Fprintf(out, "%s/%s: up to date\n", r.Tenant, r.Slug)
				default:
					verb := "changed"
					if dryRun {
						verb = "would change"
					}
					fmt.Fprintf(out, "%s/%s: %s:\n  %s\n", r.Tenant, r.Slug, verb, strings.Join(r.Summary, "\n  "))
				}
			}
			if len(res) == 0 {
				fmt.Fprintln(out, "no installations")
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d installation(s) failed", failed, len(res))
			}
			return nil
		},
	}
	syncCmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change, change nothing")
	cmd.AddCommand(list, syncCmd)
	return cmd
}
