// Package benchmarks measures the talon binary from the outside: the
// latency the gateway adds to a chat turn against a fake OpenAI-compatible
// LLM on loopback, the time from exec to a ready /readyz, the resident
// memory of an idle gateway, and what 1,000 idle WebSocket clients cost it.
//
// The package holds only benchmarks, go-test-shaped views of what
// `talon bench` (internal/bench) measures, sharing its fake LLM
// (internal/fakellm), config, start-up and pair measurement; they add
// session shapes and an in-process gateway for profiling. They build
// ./cmd/talon once, start `talon serve` as a subprocess and talk HTTP to
// it; plain `go test` runs nothing here. The commands and the figures
// they produced are in BENCHMARKS.md at the repository root.
package benchmarks
