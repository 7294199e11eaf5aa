// Package e2e holds end-to-end tests of the talon binary with real clients:
// `talon serve` is built and started on a loopback port with a fresh state
// dir, then driven by the official openai npm package (node/client.mjs) and
// by the curl command of the operators' guide; it is also killed with
// SIGKILL mid-load (crash_test.go) and soaked for 2 minutes (soak_test.go,
// TALON_SOAK sets the length) against the fake LLMs of internal/fakellm.
// The package has no code of its own; run it with `go test ./e2e/` after
// ./scripts/test.sh has installed node, npm, curl and node/node_modules (it
// does so when missing). Under CI=true a missing client fails the tests
// instead of skipping them.
package e2e
