package benchmarks

// The in-process benchmarks build a gateway as the binary does, with the
// plugins and sandbox backends it ships.
import _ "talon/internal/standard"
