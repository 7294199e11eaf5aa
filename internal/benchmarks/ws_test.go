package benchmarks

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"talon/internal/bench"
	"talon/internal/fakellm"
	"talon/internal/talonproc"
	"talon/protocol"
	"talon/protocol/client"
)

// idleConns is how many WebSocket clients BenchmarkWSIdleConnections holds
// open at once.
const idleConns = 1000

// wsSettle is how long the connections stay idle before the settled
// figures: past Go's 2-minute forced GC.
const wsSettle = 130 * time.Second

// BenchmarkWSIdleConnections opens 1,000 authenticated WebSocket
// connections (connect with the token, hello-ok, all four operator scopes)
// to one `talon serve` subprocess, leaves them idle, and measures the
// process from the outside, against a baseline taken after 50 connections
// opened and closed (the tenant loaded, the ticker started, the handshake
// code paged in) with one probe connection open:
//
//   - connect-ms: the 1,000 handshakes, bench.WSDialers (32) at a time;
//   - rss-KB/conn: VmRSS growth ÷ 1,000, 2 s after the last handshake;
//   - rss-KB/conn-settled, heap-KB/conn-settled: the same after 130 s
//     idle, by when Go's runtime has forced a GC (it does every 2 min), so
//     the heap (HeapAlloc from the status method) holds what the
//     connections keep rather than the handshakes' garbage;
//   - goroutines/conn: goroutine growth ÷ 1,000;
//   - hello-KB-at-1000: the hello-ok a 1,001st client gets (its snapshot
//     lists every connected client's presence).
//
// Each op is one fresh gateway and takes ≈ 2.5 min. The benchmark checks
// that the gateway counts all 1,000 and that none was closed while idle.
func BenchmarkWSIdleConnections(b *testing.B) {
	bin := talonBinary(b)
	llm := newFakeLLM(b)
	root := b.TempDir()
	var m struct{ connect, rss, rssSettled, heapSettled, gor, hello float64 }
	for i := range b.N {
		g, probe, url := startWSGateway(b, bin, filepath.Join(root, strconv.Itoa(i)), llm.BaseURL())
		for _, c := range dialWS(b, url, 50, 16) {
			c.Close()
		}
		time.Sleep(time.Second)
		rss0, st0 := rssMB(b, g), wsStatus(b, probe)

		begin := time.Now()
		conns := dialWS(b, url, idleConns, 16)
		m.connect += float64(time.Since(begin).Microseconds()) / 1e3
		time.Sleep(2 * time.Second)
		rss1 := rssMB(b, g)
		time.Sleep(wsSettle)
		rss2, st2 := rssMB(b, g), wsStatus(b, probe)

		if st2.Connections != idleConns+1 {
			b.Errorf("the gateway counts %d connections, want %d (%d + the probe)", st2.Connections, idleConns+1, idleConns)
		}
		for _, c := range conns {
			if c.Err() != nil {
				b.Fatalf("a connection ended while idle: %v", c.Err())
			}
		}
		last := dialWS(b, url, 1, 16)[0]
		hello, err := json.Marshal(last.Hello())
		if err != nil {
			b.Fatal(err)
		}
		m.hello += float64(len(hello)) / 1e3
		for _, c := range append(conns, last, probe) {
			c.Close()
		}
		stopGateway(b, g)
		m.rss += (rss1 - rss0) * 1e3 / idleConns // MB → KB
		m.rssSettled += (rss2 - rss0) * 1e3 / idleConns
		m.heapSettled += float64(st2.Runtime.HeapBytes-st0.Runtime.HeapBytes) / 1e3 / idleConns
		m.gor += float64(st2.Runtime.Goroutines-st0.Runtime.Goroutines) / idleConns
	}
	n := float64(b.N)
	b.ReportMetric(m.connect/n, "connect-ms")
	b.ReportMetric(m.rss/n, "rss-KB/conn")
	b.ReportMetric(m.rssSettled/n, "rss-KB/conn-settled")
	b.ReportMetric(m.heapSettled/n, "heap-KB/conn-settled")
	b.ReportMetric(m.gor/n, "goroutines/conn")
	b.ReportMetric(m.hello/n, "hello-KB-at-1000")
}

// startWSGateway starts `talon serve` on a fresh state dir and opens the
// probe connection that asks it for status.
func startWSGateway(b *testing.B, bin, state, llmURL string) (*talonproc.Proc, *client.Client, string) {
	b.Helper()
	writeConfig(b, state, llmURL)
	g, _ := startGateway(b, bin, state)
	url := "ws" + strings.TrimPrefix(g.URL, "http")
	return g, dialWS(b, url, 1, 16)[0], url
}

// dialWS opens n connections as bench.DialWS does for `talon bench`,
// each buffering up to events events.
func dialWS(b *testing.B, url string, n, events int) []*client.Client {
	b.Helper()
	cs, err := bench.DialWS(context.Background(), url, bench.Token, n, events)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// wsStatusReply is the part of the status method's answer measured here.
type wsStatusReply struct {
	Connections int `json:"connections"`
	Runtime     struct {
		Goroutines int   `json:"goroutines"`
		HeapBytes  int64 `json:"heapBytes"`
	} `json:"runtime"`
}

func wsStatus(b *testing.B, c *client.Client) wsStatusReply {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st wsStatusReply
	if err := c.Call(ctx, "status", nil, &st); err != nil {
		b.Fatalf("status: %v", err)
	}
	return st
}

// chatSubscribers is how many clients watch the turns of
// BenchmarkWSChatFanout.
const chatSubscribers = 100

// BenchmarkWSChatFanout is the fan-out of a real turn's chat events to
// 100 subscribers, with the gateway as a `talon serve` subprocess: one op
// is one chat.send (a new session each) whose model, a fake LLM, streams
// 20 chunks over 600 ms, watched by 100 operator clients (protocol/client,
// read scope) in this process. The gateway throttles deltas to one per
// 150 ms, so a turn brings each client ≈ 4 deltas and the final.
//
// The broadcast happens in another process, so its instant is not known
// here; what is measured is the spread of each chat event over the
// subscribers — the time from the first client's receipt to the 100th's —
// which is the broadcast-to-last-receipt latency less the fastest
// delivery. Metrics: spread-p50-µs and spread-p99-µs over every chat
// event; chat-events/turn and agent-events/turn, what each client got of
// a turn (the agent events — lifecycle and one per streamed fragment —
// go to every read client too and share the connections with the chat
// events); turn-ms from chat.send to the last client's final (the 600 ms
// stream included).
func BenchmarkWSChatFanout(b *testing.B) {
	bin := talonBinary(b)
	llm, err := fakellm.Start(fakellm.Options{APIKey: bench.UpstreamKey, Reply: "streamed answer.", Chunks: 20, ChunkSize: 16, StreamDuration: 600 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer llm.Close()
	g, sender, url := startWSGateway(b, bin, b.TempDir(), llm.BaseURL())
	defer stopGateway(b, g)
	defer sender.Close()
	subs := dialWS(b, url, chatSubscribers, 1024) // a turn is ≈ 30 events; room for a stall
	defer func() {
		for _, c := range subs {
			c.Close()
		}
	}()

	// Every subscriber reports each chat event's receipt time.
	type receipt struct {
		event string // runId/state/seq
		state string
		at    time.Time
	}
	got := make(chan receipt, chatSubscribers*64)
	var agentEvents atomic.Int64 // the agent events the subscribers got too
	for _, c := range subs {
		go func() {
			for f := range c.Events() {
				at := time.Now()
				if f.Event == protocol.EventAgent {
					agentEvents.Add(1)
				}
				if f.Event != protocol.EventChat {
					continue
				}
				var ev struct {
					RunID string `json:"runId"`
					State string `json:"state"`
					Seq   int    `json:"seq"`
				}
				if json.Unmarshal(f.Payload, &ev) != nil {
					continue
				}
				got <- receipt{event: ev.RunID + "/" + ev.State + "/" + strconv.Itoa(ev.Seq), state: ev.State, at: at}
			}
		}()
	}
	turn := func(i int) (spreads []time.Duration, events int, took time.Duration) {
		runID := "bench-" + strconv.Itoa(i)
		begin := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var ack struct{ Status string }
		if err := sender.Call(ctx, "chat.send", map[string]any{"sessionKey": "agent:main:" + runID, "message": "hi", "idempotencyKey": runID}, &ack); err != nil || ack.Status != "started" {
			b.Fatalf("chat.send: %+v, %v", ack, err)
		}
		first, last := map[string]time.Time{}, map[string]time.Time{}
		finals := 0
		for finals < chatSubscribers {
			select {
			case r := <-got:
				if !strings.HasPrefix(r.event, runID+"/") {
					b.Fatalf("an event of another run: %s", r.event)
				}
				if t, ok := first[r.event]; !ok || r.at.Before(t) {
					first[r.event] = r.at
				}
				if r.at.After(last[r.event]) {
					last[r.event] = r.at
				}
				switch r.state {
				case "delta":
				case "final":
					finals++
				default:
					b.Fatalf("turn %s ended %s", runID, r.state)
				}
			case <-ctx.Done():
				var dropped, closed int64
				for _, c := range subs {
					dropped += c.Dropped()
					if c.Err() != nil {
						closed++
					}
				}
				b.Fatalf("turn %s: %d of %d subscribers got the final; the clients dropped %d events, %d were disconnected", runID, finals, chatSubscribers, dropped, closed)
			}
		}
		for ev, t := range first {
			spreads = append(spreads, last[ev].Sub(t))
		}
		return spreads, len(first), time.Since(begin)
	}
	turn(-1) // the agent's first run is not measured
	var spreads []time.Duration
	var events int
	var took time.Duration
	agent0 := agentEvents.Load()
	b.ResetTimer()
	for i := range b.N {
		s, n, d := turn(i)
		spreads = append(spreads, s...)
		events += n
		took += d
	}
	b.StopTimer()
	slices.Sort(spreads)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(bench.Percentile(spreads, 50)), "spread-p50-µs")
	b.ReportMetric(us(bench.Percentile(spreads, 99)), "spread-p99-µs")
	b.ReportMetric(float64(events)/float64(b.N), "chat-events/turn")
	b.ReportMetric(float64(agentEvents.Load()-agent0)/float64(b.N*chatSubscribers), "agent-events/turn")
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "turn-ms")
	for _, c := range subs {
		if d := c.Dropped(); d != 0 {
			b.Errorf("a subscriber dropped %d events", d)
		}
	}
}
