// Package mcptest finds the real MCP server the tests of several packages
// run: @modelcontextprotocol/server-everything from npm, installed by
// `npm ci` in e2e/node (scripts/test.sh does it). It is for tests only.
package mcptest

import (
	"os"
	"path/filepath"
	"testing"

	"talon/internal/testtier"
)

// EverythingBin returns the path of mcp-server-everything, found by
// walking up from the working directory to the repository root. When it is
// missing the test fails under CI=true and is skipped otherwise, saying
// how to install it.
func EverythingBin(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("repository root (go.mod) not found above the package directory")
		}
		dir = parent
	}
	bin := filepath.Join(dir, "e2e", "node", "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		testtier.Unavailable(tb, "%s is missing: run npm ci in e2e/node", bin)
	}
	return bin
}
