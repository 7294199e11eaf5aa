// Package testtier says which tier of Talon's tests runs. The fast tier is
// what `go test ./...` runs: the unit and loopback tests, with real SQLite,
// real bubblewrap and the real binary, in under two minutes on two cores.
// The full tier adds the heavy end-to-end tests — the soak, many kill -9
// rounds, OpenClaw's CLI, Chromium, Docker, PostgreSQL — and runs when
// CI=true or TALON_E2E=full; ./scripts/test.sh sets TALON_E2E=full, so it
// runs everything.
//
// Under CI=true a test never skips: what it needs and cannot find fails it
// with a message saying how to install it. Elsewhere it skips with that
// message.
package testtier

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// envTier selects the full tier outside CI.
const envTier = "TALON_E2E"

// CI reports whether CI is true (in any spelling strconv.ParseBool takes).
func CI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// Full reports whether the full tier runs: CI=true or TALON_E2E=full. Any
// other value of TALON_E2E fails tb rather than quietly running the fast
// tier for a developer who asked for more.
func Full(tb testing.TB) bool {
	tb.Helper()
	switch v := os.Getenv(envTier); v {
	case "full":
		return true
	case "":
		return CI()
	default:
		tb.Fatalf("%s=%q: want %q (the heavy tests too) or unset (the fast tier)", envTier, v, "full")
		return false
	}
}

// RequireFull skips tb outside the full tier; why says what makes the test
// heavy. A benchmark always runs: -bench asked for it by name.
func RequireFull(tb testing.TB, why string) {
	tb.Helper()
	if _, bench := tb.(*testing.B); bench || Full(tb) {
		return
	}
	tb.Skipf("heavy test (%s): runs under CI=true or %s=full (./scripts/test.sh sets it)", why, envTier)
}

// Rounds is how many rounds a repeated test (kill -9 at a random moment,
// again and again) runs: fast in the fast tier, full in the full one.
func Rounds(tb testing.TB, fast, full int) int {
	tb.Helper()
	if Full(tb) {
		return full
	}
	return fast
}

// Unavailable fails tb under CI=true and skips it elsewhere; the message
// says what is missing and how to install it.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		tb.Fatalf("%s (CI=true: a test never skips)", msg)
	}
	tb.Skip(msg)
}
