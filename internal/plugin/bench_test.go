package plugin_test

import (
	"context"
	"testing"

	"talon/internal/plugin"
)

// BenchmarkRunTools is what every turn pays for plugins with the default
// config: memory-core on, the bundled others off, no workspace plugins.
func BenchmarkRunTools(b *testing.B) {
	h := plugin.NewHost(plugin.Options{StateDir: b.TempDir()})
	b.Cleanup(func() { h.Close() })
	set := h.Configure(mustConfigB(b, `{}`))
	run := plugin.Run{AgentID: "main", AgentDir: b.TempDir()}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rt := set.Tools(ctx, run)
		if len(rt.Candidates) != 2 {
			b.Fatalf("candidates %v", rt.Candidates)
		}
	}
}
