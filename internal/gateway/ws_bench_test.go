package gateway

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"talon/internal/bench"
	"talon/protocol"
	"talon/protocol/client"
)

// fanoutSubscribers is how many operator clients watch one chat.
const fanoutSubscribers = 100

// BenchmarkWSFanout measures how long a chat delta takes from the
// gateway's broadcast to each of 100 subscribed clients: one op is one
// s.broadcast of a `chat` delta event (the v4 shape of spec §2, 400 bytes
// of cumulative text) to the tenant's 100 connections with operator.read,
// timed until every client has taken it off client.Events(). Broadcasts
// go one at a time, each after the last subscriber got the previous one,
// as a run's deltas arrive (upstream throttles them to one per 150 ms).
//
// The gateway runs in this process (s.broadcast is not reachable from
// outside; there is no chat.send yet to drive a real turn), on loopback,
// with the 100 protocol/client connections in the same process, so the
// figures include the clients decoding the frames on the same two cores.
// Metrics: p50-µs and p99-µs over every delivery, last-p99-µs the p99 of
// the time until the 100th subscriber had it.
func BenchmarkWSFanout(b *testing.B) {
	ts, url := startWS(b, "")
	srv := ts.srv
	srv.opts.TickInterval = time.Hour // no ticks among the deltas; set before the first client starts the ticker

	ctx := context.Background()
	start := time.Now()
	var sentAt atomic.Int64 // ns since start of the broadcast in flight
	got := make(chan time.Duration, fanoutSubscribers)
	var clients []*client.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range fanoutSubscribers {
		c, err := client.Dial(ctx, url, client.Options{Token: wsToken, Scopes: []string{protocol.ScopeRead}, EventBuffer: 64})
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, c)
		go func() {
			for f := range c.Events() {
				if f.Event == protocol.EventChat {
					got <- time.Since(start) - time.Duration(sentAt.Load())
				}
			}
		}()
	}
	if n := srv.hubs.count(srv.defaultTenant, protocol.ScopeRead); n != fanoutSubscribers {
		b.Fatalf("%d subscribers connected, want %d", n, fanoutSubscribers)
	}
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 9)[:400]
	delta := func(seq int) map[string]any {
		return map[string]any{
			"runId": "bench-run", "sessionKey": "agent:main:main", "seq": seq, "state": "delta",
			"message":   map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": text}}, "timestamp": time.Now().UnixMilli()},
			"deltaText": text[390:],
		}
	}
	var all, last []time.Duration
	send := func(seq int) {
		sentAt.Store(int64(time.Since(start)))
		srv.broadcast(srv.defaultTenant, protocol.EventChat, delta(seq))
		var slowest time.Duration
		for range fanoutSubscribers {
			d := <-got
			all = append(all, d)
			slowest = max(slowest, d)
		}
		last = append(last, slowest)
	}
	for i := range 50 { // warm-up: connections' buffers, the encoder
		send(i)
	}
	all, last = all[:0], last[:0]
	b.ResetTimer()
	for i := range b.N {
		send(50 + i)
	}
	b.StopTimer()
	slices.Sort(all)
	slices.Sort(last)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(bench.Percentile(all, 50)), "p50-µs")
	b.ReportMetric(us(bench.Percentile(all, 99)), "p99-µs")
	b.ReportMetric(us(bench.Percentile(last, 99)), "last-p99-µs")
	for _, c := range clients {
		if d := c.Dropped(); d != 0 {
			b.Errorf("a client dropped %d events", d)
		}
	}
}
