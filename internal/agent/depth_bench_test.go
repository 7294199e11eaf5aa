package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/sandbox"
	"talon/internal/store"
	"talon/internal/tools/core"
)

// BenchmarkTurnDepth is the runner's cost of one turn at turn 1, 100 and
// 1,000 of one session: 4 KB user messages to a 32k window, so that
// compaction keeps the view bounded, with the offline model (in process:
// what is measured is Talon's work, summaries included) and the store as
// `talon serve` opens it (a 100 ms fsync window). Before compaction the
// runner read the last 400 messages every turn and a long session failed
// at turn 28; the goal now is flat: a long session costs no more per turn
// than a new one. Each op is one more turn, so run it with a small
// -benchtime (100x) for the depth to mean what it says.
func BenchmarkTurnDepth(b *testing.B) {
	for _, depth := range []int{1, 100, 1000} {
		b.Run(fmt.Sprint("turn=", depth), func(b *testing.B) {
			state := b.TempDir()
			cfg, err := config.Parse("talon.json", []byte(fmt.Sprintf(`{agents: {defaults: {model: "inspect", contextTokens: 32768, workspace: %q}}}`,
				filepath.Join(state, "workspace"))))
			if err != nil {
				b.Fatal(err)
			}
			db, err := store.OpenWith(filepath.Join(state, "talon.db"), store.Options{SyncWindow: 100 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			boxes := sandbox.NewManager()
			defer boxes.Close()
			reg, err := core.Registry()
			if err != nil {
				b.Fatal(err)
			}
			r := &Runner{Config: cfg.Config, Policy: policy.New(cfg.Config), Tools: reg, Store: db, StateDir: state, Sandboxes: boxes,
				Resolve: func(string) (provider.Provider, string, error) { return provider.Inspect{}, config.InspectModel, nil }}
			turn := func(i int) {
				if _, err := r.Run(context.Background(), Request{AgentID: "main", SessionKey: key, Owner: true,
					Input: []llm.Message{{Role: llm.RoleUser, Content: filler(i)}}}); err != nil {
					b.Fatalf("turn %d: %v", i, err)
				}
			}
			for i := 1; i < depth; i++ {
				turn(i)
			}
			i := depth
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				turn(i)
				i++
			}
			b.StopTimer()
			e, _ := db.GetSession(context.Background(), "main", key)
			v, _ := db.ReadView(context.Background(), e.SessionID)
			b.ReportMetric(float64(len(v.Records)), "rows-in-view")
			b.ReportMetric(float64(v.Bytes), "view-bytes")
			b.ReportMetric(float64(e.CompactionCount), "compactions")
		})
	}
}
