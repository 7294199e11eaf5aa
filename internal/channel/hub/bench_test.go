package hub

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/config"
	"talon/internal/store"
)

// benchTransport records when the first chunk of each answer reaches Send.
type benchTransport struct {
	accept chan channel.Accept
	sent   chan time.Time
}

func (b *benchTransport) Run(ctx context.Context, accept channel.Accept) error {
	b.accept <- accept
	<-ctx.Done()
	return nil
}

func (b *benchTransport) Send(ctx context.Context, m channel.Outbound) (channel.Sent, error) {
	b.sent <- time.Now()
	return channel.Sent{MessageID: m.Key}, nil
}

func (b *benchTransport) Typing(context.Context, channel.Target) error { return nil }
func (b *benchTransport) Status() channel.Status                       { return channel.Status{} }

type instantTurns struct{}

func (instantTurns) Turn(_ context.Context, r TurnRequest) (TurnResult, error) {
	return TurnResult{Text: "ok"}, nil
}

// BenchmarkInboundToFirstSend is what Talon adds between an adapter
// handing over an inbound DM and the first chunk of its answer reaching
// the adapter's Send, with a model that answers at once: the inbox
// commit, the gates, the route, the running and answered commits, the
// sending mark. Reported as p50 and p99 per message (ms). The inbound
// quiet window (Telegram's 300 ms by default) is a wait the config asks
// for, not overhead: it is turned off here.
//
//	go test -run '^$' -bench InboundToFirstSend -benchtime 2000x ./internal/channel/hub/
func BenchmarkInboundToFirstSend(b *testing.B) {
	for _, c := range []struct {
		name   string
		window time.Duration
	}{{"fsync-window-100ms", 100 * time.Millisecond}, {"fsync-every-commit", 0}} {
		b.Run(c.name, func(b *testing.B) {
			db, err := store.OpenWith(filepath.Join(b.TempDir(), "talon.db"), store.Options{SyncWindow: c.window})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			tr := &benchTransport{accept: make(chan channel.Accept, 1), sent: make(chan time.Time, 1)}
			h := New(Options{Tenant: "bench", Store: db, Turns: instantTurns{}, Log: slog.New(slog.DiscardHandler),
				Transports: func(Account) (channel.Transport, error) { return tr, nil }})
			defer h.Close()
			f, err := config.Parse("bench.json5", []byte(`{messages: {inbound: {debounceMs: 0}},
				channels: {telegram: {botToken: "t", dmPolicy: "open", allowFrom: ["*"]}}}`))
			if err != nil {
				b.Fatal(err)
			}
			if err := h.Apply(f.Config); err != nil {
				b.Fatal(err)
			}
			accept := <-tr.accept
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				e := channel.Envelope{Channel: "telegram", AccountID: "default", DeliveryID: fmt.Sprint(i), MessageID: fmt.Sprint(i),
					Peer: channel.Peer{Kind: channel.Direct, ID: "111"}, Sender: channel.Sender{ID: "111"}, Text: "hi"}
				start := time.Now()
				if err := accept(ctx, e); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-tr.sent).Sub(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
