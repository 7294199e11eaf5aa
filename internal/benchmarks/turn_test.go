package benchmarks

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"talon/internal/bench"
	"talon/internal/fakellm"
	"talon/internal/procfs"
)

// minPairs is the fewest measured pairs a run makes, whatever b.N, so the
// p99 rests on enough samples.
const minPairs = 200

// A sessionShape says which session each gateway turn lands in.
type sessionShape struct {
	name string
	// user is the request's "user" for turn i ("" = none: a new session
	// per turn).
	user func(i int) string
	// warm is the number of pairs before measuring.
	warm int
}

var sessionShapes = []sessionShape{
	// No "user": every turn opens a new session, as a stateless OpenAI
	// client does (OpenClaw's ~250 ms figure is this case).
	{"session=new", func(int) string { return "" }, 50},
	// A new "user" every 10 turns: conversations of 10 turns, history of
	// 0–18 stored messages.
	{"session=10turns", func(i int) string { return fmt.Sprintf("bench-%d", i/10) }, 50},
	// One stable "user": one session reused. 210 warm-up turns fill the
	// transcript past the runner's 400-message history limit, so every
	// measured turn reads and sends the last 400 messages: the steady state
	// of a long conversation, the same for any b.N.
	{"session=long", func(int) string { return "bench" }, 210},
}

// BenchmarkTurnOverhead measures what the gateway adds to a non-streamed
// chat turn. Each pair is one request straight to the fake LLM and one
// through `talon serve` (model openclaw/main, "hi"), in alternating order,
// over keep-alive connections; the metrics are percentiles of the per-pair
// difference gateway − direct, so machine noise common to both cancels.
// ns/op is the wall time of one pair.
func BenchmarkTurnOverhead(b *testing.B) {
	for _, s := range sessionShapes {
		b.Run(s.name, func(b *testing.B) { benchTurns(b, s, false) })
	}
}

// BenchmarkTurnOverheadStream is BenchmarkTurnOverhead with "stream": true;
// each side's time is to the first non-empty delta.content (TTFT).
func BenchmarkTurnOverheadStream(b *testing.B) {
	for _, s := range sessionShapes {
		b.Run(s.name, func(b *testing.B) { benchTurns(b, s, true) })
	}
}

func benchTurns(b *testing.B, shape sessionShape, stream bool) {
	bin := talonBinary(b)
	llm := newFakeLLM(b)
	state := b.TempDir()
	writeConfig(b, state, llm.BaseURL())
	g, _ := startGateway(b, bin, state)
	defer stopGateway(b, g)
	measurePairs(b, shape, stream, llm, g.URL, g.Cmd.Process.Pid, g.Log.String)
	b.ReportMetric(rssMB(b, g), "rss-MB-after")
}

// measurePairs runs the warm-up and then max(b.N, minPairs) measured
// pairs (bench.MeasurePairs: direct, then through the gateway at gwURL,
// alternating) and reports the metrics. gwPID, when not 0, is the
// gateway's process: its CPU time over the measured pairs, per turn, is
// reported too (gw-cpu-µs/turn: everything the gateway spends, runtime and
// GC included, and far steadier than the latencies on a shared machine).
// gwLog returns the gateway's log for failure messages.
func measurePairs(b *testing.B, shape sessionShape, stream bool, llm *fakellm.Server, gwURL string, gwPID int, gwLog func() string) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 4, DisableCompression: true, IdleConnTimeout: time.Minute}}
	defer client.CloseIdleConnections()
	streamField := ""
	if stream {
		streamField = `,"stream":true`
	}
	ctx := context.Background()
	direct := bench.Turn{URL: llm.BaseURL() + "/chat/completions", Token: bench.UpstreamKey, Stream: stream, Want: llm.Text(),
		Body: []byte(`{"model":"fake-model","messages":[{"role":"user","content":"hi"}]` + streamField + `}`)}
	turn := 0
	a := func() (time.Duration, error) {
		t, err := bench.Chat(ctx, client, direct)
		return t.First, err
	}
	gw := func() (time.Duration, error) {
		user := ""
		if u := shape.user(turn); u != "" {
			user = `,"user":"` + u + `"`
		}
		turn++
		t, err := bench.Chat(ctx, client, bench.Turn{URL: gwURL + "/v1/chat/completions", Token: bench.Token, Stream: stream, Want: llm.Text(),
			Body: []byte(`{"model":"openclaw/main","messages":[{"role":"user","content":"hi"}]` + user + streamField + `}`)})
		return t.First, err
	}
	if _, err := bench.MeasurePairs(shape.warm, a, gw); err != nil {
		b.Fatalf("warm-up: %v\ngateway log:\n%s", err, gwLog())
	}
	n := max(b.N, minPairs)
	before := llm.Chats()
	cpu := func() float64 {
		if gwPID == 0 {
			return 0
		}
		s, err := procfs.CPUSeconds(gwPID)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	cpuBefore := cpu()
	b.ResetTimer()
	p, err := bench.MeasurePairs(n, a, gw)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%v\ngateway log:\n%s", err, gwLog())
	}
	if gwPID != 0 {
		b.ReportMetric((cpu()-cpuBefore)*1e6/float64(n), "gw-cpu-µs/turn")
	}
	if calls := llm.Chats() - before; calls != int64(2*n) {
		b.Fatalf("the fake LLM answered %d chats for %d pairs, want %d (one upstream call per gateway turn)", calls, n, 2*n)
	}
	b.ReportMetric(micros(bench.Percentile(p.Diff, 50)), "p50-added-µs")
	b.ReportMetric(micros(bench.Percentile(p.Diff, 99)), "p99-added-µs")
	b.ReportMetric(micros(bench.Percentile(p.A, 50)), "p50-direct-µs")
	b.ReportMetric(micros(bench.Percentile(p.B, 50)), "p50-gateway-µs")
}
