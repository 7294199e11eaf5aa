package benchmarks

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"talon/internal/gateway"
	"talon/internal/tools/core"
)

// BenchmarkTurnInProcess is BenchmarkTurnOverhead (non-streamed) with the
// gateway in the test process instead of a subprocess, built as `talon
// serve` builds it (the same tools, a discarded log), so that
// `go test -cpuprofile` and `-trace` see the gateway's code. Its latency
// includes the client and the fake LLM competing for the same two cores;
// quote the subprocess benchmarks for overhead, use this one to find
// where the time goes.
func BenchmarkTurnInProcess(b *testing.B) {
	for _, s := range sessionShapes {
		b.Run(s.name, func(b *testing.B) {
			llm := newFakeLLM(b)
			state := b.TempDir()
			writeConfig(b, state, llm.BaseURL())
			reg, err := core.Registry()
			if err != nil {
				b.Fatal(err)
			}
			srv, err := gateway.New(gateway.Options{
				StateDir: state, ConfigPath: filepath.Join(state, "talon.json"), Addr: "127.0.0.1:0", Tools: reg,
				Env:    func(string) string { return "" }, // no TALON_GATEWAY_TOKEN; the key is in the config
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := srv.Listen()
			if err != nil {
				b.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			defer func() {
				if err := srv.Shutdown(context.Background()); err != nil {
					b.Error(err)
				}
				if err := <-errc; err != nil {
					b.Error(err)
				}
			}()
			measurePairs(b, s, false, llm, "http://"+ln.Addr().String(), 0, func() string { return "(in process: log discarded)" })
		})
	}
}
