// Package sandboxtest holds what tests need to run commands in a real
// sandbox backend: whether the backend can run here, with CI's rule that
// a test CI must run never skips.
package sandboxtest

import (
	"context"
	"fmt"
	"testing"

	"talon/internal/sandbox"
	"talon/internal/testtier"
)

// Require returns why the backend registered as name cannot run here, for
// the test to skip with, or nil. Under CI=true it fails the test instead,
// saying how to install what is missing. The test binary must import the
// backend (for bwrap, also its helper).
func Require(t testing.TB, name string) error {
	t.Helper()
	b, err := sandbox.New(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Check(context.Background()); err != nil {
		if testtier.CI() {
			t.Fatalf("the %s backend cannot run here, and CI must run this test: %v (scripts/test.sh installs it when run as root)", name, err)
		}
		return fmt.Errorf("%s backend unavailable: %w", name, err)
	}
	return nil
}
