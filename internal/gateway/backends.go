package gateway

// The sandbox backends a gateway can run sessions in register themselves
// by name when imported; sandbox.backend picks one.
import (
	_ "talon/internal/sandbox/bwrap"
	_ "talon/internal/sandbox/docker"
	_ "talon/internal/sandbox/host"
)
