package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "talon",
		Short:         "Talon runs AI employees: an OpenClaw-compatible gateway with explainable tool policy",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// `talon gateway` serves, as OpenClaw's does; its one subcommand is
	// call. Cobra runs a subcommand when the first argument names one, and
	// the serve RunE otherwise (NoArgs refuses any other argument).
	gw := newServeCmd("gateway", "Run the gateway alone; `talon gateway call` calls a running one")
	gw.AddCommand(newGatewayCallCmd())
	root.AddCommand(
		newServeCmd("serve", "Run the gateway, the workforce platform's API and Studio on one address"),
		gw,
		newCronCmd(), newSystemCmd(), newUsageCmd(),
		newPolicyCmd(), newToolsCmd(), newSandboxCmd(), newApprovalsCmd(), newPairingCmd(), newTemplatesCmd(), newTenantsCmd(), newDoctorCmd(), newBenchCmd(), newVersionCmd(), newInternalCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the OpenClaw release whose behaviour Talon matches",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "talon %s (tool policy: OpenClaw 2026.3.13)\n", version())
			return nil
		},
	}
}
