// Package gatewaytest starts a real gateway in the test process, as
// `talon serve` builds it (the core tools, the plugins and sandbox
// backends of internal/standard, no environment, a discarded log), for the
// tests of packages that talk to one (the platform, its relay and API). It
// is for tests only.
package gatewaytest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"talon/internal/gateway"
	_ "talon/internal/standard" // the modules talon serve ships
	"talon/internal/tools/core"
)

// Start serves a gateway over stateDir on a free loopback port until the
// test ends and returns its WebSocket URL (ws://127.0.0.1:PORT).
func Start(tb testing.TB, stateDir string) string {
	tb.Helper()
	reg, err := core.Registry()
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := gateway.New(gateway.Options{StateDir: stateDir, Addr: "127.0.0.1:0", Tools: reg,
		Env: func(string) string { return "" }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		tb.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			tb.Error(err)
		}
		if err := <-errc; err != nil {
			tb.Error(err)
		}
	})
	return "ws://" + ln.Addr().String()
}
