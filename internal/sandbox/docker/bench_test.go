package docker

import (
	"context"
	"slices"
	"testing"
	"time"

	"talon/internal/sandbox"
)

// BenchmarkExecTrue measures one `true` in a sandbox that is already
// open, from Start to the end of Wait: exec create, the hijacked start,
// runc entering the container, the PID wrapper, and the exit-code poll.
func BenchmarkExecTrue(b *testing.B) {
	bk, err := New(needEngine(b))
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	if err := chownForSandbox(ws); err != nil {
		b.Fatal(err)
	}
	sb, err := bk.Open(context.Background(), sandbox.Spec{ID: "bench-exec-true", Root: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	runTrue := func() {
		p, err := sb.Start(context.Background(), sandbox.Command{Argv: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		if ex, err := p.Wait(); err != nil || ex.Code != 0 {
			b.Fatalf("true: %+v, %v", ex, err)
		}
	}
	runTrue() // the killer exec starts with the first command
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		runTrue()
		took = append(took, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(took)
	ms := func(p int) float64 { return float64(took[(len(took)-1)*p/100]) / float64(time.Millisecond) }
	b.ReportMetric(ms(50), "p50-ms")
	b.ReportMetric(ms(90), "p90-ms")
}
