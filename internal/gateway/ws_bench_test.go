package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

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
// timed until every client has it. Broadcasts go one at a time, each
// after the last subscriber got the previous one, as a run's deltas
// arrive (upstream throttles them to one per 150 ms).
//
// The gateway runs in this process (s.broadcast is not reachable from
// outside), on loopback, with the 100 clients in the same process and on
// the same two cores. client=protocol subscribers are protocol/client
// connections, timed when the event comes off Events() (the frame read and
// decoded, as a Go operator client sees it); client=raw subscribers read
// the frame's bytes off the socket and decode nothing, so their figures
// are closer to the gateway's own share. Metrics: p50-µs and p99-µs over
// every delivery, last-p99-µs the p99 of the time until the 100th
// subscriber had it.
func BenchmarkWSFanout(b *testing.B) {
	for _, kind := range []struct {
		name string
		dial func(b *testing.B, url string, onChat func()) func()
	}{{"protocol", protocolSubscriber}, {"raw", rawSubscriber}} {
		b.Run("client="+kind.name, func(b *testing.B) {
			ts, url := startWS(b, "")
			srv := ts.srv
			srv.opts.TickInterval = time.Hour // no ticks among the deltas; set before the first client starts the ticker
			start := time.Now()
			var sentAt atomic.Int64 // ns since start of the broadcast in flight
			got := make(chan time.Duration, fanoutSubscribers)
			onChat := func() { got <- time.Since(start) - time.Duration(sentAt.Load()) }
			for range fanoutSubscribers {
				defer kind.dial(b, url, onChat)()
			}
			if n := srv.hubs.count(srv.defaultTenant, protocol.ScopeRead); n != fanoutSubscribers {
				b.Fatalf("%d subscribers connected, want %d", n, fanoutSubscribers)
			}
			var all, last []time.Duration
			send := func(seq int) {
				sentAt.Store(int64(time.Since(start)))
				srv.broadcast(srv.defaultTenant, protocol.EventChat, chatDelta(seq))
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
		})
	}
}

var deltaText = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 9)[:400]

// chatDelta is a chat delta event's payload: the cumulative text so far
// and, as protocol 4 adds, the new fragment.
func chatDelta(seq int) map[string]any {
	return map[string]any{
		"runId": "bench-run", "sessionKey": "agent:main:main", "seq": seq, "state": "delta",
		"message":   map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": deltaText}}, "timestamp": time.Now().UnixMilli()},
		"deltaText": deltaText[390:],
	}
}

// protocolSubscriber connects a protocol/client with read scope and calls
// onChat for every chat event it delivers; the returned func closes it
// and checks it dropped nothing.
func protocolSubscriber(b *testing.B, url string, onChat func()) func() {
	c, err := client.Dial(context.Background(), url, client.Options{Token: wsToken, Scopes: []string{protocol.ScopeRead}, EventBuffer: 64})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for f := range c.Events() {
			if f.Event == protocol.EventChat {
				onChat()
			}
		}
	}()
	return func() {
		if d := c.Dropped(); d != 0 {
			b.Errorf("a client dropped %d events", d)
		}
		c.Close()
	}
}

// rawSubscriber does the handshake by hand and then calls onChat for
// every chat event it reads, found by a byte search rather than decoded.
func rawSubscriber(b *testing.B, url string, onChat func()) func() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	ws.SetReadLimit(1 << 20)
	connect, _ := json.Marshal(protocol.Request{Type: protocol.TypeReq, ID: "c", Method: "connect", Params: mustJSON(b, protocol.ConnectParams{
		MinProtocol: protocol.MaxVersion, MaxProtocol: protocol.MaxVersion, Role: protocol.RoleOperator, Scopes: []string{protocol.ScopeRead},
		Client: protocol.ClientInfo{ID: "bench", Mode: "backend", Version: "1"}, Auth: &protocol.ConnectAuth{Token: wsToken},
	})})
	if _, _, err := ws.Read(ctx); err != nil { // connect.challenge
		b.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, connect); err != nil {
		b.Fatal(err)
	}
	_, hello, err := ws.Read(ctx)
	if err != nil || !strings.Contains(string(hello), `"ok":true`) {
		b.Fatalf("connect: %s %v", hello, err)
	}
	go func() {
		for {
			_, frame, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			if bytes.Contains(frame, chatEventName) {
				onChat()
			}
		}
	}()
	return func() { _ = ws.Close(websocket.StatusNormalClosure, "") }
}

// chatEventName is in every chat event frame the gateway writes (sendRaw) and
// in no other frame a subscriber gets here.
var chatEventName = []byte(`"event":"chat"`)

func mustJSON(b *testing.B, v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatalf("encoding %T: %v", v, err)
	}
	return raw
}
