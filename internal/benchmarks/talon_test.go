package benchmarks

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"talon/internal/bench"
	"talon/internal/fakellm"
	"talon/internal/talonproc"
)

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
	if err := bench.WriteConfig(stateDir, bench.Upstreams{Plain: llmBaseURL}); err != nil {
		tb.Fatal(err)
	}
}

// startGateway starts `talon serve --state-dir stateDir` (the config must
// already be there) as bench.StartTalon does, and returns the time from
// just before exec to the first /readyz 200; it fails tb when the process
// exits or is not ready.
func startGateway(tb testing.TB, bin, stateDir string) (*talonproc.Proc, time.Duration) {
	tb.Helper()
	p, err := bench.StartTalon(bin, stateDir)
	if err != nil {
		tb.Fatal(err)
	}
	return p, p.ReadyAfter
}

// newFakeLLM starts the fake LLM every benchmark here talks to: an
// immediate answer, requiring the key the configs give it.
func newFakeLLM(tb testing.TB) *fakellm.Server {
	tb.Helper()
	f, err := fakellm.Start(fakellm.Options{APIKey: bench.UpstreamKey})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
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

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
