package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/platform/node"
)

// TestGatewayNodeAPI: talon gateway serves the node API when
// TALON_NODE_TOKEN is set, none without it, and refuses to start with a
// token short enough to guess.
func TestGatewayNodeAPI(t *testing.T) {
	const tok = "gateway-node-test-token-0123"
	t.Setenv(nodeTokenEnv, tok)
	state := t.TempDir()
	p := startGatewayIn(t, state, `{gateway: {port: %d, auth: {token: "root-token-for-node-test"}}}`)
	c := node.New(p.URL, tok)
	ctx := context.Background()
	if _, err := c.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatalf("CreateTenant: %v\n%s", err, p.Log)
	}
	h, err := c.Health(ctx)
	if err != nil || h.Tenants != 1 || h.Version == "" || h.MaxOpenFiles == 0 {
		t.Fatalf("Health: %+v %v", h, err)
	}
	stopGateway(t, p)

	t.Setenv(nodeTokenEnv, "")
	p = startGatewayIn(t, state, `{gateway: {port: %d, auth: {token: "root-token-for-node-test"}}}`)
	defer stopGateway(t, p)
	if _, err := node.New(p.URL, tok).Health(ctx); !errors.Is(err, node.ErrUnreachable) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Health without %s: %v, want the gateway's 404", nodeTokenEnv, err)
	}

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	short := t.TempDir()
	if err := os.WriteFile(filepath.Join(short, "talon.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "gateway", "--state-dir", short, "--port", strconv.Itoa(freePortT(t)))
	cmd.Env = append(os.Environ(), "TALON_TEST_MAIN=1", nodeTokenEnv+"=short")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), nodeTokenEnv) || !strings.Contains(string(out), "at least 16") {
		t.Fatalf("a 5-character node token: %v\n%s\nwant a refusal naming %s", err, out, nodeTokenEnv)
	}
}
