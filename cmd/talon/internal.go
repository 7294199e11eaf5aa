package main

import (
	"github.com/spf13/cobra"

	"talon/internal/tools/pdf"
)

// `talon internal …` are commands Talon starts itself, hidden from help:
// pdf-text is the pdf tool's extraction child (internal/tools/pdf).

func newInternalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    pdf.ChildArgs[0],
		Short:  "Commands Talon runs itself",
		Hidden: true,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   pdf.ChildArgs[1],
		Short: "Extract a PDF's text: a request on stdin, the pages as JSON on stdout, under limits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := pdf.ServeChild(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return exitError{code: code}
			}
			return nil
		},
	})
	return cmd
}
