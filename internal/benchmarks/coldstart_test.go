package benchmarks

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkColdStart times exec of `talon serve` with a fresh state dir
// (config only: no store, no workspace yet) to the first 200 from /readyz,
// polled every 0.2 ms. ns/op and ms-to-ready are that time; rss-MB is the
// process's VmRSS just after ready, rss-MB-idle is the same after 1 s with
// no requests. Each process is stopped with SIGTERM and waited for.
func BenchmarkColdStart(b *testing.B) {
	bin := talonBinary(b)
	llm := newFakeLLM(b)
	root := b.TempDir()
	var ready time.Duration
	var rss, rssIdle float64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		state := filepath.Join(root, strconv.Itoa(i))
		writeConfig(b, state, llm.BaseURL())
		b.StartTimer()
		g, took := startGateway(b, bin, state)
		b.StopTimer()
		ready += took
		rss += rssMB(b, g)
		time.Sleep(time.Second)
		rssIdle += rssMB(b, g)
		stopGateway(b, g)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ready.Microseconds())/1e3/n, "ms-to-ready")
	b.ReportMetric(rss/n, "rss-MB")
	b.ReportMetric(rssIdle/n, "rss-MB-idle")
}
