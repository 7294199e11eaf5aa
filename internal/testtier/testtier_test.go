package testtier

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// outcome is how a helper ended the test it was given.
type outcome struct {
	skipped, failed string
}

// recorder stands in for the test a helper is given, so that a skip or a
// failure can be observed without ending this test.
type recorder struct {
	testing.TB
	out *outcome
}

func (r recorder) Helper() {}

func (r recorder) Skip(args ...any) { r.out.skipped = fmt.Sprint(args...); runtime.Goexit() }

func (r recorder) Skipf(format string, args ...any) {
	r.out.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r recorder) Fatalf(format string, args ...any) {
	r.out.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs f with a recorder, on a goroutine of its own since a skip or a
// failure ends it.
func call(t *testing.T, f func(testing.TB)) outcome {
	var out outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(recorder{TB: t, out: &out})
	}()
	<-done
	return out
}

func TestTiers(t *testing.T) {
	tests := []struct {
		name, ci, tier string
		full, inCI     bool
		badTier        bool
	}{
		{name: "developer", full: false},
		{name: "CI", ci: "true", full: true, inCI: true},
		{name: "CI spelled 1", ci: "1", full: true, inCI: true},
		{name: "CI false", ci: "false", full: false},
		{name: "full outside CI", tier: "full", full: true},
		{name: "full in CI", ci: "true", tier: "full", full: true, inCI: true},
		{name: "unknown tier", tier: "yes", badTier: true},
		{name: "unknown tier in CI", ci: "true", tier: "Full", badTier: true, inCI: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			t.Setenv(envTier, tt.tier)
			if got := CI(); got != tt.inCI {
				t.Errorf("CI() = %v, want %v", got, tt.inCI)
			}
			var full bool
			out := call(t, func(tb testing.TB) { full = Full(tb) })
			if tt.badTier {
				if !strings.Contains(out.failed, envTier+"=") || !strings.Contains(out.failed, `"full"`) {
					t.Fatalf("Full with %s=%q: %+v, want a failure naming the variable and its value", envTier, tt.tier, out)
				}
				return
			}
			if out != (outcome{}) || full != tt.full {
				t.Fatalf("Full = %v (%+v), want %v", full, out, tt.full)
			}

			out = call(t, func(tb testing.TB) { RequireFull(tb, "the soak") })
			if tt.full != (out.skipped == "") || out.failed != "" {
				t.Errorf("RequireFull: %+v, want a skip only outside the full tier", out)
			}
			if !tt.full && (!strings.Contains(out.skipped, "the soak") || !strings.Contains(out.skipped, "TALON_E2E=full")) {
				t.Errorf("RequireFull's skip %q does not say why and how to run it", out.skipped)
			}

			var rounds int
			call(t, func(tb testing.TB) { rounds = Rounds(tb, 2, 50) })
			want := 2
			if tt.full {
				want = 50
			}
			if rounds != want {
				t.Errorf("Rounds(2, 50) = %d, want %d", rounds, want)
			}

			out = call(t, func(tb testing.TB) { Unavailable(tb, "bwrap is not on %s", "PATH") })
			if tt.inCI {
				if out.failed != "bwrap is not on PATH (CI=true: a test never skips)" || out.skipped != "" {
					t.Errorf("Unavailable under CI: %+v, want a failure", out)
				}
			} else if out.skipped != "bwrap is not on PATH" || out.failed != "" {
				t.Errorf("Unavailable outside CI: %+v, want a skip with the message", out)
			}
		})
	}
}

// TestBenchmarksRun: a benchmark asked for with -bench is never skipped
// as heavy.
func TestBenchmarksRun(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv(envTier, "")
	r := testing.Benchmark(func(b *testing.B) {
		RequireFull(b, "an engine")
		for b.Loop() {
		}
	})
	if r.N == 0 {
		t.Fatal("the benchmark was skipped outside the full tier")
	}
}
