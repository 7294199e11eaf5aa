// Package benchmarks measures the talon binary from the outside: the
// latency the gateway adds to a chat turn against a fake OpenAI-compatible
// LLM on loopback, the time from exec to a ready /readyz, and the resident
// memory of an idle gateway.
//
// The package holds only tests. The benchmarks build ./cmd/talon once,
// start `talon serve` as a subprocess and talk HTTP to it; plain `go test`
// runs only a quick check of the fake LLM. The commands and the figures
// they produced are in BENCHMARKS.md at the repository root.
package benchmarks
