package gateway

// The gateway's tests run it with the plugins and sandbox backends the
// binary ships, as cmd/talon does: each registers itself when imported.
import _ "talon/internal/standard"
