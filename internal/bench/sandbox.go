package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"talon/internal/sandbox"
	"talon/internal/sandbox/bwrap"
)

const groupSandbox = "sandbox"

func init() {
	measurements = append(measurements, measurement{
		name: "sandbox exec", figures: sandboxFigures, method: sandboxMethod, run: sandboxExec,
	})
}

func sandboxFigures(Plan) []Figure {
	return []Figure{
		{ID: "sandbox.bwrap.exec_true_ms.p50", Group: groupSandbox, What: "exec `true` in the bwrap backend, Start → Wait, p50", Unit: "ms"},
		{ID: "sandbox.bwrap.exec_true_ms.p99", Group: groupSandbox, What: "exec `true` in the bwrap backend, p99", Unit: "ms"},
	}
}

// sandboxRuns is how many commands the row runs: as many as the plan's
// tool pairs, at most 300 (about 10 s on a busy 2-core machine).
func sandboxRuns(p Plan) int { return min(p.Talon.ToolPairs, 300) }

func sandboxMethod(p Plan) string {
	return fmt.Sprintf("%d runs of `true` (after one unmeasured) in one bwrap sandbox, by the backend in this process, "+
		"which is the binary's own code (its helper is this binary): new namespaces, mounts, Landlock and rlimits "+
		"per command, from Start to the end of Wait; talon only (OpenClaw's sandbox is Docker)", sandboxRuns(p))
}

// sandboxExec measures the bwrap backend in this process; the gateway is
// not involved. OpenClaw has no such figure.
func sandboxExec(e *env) (map[string]float64, error) {
	if e.t.lenient {
		return map[string]float64{}, nil
	}
	b, err := bwrap.New(nil)
	if err != nil {
		return nil, err
	}
	if err := b.Check(e.ctx); err != nil {
		return nil, err
	}
	root := filepath.Join(e.root, "sandbox")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, err
	}
	sb, err := b.Open(e.ctx, sandbox.Spec{ID: "bench", Root: root})
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	run := func() (time.Duration, error) {
		start := time.Now()
		p, err := sb.Start(e.ctx, sandbox.Command{Argv: []string{"true"}})
		if err != nil {
			return 0, err
		}
		exit, err := p.Wait()
		if err == nil && exit.Code != 0 {
			err = fmt.Errorf("`true` ended %+v", exit)
		}
		return time.Since(start), err
	}
	if _, err := run(); err != nil {
		return nil, err
	}
	n := sandboxRuns(e.plan)
	d := make([]time.Duration, 0, n)
	for i := range n {
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
		t, err := run()
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i+1, err)
		}
		d = append(d, t)
	}
	slices.Sort(d)
	ms := func(p float64) float64 { return float64(Percentile(d, p)) / 1e6 }
	e.logf("%s: sandbox exec %d/%d", e.t.name, n, n)
	return map[string]float64{
		"sandbox.bwrap.exec_true_ms.p50": ms(50),
		"sandbox.bwrap.exec_true_ms.p99": ms(99),
	}, nil
}
