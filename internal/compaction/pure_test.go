package compaction

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoClock: the package takes the time it is given. Its imports are
// held to pure ones by layering_test.go, which allows "time" for
// durations and dates; this keeps the clock out.
func TestNoClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, clock := range []string{"time.Now(", "time.Since(", "time.Until(", "time.Sleep(", "time.After(", "time.NewTimer(", "time.Tick("} {
			if strings.Contains(string(b), clock) {
				t.Errorf("%s calls %s", f, clock)
			}
		}
	}
}
