package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/automation"
	"talon/internal/config"
	"talon/internal/gateway"
	"talon/internal/store"
	"talon/internal/tenantid"
)

// Bounds of what `talon cron import` reads: OpenClaw caps a run log at
// 2 MB by default, and a store of 1,000 jobs is far below the rest.
const (
	maxLegacyStoreFile = 32 << 20
	maxLegacyRunFile   = 16 << 20
	maxLegacyRunFiles  = 10_000
)

// newCronImportCmd is `talon cron import [DIR]`: OpenClaw's cron store
// into a tenant's database, once.
func newCronImportCmd() *cobra.Command {
	var stateDir, tenant string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import [DIR]",
		Short: "Import OpenClaw's cron jobs and run history (default ~/.openclaw/cron)",
		Long: `Reads OpenClaw's cron store — jobs.json, jobs-state.json, jobs-quarantine.json and
runs/<jobId>.jsonl — from DIR and stores its jobs, their state and their run history in the
state directory's database (a tenant's with --tenant). A job whose id is there already is
left as it is, so importing twice adds nothing. Rows that cannot be read, and the rows
OpenClaw itself quarantined, are kept in the database for review, never dropped; the jobs
around them are imported. The source files are not changed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := ""
			if len(args) == 1 {
				src = args[0]
			}
			return runCronImport(cmd, src, stateDir, tenant, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&stateDir, "state-dir", "", "state directory (default ~/.talon)")
	fl.StringVar(&tenant, "tenant", "", "tenant id (default: the operator's own)")
	fl.BoolVar(&asJSON, "json", false, "print the counts as JSON")
	return cmd
}

func runCronImport(cmd *cobra.Command, src, stateDir, tenant string, asJSON bool) error {
	if src == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("cron import: finding ~/.openclaw: %w (name the directory)", err)
		}
		src = filepath.Join(home, ".openclaw", "cron")
	}
	files, err := readLegacyCron(src)
	if err != nil {
		return fmt.Errorf("cron import: %w", err)
	}
	path, err := cronStorePath(stateDir, tenant)
	if err != nil {
		return fmt.Errorf("cron import: %w", err)
	}
	cfg, err := loadGatewayConfig(configIn(filepath.Dir(path), ""), false)
	if err != nil {
		return fmt.Errorf("cron import: %w", err)
	}
	db, err := store.Open(path)
	if err != nil {
		return fmt.Errorf("cron import: %w", err)
	}
	defer db.Close()
	now := time.Now()
	imp := automation.ParseLegacy(files, automation.LegacyOptions{NowMs: now.UnixMilli(), Check: importCheck(cfg.Config, now)})
	got, err := db.ImportCron(cmd.Context(), imp)
	if err != nil {
		return fmt.Errorf("cron import: %w", err)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(out).Encode(map[string]any{"source": src, "database": path, "jobs": got.Jobs,
			"jobsPresent": got.JobsPresent, "runs": got.Runs, "quarantined": got.Quarantined})
	}
	fmt.Fprintf(out, "imported %s (%d already there) and %s from %s into %s\n",
		plural(got.Jobs, "job"), got.JobsPresent, plural(got.Runs, "run"), src, path)
	if got.Quarantined > 0 {
		fmt.Fprintf(out, "%s could not be imported and %s kept in the database's cron_quarantine table for review\n",
			plural(got.Quarantined, "row"), map[bool]string{true: "is", false: "are"}[got.Quarantined == 1])
	}
	return nil
}

// importCheck completes and checks an imported job as cron.add does a
// new one, against the config of the database it goes to, so that a job
// the gateway would refuse is quarantined rather than imported. Webhook
// URLs are checked for their form only: the SSRF policy is the running
// gateway's, and it checks again before each POST. The agents, channels
// and zone are read as internal/gateway's cronChecks and defaultZone
// read them; those are unexported there, so the rule is restated here.
func importCheck(cfg *config.Config, now time.Time) func(*automation.Job) error {
	checks, zone := automation.ChecksOf(cfg), automation.DefaultZone(cfg)
	return func(j *automation.Job) error {
		automation.Normalize(j, now, zone)
		return automation.Validate(*j, checks)
	}
}

// cronStorePath is the database of the state directory, or of one of its
// tenants; the directory must exist (a mistyped --state-dir is not made).
func cronStorePath(stateDir, tenant string) (string, error) {
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
		return "", fmt.Errorf("no state directory %s (run the gateway once, or pass --state-dir)", dir)
	}
	return filepath.Join(dir, gateway.StoreFile), nil
}

// readLegacyCron reads the legacy store's files under dir; absent ones
// stay nil, and a directory with none of them is an error.
func readLegacyCron(dir string) (automation.LegacyFiles, error) {
	var f automation.LegacyFiles
	for _, p := range []struct {
		name string
		dst  *[]byte
	}{{"jobs.json", &f.Jobs}, {"jobs-state.json", &f.State}, {"jobs-quarantine.json", &f.Quarantine}} {
		b, err := readBounded(filepath.Join(dir, p.name), maxLegacyStoreFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		*p.dst = b
	}
	runs, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return f, fmt.Errorf("reading %s: %w", filepath.Join(dir, "runs"), err)
	}
	for _, e := range runs {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() {
			continue // OpenClaw's archived logs (.jsonl.migrated), links, directories
		}
		if len(f.Runs) == maxLegacyRunFiles {
			return f, fmt.Errorf("%s holds more than %d run logs", filepath.Join(dir, "runs"), maxLegacyRunFiles)
		}
		b, err := readBounded(filepath.Join(dir, "runs", e.Name()), maxLegacyRunFile)
		if err != nil {
			return f, err
		}
		if f.Runs == nil {
			f.Runs = map[string][]byte{}
		}
		f.Runs[id] = b
	}
	if f.Jobs == nil && f.State == nil && f.Quarantine == nil && f.Runs == nil {
		return f, fmt.Errorf("no OpenClaw cron store in %s (no jobs.json, jobs-state.json, jobs-quarantine.json or runs/*.jsonl)", dir)
	}
	return f, nil
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("reading %s: larger than %d MiB", path, limit>>20)
	}
	return b, nil
}
