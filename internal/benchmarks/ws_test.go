package benchmarks

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/bench"
	"talon/internal/talonproc"
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
		for _, c := range dialWS(b, url, 50) {
			c.Close()
		}
		time.Sleep(time.Second)
		rss0, st0 := rssMB(b, g), wsStatus(b, probe)

		begin := time.Now()
		conns := dialWS(b, url, idleConns)
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
		last := dialWS(b, url, 1)[0]
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
	return g, dialWS(b, url, 1)[0], url
}

// dialWS opens n connections as bench.DialWS does for `talon bench`.
func dialWS(b *testing.B, url string, n int) []*client.Client {
	b.Helper()
	cs, err := bench.DialWS(context.Background(), url, bench.Token, n)
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
