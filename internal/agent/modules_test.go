package agent

// The runner's tests load the plugins and sandbox backends the binary
// ships (api-tools and image-gen in plugins_test.go, memory-core in the
// memory slot, bwrap and host in approvals_test.go): each registers
// itself when imported.
import _ "talon/internal/standard"
