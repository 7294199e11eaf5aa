package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"talon/internal/policy"
)

// maxVectorBytes bounds what `policy eval` reads, so a runaway pipe cannot
// exhaust memory.
const maxVectorBytes = 16 << 20

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Evaluate tool-policy conformance cases"}
	cmd.AddCommand(&cobra.Command{
		Use:   "eval",
		Short: "Read one conformance vector on stdin, print the result as JSON",
		Long: `Reads one case in the shape of conformance/tool-policy/vectors.json on standard
input and writes {"tools_out", "policy", "state", "warnings", "trace"} on standard
output. Exit status 0 when the input was understood, 2 with a one-line error when not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxVectorBytes+1))
			if err != nil {
				return fmt.Errorf("reading stdin: %w", err)
			}
			if len(data) > maxVectorBytes {
				return fmt.Errorf("reading stdin: input larger than %d bytes", maxVectorBytes)
			}
			v, err := policy.ParseVector(data)
			if err != nil {
				return err
			}
			res, err := policy.EvalVector(v)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		},
	})
	return cmd
}
