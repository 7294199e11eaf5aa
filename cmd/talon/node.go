package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"talon/internal/authlimit"
	"talon/internal/gateway"
	"talon/internal/platform/node"
)

// nodeTokenEnv holds the node API's token: the operator's secret shared by
// the platform and its gateways. Unset, a gateway has no node API.
const nodeTokenEnv = "TALON_NODE_TOKEN"

// The gateway is what the node API drains, resumes and drops tenants in.
var _ node.Gateway = (*gateway.Server)(nil)

// nodeAPI is the node API handler for a gateway over stateDir when
// TALON_NODE_TOKEN is set, else nil; the caller attaches the gateway once
// made.
func nodeAPI(stateDir string, limit *authlimit.Guard, log *slog.Logger) (*node.Handler, error) {
	tok := os.Getenv(nodeTokenEnv)
	if tok == "" {
		return nil, nil
	}
	h, err := node.NewHandler(node.Options{StateDir: stateDir, Token: tok, AuthLimit: limit, Version: version(), Log: log.With("component", "node-api")})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nodeTokenEnv, err)
	}
	log.Info("node api on /node/", "auth", "the token in "+nodeTokenEnv)
	return h, nil
}

// version is the binary's module version, "(devel)" for a build from a
// checkout.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
