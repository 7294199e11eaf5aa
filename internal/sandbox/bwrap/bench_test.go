package bwrap

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"talon/internal/sandbox"
)

// BenchmarkExecTrue measures the latency of one command, `true`, from
// Start to the end of Wait: bwrap's namespaces and mounts, the helper's
// Landlock and rlimits, the exec. "direct" is the same `true` started with
// os/exec and no sandbox, the machine's own cost of a process, to read the
// sandbox's share against. Target for bwrap: p50 ≤ 15 ms.
func BenchmarkExecTrue(b *testing.B) {
	b.Run("bwrap", func(b *testing.B) {
		sb := open(b, sandbox.Spec{})
		cmd := sandbox.Command{Argv: []string{"true"}}
		latencies(b, func() error {
			p, err := sb.Start(context.Background(), cmd)
			if err != nil {
				return err
			}
			exit, err := p.Wait()
			if err == nil && exit.Code != 0 {
				b.Fatalf("true exited %+v", exit)
			}
			return err
		})
	})
	b.Run("direct", func(b *testing.B) {
		latencies(b, func() error { return exec.Command("true").Run() })
	})
}

// latencies runs f b.N times and reports the percentiles of its duration.
func latencies(b *testing.B, f func() error) {
	// One run first: page in bwrap and the binary, and fail fast.
	if err := f(); err != nil {
		b.Fatal(err)
	}
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(d)
	at := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))]) / 1e6 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.90), "p90-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
