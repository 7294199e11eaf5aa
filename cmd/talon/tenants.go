package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"talon/internal/platform"
	"talon/internal/store/catalog"
	"talon/internal/tenantid"
)

// newTenantsCmd is `talon tenants`: the tenants of a running platform
// across its gateway nodes, through its REST API (a move must run in the
// platform process, which refuses other work on the tenant meanwhile).
func newTenantsCmd() *cobra.Command {
	var base string
	cmd := &cobra.Command{Use: "tenants", Short: "A running platform's gateway nodes, and moving tenants between them"}
	cmd.PersistentFlags().StringVar(&base, "url", "http://127.0.0.1:18789", "the platform's address (talon serve --gateways)")
	move := &cobra.Command{
		Use:   "move TENANT NODE",
		Short: "Move a tenant to another gateway node: drain it, copy its state directory, switch its placement",
		Long: `Asks the platform (POST /api/tenants/TENANT/move, with $` + adminTokenEnv + `) to move
the tenant: its new work is refused while its running runs finish, its
directory is copied to NODE, the catalog places it there, and the old copy is
deleted. A move that fails leaves the tenant where it was, serving again.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !tenantid.Valid(args[0]) {
				return fmt.Errorf("tenant %q is not a tenant id", args[0])
			}
			if err := catalog.CheckNodeID(args[1]); err != nil {
				return err
			}
			body, _ := json.Marshal(map[string]string{"node": args[1]})
			var res platform.MoveResult
			if err := platformCall(cmd, base, http.MethodPost, "/api/tenants/"+url.PathEscape(args[0])+"/move", body, &res); err != nil {
				return fmt.Errorf("moving tenant %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s moved from %s to %s\n", res.Tenant, res.From, res.To)
			if res.Warning != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", res.Warning)
			}
			return nil
		},
	}
	nodes := &cobra.Command{
		Use:   "nodes",
		Short: "List the platform's gateway nodes with their health and tenants",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res struct{ Nodes []platform.NodeStatus }
			if err := platformCall(cmd, base, http.MethodGet, "/api/nodes", nil, &res); err != nil {
				return fmt.Errorf("listing nodes: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tURL\tUP\tTENANTS\tWHY DOWN")
			for _, n := range res.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%t\t%d\t%s\n", n.ID, n.URL, n.Up, n.Placed, n.Reason)
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(move, nodes)
	return cmd
}

// platformCall makes one admin call of the platform API and decodes its
// answer into out; a refusal is the API's message.
func platformCall(cmd *cobra.Command, base, method, path string, body []byte, out any) error {
	admin := os.Getenv(adminTokenEnv)
	if admin == "" {
		return fmt.Errorf("set %s to the platform's admin token", adminTokenEnv)
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url %q: want http(s)://host:port", base)
	}
	req, err := http.NewRequestWithContext(cmd.Context(), method, strings.TrimRight(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("%s (%s, HTTP %d)", e.Error.Message, e.Error.Code, resp.StatusCode)
		}
		return fmt.Errorf("HTTP %d from %s", resp.StatusCode, base)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	return nil
}
