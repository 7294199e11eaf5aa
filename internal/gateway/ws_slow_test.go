package gateway

import (
	"context"
	"strings"
	"testing"

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
	// slow reads nothing more until the flood is over: 200 × 300 KiB is
	// past the 50 MiB a client may have waiting.
	payload := map[string]string{"blob": strings.Repeat("x", 300<<10)}
	const n = 200
	done := make(chan []int64)
	go func() {
		var seqs []int64
		for f := range good.Events() {
			if f.Event == "test.flood" {
				seqs = append(seqs, *f.Seq)
				if len(seqs) == n {
					break
				}
			}
		}
		done <- seqs
	}()
	for range n {
		ts.srv.broadcast(ts.srv.defaultTenant, "test.flood", payload)
	}
	seqs := <-done
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("the reading client saw a gap: seq %d after %d", seqs[i], seqs[i-1])
		}
	}
	// Now the slow client reads: what the socket held, then the close.
	for {
		_, code, err := slow.next()
		if err != nil {
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
