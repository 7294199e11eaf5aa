package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
			// The shape of exec.approvals.get, plus what Talon found wrong.
			view := struct {
				Path     string         `json:"path"`
				Exists   bool           `json:"exists"`
				Hash     string         `json:"hash"`
				File     *approval.File `json:"file"`
				Corrupt  string         `json:"corrupt,omitempty"`
				Warnings []string       `json:"warnings,omitempty"`
			}{snap.Path, snap.Exists, snap.Hash, snap.File.Redacted(), "", snap.Warnings}
			if snap.Corrupt != nil {
				view.Corrupt = snap.Corrupt.Error()
			}
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
	cmd.AddCommand(get, set)
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
