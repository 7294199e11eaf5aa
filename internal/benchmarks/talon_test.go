package benchmarks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/talonproc"
)

// readyTimeout bounds exec → /readyz 200; past it a benchmark fails.
const readyTimeout = 10 * time.Second

// benchToken is the gateway.auth.token of every config written here.
const benchToken = "bench-token"

var binDir string // TestMain's temp dir for the built binary

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "talon-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var build struct {
	once sync.Once
	path string
	err  error
}

// talonBinary builds ./cmd/talon once per test binary (plain go build,
// as a user would) and returns its path; a failed build fails tb.
func talonBinary(tb testing.TB) string {
	tb.Helper()
	build.once.Do(func() { build.path, build.err = talonproc.Build(binDir) })
	if build.err != nil {
		tb.Fatalf("building talon: %v", build.err)
	}
	return build.path
}

// writeConfig writes stateDir/talon.json: token auth, one provider "fake"
// at llmBaseURL (OpenClaw's models.providers shape), the default agent on
// fake/fake-model.
func writeConfig(tb testing.TB, stateDir, llmBaseURL string) {
	tb.Helper()
	cfg := map[string]any{
		"gateway": map[string]any{"auth": map[string]any{"mode": "token", "token": benchToken}},
		"models": map[string]any{"providers": map[string]any{"fake": map[string]any{
			"baseUrl": llmBaseURL, "api": "openai-completions", "apiKey": "sk-bench",
			"models": []any{map[string]any{"id": "fake-model"}},
		}}},
		"agents": map[string]any{"defaults": map[string]any{"model": "fake/fake-model"}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "talon.json"), b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// startGateway execs `talon serve --state-dir stateDir` (the config must
// already be there; HOME points at it and no TALON_ variable leaks in) and
// waits for /readyz 200, polling every 0.2 ms. It returns the time from
// just before exec to that 200 and fails tb when the process exits or is
// not ready within readyTimeout.
func startGateway(tb testing.TB, bin, stateDir string) (*talonproc.Proc, time.Duration) {
	tb.Helper()
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TALON_") || strings.HasPrefix(kv, "HOME=")
	}), "HOME="+stateDir)
	p, err := talonproc.Start(talonproc.Options{
		Bin: bin, StateDir: stateDir, Env: env, ReadyTimeout: readyTimeout, PollEvery: 200 * time.Microsecond,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p, p.ReadyAfter
}

// stopGateway stops a gateway started by startGateway.
func stopGateway(tb testing.TB, p *talonproc.Proc) {
	if err := p.Stop(10 * time.Second); err != nil {
		tb.Errorf("%v\n%s", err, p.Log)
	}
}

// rssMB is the gateway's VmRSS in MB (10^6 bytes).
func rssMB(tb testing.TB, p *talonproc.Proc) float64 {
	tb.Helper()
	mb, err := p.RSSMB()
	if err != nil {
		tb.Fatal(err)
	}
	return mb
}

// percentile is the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
