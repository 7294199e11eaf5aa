package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"talon/internal/config"
	"talon/internal/policy"
	"talon/internal/sandbox"
)

func newSandboxCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "Inspect where agents' tools and commands run"}
	var (
		cfgPath, stateDir, agentID, sessionKey string
		asJSON                                 bool
	)
	explain := &cobra.Command{
		Use:   "explain",
		Short: "Show whether a session is sandboxed and why, its workspace and mounts, its backend and the sandbox tool policy",
		Long: `Resolves the sandbox of one session of one agent as the gateway would: whether it is
sandboxed and why (mode, and the main-session rule of non-main), the scope, workspace
access, backend and network with the config key each came from, the workspace root
and mounts, the limits, whether the backend can run here (its check, and for bwrap
its layers: namespaces, limits, Landlock), and the sandbox tool policy with the key
each list came from.

The session defaults to the agent's main session. The state dir defaults to the
directory of --config when it is given (a tenant's directory holds its config),
else ~/.talon; the config defaults to the one in the state dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if agentID == "" {
				return errors.New("sandbox explain: --agent ID is required")
			}
			cfg, dir, err := sandboxConfig(cfgPath, stateDir)
			if err != nil {
				return err
			}
			id := config.NormalizeAgentID(agentID)
			if !cfg.HasAgent(id) {
				return fmt.Errorf("sandbox explain: agent %q is not in the config (agents.list)", id)
			}
			key := sessionKey
			if key == "" {
				key = policy.MainSessionKey(cfg, id)
			}
			x, err := sandbox.Explain(cmd.Context(), cfg, dir, id, key)
			if err != nil {
				return err
			}
			return printReport(cmd.OutOrStdout(), asJSON, x)
		},
	}
	fl := explain.Flags()
	fl.StringVar(&agentID, "agent", "", "agent id (required)")
	fl.StringVar(&sessionKey, "session-key", "", "session key, e.g. agent:work:whatsapp:group:123 (default: the agent's main session)")
	fl.StringVar(&cfgPath, "config", "", "config file (default: the one in the state dir)")
	fl.StringVar(&stateDir, "state-dir", "", "state directory (default: the directory of --config, else ~/.talon)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(explain)
	return cmd
}

// printReport writes an explanation as indented JSON, or as its text.
func printReport(w io.Writer, asJSON bool, x interface{ Text() string }) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(x)
	}
	_, err := io.WriteString(w, x.Text())
	return err
}

// sandboxConfig loads the config and picks the state dir as the help of
// sandbox explain says. Without --config, a state dir with no config file
// explains the defaults, as the gateway would run them.
func sandboxConfig(cfgPath, stateDir string) (*config.Config, string, error) {
	if stateDir == "" && cfgPath != "" {
		stateDir = filepath.Dir(cfgPath)
	}
	if stateDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, "", fmt.Errorf("finding the state dir: %w (pass --state-dir)", err)
		}
		stateDir = filepath.Join(home, ".talon")
	}
	if cfgPath == "" {
		p, ok := config.Find(stateDir)
		if !ok {
			return &config.Config{}, stateDir, nil
		}
		cfgPath = p
	}
	f, err := loadConfig(cfgPath)
	if err != nil {
		return nil, "", err
	}
	return f.Config, stateDir, nil
}
