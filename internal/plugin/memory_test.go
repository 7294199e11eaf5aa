package plugin_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/plugin"
	"talon/internal/policy"
)

// TestMemoryCoreTools: memory-core gives a run exactly policy.MemoryTools,
// as memory-slot candidates; `talon tools explain`, which loads no
// plugin, counts those names built because memory-core is compiled in.
func TestMemoryCoreTools(t *testing.T) {
	h := plugin.NewHost(plugin.Options{StateDir: t.TempDir()})
	t.Cleanup(func() { h.Close() })
	rt := h.Configure(mustConfig(t, `{}`)).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: t.TempDir()})
	want := make([]policy.Tool, len(policy.MemoryTools))
	for i, n := range policy.MemoryTools {
		want[i] = policy.Tool{Name: n, Plugin: policy.MemoryPlugin}
	}
	if diff := cmp.Diff(want, rt.Candidates); diff != "" {
		t.Errorf("memory-core's candidates (-policy.MemoryTools +run):\n%s", diff)
	}
}
