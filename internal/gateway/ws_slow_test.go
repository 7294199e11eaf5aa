package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"talon/protocol"
	"talon/protocol/client"
)

// TestSlowConsumerDropped: a client that stops reading is closed 1008
// "slow consumer" once its queue is over the limit, while a client that
// reads gets every event, in order, without waiting for the slow one.
func TestSlowConsumerDropped(t *testing.T) {
	ts, url := startWS(t, "")
	ctx := context.Background()
	good, err := client.Dial(ctx, url, client.Options{Token: wsToken, EventBuffer: 1 << 12, MaxMessage: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	slow := dialRaw(t, url, nil)
	slow.challenge()
	slow.send(connectReq(connectParams(wsToken, 4, 4, protocol.ScopeRead)))
	if f, _, err := slow.next(); err != nil || !f.OK {
		t.Fatalf("slow connect: %+v %v", f, err)
	}
	// slow reads nothing more until the flood is over: 300 × 300 KiB is
	// past the 50 MiB a client may have waiting even after the socket
	// buffers (several MB on loopback) took their share.
	payload := map[string]string{"blob": strings.Repeat("x", 300<<10)}
	const n = 300
	// In lock step: the reading client has every event before the next
	// is sent, so only the slow one's queue grows.
	var seqs []int64
	start := time.Now()
	for range n {
		ts.srv.broadcast(ts.srv.defaultTenant, "test.flood", payload)
		for f := range good.Events() {
			if f.Event == "test.flood" {
				seqs = append(seqs, *f.Seq)
				break
			}
		}
	}
	if len(seqs) != n {
		t.Fatalf("the reading client got %d of %d events (closed: %v)", len(seqs), n, good.Err())
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("the reading client saw a gap: seq %d after %d", seqs[i], seqs[i-1])
		}
	}
	// A flood slower than the write timeout (under -race) ends the slow
	// client's connection when a write to it times out, before its queue
	// is full: dropped all the same, without the close frame.
	cutOff := time.Since(start) > writeTimeout
	// Now the slow client reads: what the socket held, then the close.
	for {
		_, code, err := slow.next()
		if err != nil {
			if cutOff && code == -1 {
				break
			}
			if code != protocol.ClosePolicy || !strings.Contains(err.Error(), "slow consumer") {
				t.Fatalf("slow client ended with %d: %v; want 1008 slow consumer", code, err)
			}
			break
		}
	}
	if ws := websocket.CloseStatus(good.Err()); good.Err() != nil {
		t.Fatalf("the reading client was closed too: %d %v", ws, good.Err())
	}
}
