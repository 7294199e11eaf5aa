package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/approval"
)

func newApprovalsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "Show or replace the exec approvals file (<state-dir>/exec-approvals.json)",
	}
	var stateDir string
	var asJSON bool
	get := &cobra.Command{
		Use:   "get",
		Short: "Print the exec approvals file with its hash (the socket token is left out)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := approvalsStore(stateDir)
			if err != nil {
				return err
			}
			snap := s.Load()
			out := cmd.OutOrStdout()
			view := snap.View() // exec.approvals.get's shape
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(view); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "path: %s\nexists: %t\nhash: %s\n", view.Path, view.Exists, view.Hash)
				for _, w := range view.Warnings {
					fmt.Fprintf(out, "warning: %s\n", w)
				}
				b, err := view.File.Marshal()
				if err != nil {
					return err
				}
				out.Write(b)
			}
			if snap.Corrupt != nil {
				return exitError{1, snap.Corrupt.Error()}
			}
			return nil
		},
	}
	get.Flags().BoolVar(&asJSON, "json", false, "print {path, exists, hash, file} as JSON")

	var baseHash string
	set := &cobra.Command{
		Use:   "set",
		Short: "Replace the exec approvals file with the JSON on stdin; --base-hash is the hash get printed",
		Long: "set reads a whole approvals file (version 1) from stdin, normalises it and writes it\n" +
			"atomically, but only if the file on disk still has --base-hash (a missing file needs none).\n" +
			"Values normalisation drops are reported on stderr.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := approvalsStore(stateDir)
			if err != nil {
				return err
			}
			raw, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<20))
			if err != nil {
				return fmt.Errorf("approvals set: reading stdin: %w", err)
			}
			f, warnings, err := approval.Parse(raw)
			if err != nil {
				return fmt.Errorf("approvals set: %w", err)
			}
			for _, w := range warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			snap, err := s.Save(cmd.Context(), f, baseHash)
			if err != nil {
				return fmt.Errorf("approvals set: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\nhash: %s\n", snap.Path, snap.Hash)
			return nil
		},
	}
	set.Flags().StringVar(&baseHash, "base-hash", "", "hash of the file being replaced, from approvals get")
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", "", "state directory (default ~/.talon)")
	cmd.AddCommand(get, set, newApprovalsPendingCmd(&stateDir), newApprovalsResolveCmd(&stateDir))
	return cmd
}

// connHelp says where pending and resolve connect: they ask the running
// gateway, which holds the pending approvals in memory.
const connHelp = `It asks the running gateway over WebSocket (exec.approval.list / exec.approval.resolve,
scope operator.approvals), found as talon gateway call finds it: --url, else the local
gateway of --state-dir/--config; the secret from --token, --password,
$TALON_GATEWAY_TOKEN, $TALON_GATEWAY_PASSWORD, else the config's. A gateway that
cannot be reached, or refuses, exits 1.`

func newApprovalsPendingCmd(stateDir *string) *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "pending",
		Short: "List the exec approvals waiting for an operator on the running gateway",
		Long: "pending lists the commands waiting for approval, oldest first: the id prefix to resolve\n" +
			"them with, how long until askFallback applies, the agent, session, host and command.\n\n" + connHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.stateDir = *stateDir
			raw, err := callGateway(cmd, f, "exec.approval.list", nil)
			if err != nil {
				return err
			}
			if f.asJSON {
				return printPayload(cmd.OutOrStdout(), raw)
			}
			var list struct {
				Approvals []approval.RequestedPayload `json:"approvals"`
			}
			if err := json.Unmarshal(raw, &list); err != nil {
				return exitError{code: 1, msg: fmt.Sprintf("approvals pending: the gateway's answer is not a list of approvals: %v", err)}
			}
			printPending(cmd.OutOrStdout(), list.Approvals, time.Now())
			return nil
		},
	}
	connFlags(cmd, &f)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the gateway's answer ({approvals: [...]}) as JSON")
	return cmd
}

// callGateway connects as f says, makes one call and returns its payload;
// a failure is reported as talon gateway call reports it (exit 1).
func callGateway(cmd *cobra.Command, f callFlags, method string, params any) (json.RawMessage, error) {
	ctx, cancel, timeout, c, err := dialGateway(cmd, f)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer c.Close()
	raw, err := c.CallRaw(ctx, method, params)
	if err != nil {
		return nil, callFailure(cmd.ErrOrStderr(), false, timeoutErr(ctx, timeout, err))
	}
	return raw, nil
}

// printPending writes one line per approval, in a table.
func printPending(w io.Writer, list []approval.RequestedPayload, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(w, "No exec approvals pending.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEXPIRES IN\tAGENT\tSESSION\tHOST\tCWD\tCOMMAND")
	for _, p := range list {
		left := time.Duration(p.ExpiresAtMs-now.UnixMilli()) * time.Millisecond
		r := p.Request
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", approval.Slug(p.ID), max(left, 0).Round(time.Second), r.AgentID, r.SessionKey, r.Host, r.Cwd, oneLine(r.Command))
	}
	tw.Flush()
}

// oneLine keeps a command on its table row: newlines and other control
// characters are shown escaped, and a long command is cut, marked.
func oneLine(s string) string {
	q := strconv.Quote(s)
	q = q[1 : len(q)-1]
	if len(q) > 200 {
		q = q[:200] + "…"
	}
	return q
}

func newApprovalsResolveCmd(stateDir *string) *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "resolve ID allow-once|allow-always|deny",
		Short: "Decide a pending exec approval on the running gateway",
		Long: "resolve decides the approval whose id starts with ID (pending shows them): allow-once runs\n" +
			"the command once, allow-always runs it and adds its programs (or, for a command whose\n" +
			"safety depends on its arguments, that exact command) to the allowlist, deny refuses it.\n" +
			"The outcome reaches the session as a system event. An unknown, expired or already\n" +
			"decided id exits 1.\n\n" + connHelp,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, decision := strings.TrimSpace(args[0]), args[1]
			switch decision {
			case approval.DecisionAllowOnce, approval.DecisionAllowAlways, approval.DecisionDeny:
			default:
				return fmt.Errorf("approvals resolve: decision %q: use allow-once, allow-always or deny", decision)
			}
			if id == "" {
				return errors.New("approvals resolve: empty id: pass the id or a unique prefix of it (approvals pending shows them)")
			}
			f.stateDir = *stateDir
			if _, err := callGateway(cmd, f, "exec.approval.resolve", map[string]string{"id": id, "decision": decision}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", id, decision)
			return nil
		},
	}
	connFlags(cmd, &f)
	return cmd
}

func approvalsStore(stateDir string) (*approval.Store, error) {
	if stateDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("finding the state dir: %w (pass --state-dir)", err)
		}
		stateDir = filepath.Join(home, ".talon")
	}
	return approval.NewStore(stateDir)
}
