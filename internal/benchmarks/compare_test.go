package benchmarks

import (
	"context"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"talon/internal/bench"
	"talon/internal/procfs"
)

// BenchmarkCompareBuilds compares two talon binaries on the same
// non-streamed turn (model openclaw/main, a new session each turn): both
// gateways run at once against one fake LLM, and batches of turns go to
// one and then the other, alternating which goes first, so that a shared
// machine's slow and fast spells fall on both alike. It reports each
// build's median gateway CPU per turn over the batches (/proc/PID/stat)
// and its median turn time. Set TALON_BENCH_A and TALON_BENCH_B to the
// binaries (go build -o … ./cmd/talon in two worktrees) and run it with
// -benchtime 1x (it makes 2 × 10,000 turns whatever b.N); without them it
// is skipped.
func BenchmarkCompareBuilds(b *testing.B) {
	bins := []string{os.Getenv("TALON_BENCH_A"), os.Getenv("TALON_BENCH_B")}
	if bins[0] == "" || bins[1] == "" {
		b.Skip("set TALON_BENCH_A and TALON_BENCH_B to two talon binaries")
	}
	const (
		rounds = 20
		batch  = 500 // ≈ 0.4 s of CPU: 40 of /proc's 10 ms ticks
	)
	llm := newFakeLLM(b)
	type gw struct {
		url string
		pid int
		cpu []float64 // µs per turn, one per batch
		lat []time.Duration
	}
	var gws [2]*gw
	for i, bin := range bins {
		state := b.TempDir()
		writeConfig(b, state, llm.BaseURL())
		p, _ := startGateway(b, bin, state)
		defer stopGateway(b, p)
		gws[i] = &gw{url: p.URL + "/v1/chat/completions", pid: p.Cmd.Process.Pid}
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 4, DisableCompression: true, IdleConnTimeout: time.Minute}}
	defer client.CloseIdleConnections()
	body := []byte(`{"model":"openclaw/main","messages":[{"role":"user","content":"hi"}]}`)
	turns := func(g *gw, n int, keep bool) {
		for range n {
			t, err := bench.Chat(context.Background(), client, bench.Turn{URL: g.url, Token: bench.Token, Body: body, Want: llm.Text()})
			if err != nil {
				b.Fatal(err)
			}
			if keep {
				g.lat = append(g.lat, t.First)
			}
		}
	}
	cpu := func(g *gw) float64 {
		s, err := procfs.CPUSeconds(g.pid)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	for _, g := range gws {
		turns(g, 100, false) // warm-up
	}
	b.ResetTimer()
	for r := range rounds {
		for k := range 2 {
			g := gws[(r+k)%2]
			before := cpu(g)
			turns(g, batch, true)
			g.cpu = append(g.cpu, (cpu(g)-before)*1e6/batch)
		}
	}
	b.StopTimer()
	for i, g := range gws {
		slices.Sort(g.cpu)
		slices.Sort(g.lat)
		name := string(rune('A' + i))
		b.ReportMetric(g.cpu[len(g.cpu)/2], name+"-gw-cpu-µs/turn")
		b.ReportMetric(micros(g.lat[len(g.lat)/2]), name+"-p50-turn-µs")
		b.Logf("%s = %s: gateway CPU per turn p25 %.0f, p50 %.0f, p75 %.0f µs over %d batches of %d; turn p50 %v",
			name, bins[i], g.cpu[len(g.cpu)/4], g.cpu[len(g.cpu)/2], g.cpu[3*len(g.cpu)/4], rounds, batch, g.lat[len(g.lat)/2])
	}
}
