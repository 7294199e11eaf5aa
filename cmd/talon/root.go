package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "talon",
		Short:         "Talon runs AI employees: an OpenClaw-compatible gateway with explainable tool policy",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newServeCmd("serve", "Run the gateway, platform and Studio (today: the gateway)"),
		newServeCmd("gateway", "Run the gateway alone"),
		newPolicyCmd(), newToolsCmd(), newSandboxCmd(), newApprovalsCmd(), newDoctorCmd(), newBenchCmd(), newVersionCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the OpenClaw release whose behaviour Talon matches",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := "(devel)"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v = bi.Main.Version
			}
			fmt.Fprintf(cmd.OutOrStdout(), "talon %s (tool policy: OpenClaw 2026.3.13)\n", v)
			return nil
		},
	}
}
