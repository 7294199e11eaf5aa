package plugin_test

// The host's tests run with the plugins the binary compiles in, which
// register themselves when imported (api-tools is also what reads the
// agent workspace's YAML tools, memory-core holds the memory slot).
import (
	_ "talon/internal/memory"
	_ "talon/internal/plugin/apitools"
	_ "talon/internal/plugin/imagegen"
)
