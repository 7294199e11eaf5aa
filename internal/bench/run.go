package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"talon/internal/fakellm"
	"talon/internal/procfs"
	"talon/internal/talonproc"
)

// Options say what Run measures.
type Options struct {
	// Binary is the talon binary to run as `talon serve`.
	Binary string
	// Mode names the plan in the report: quick, full or custom.
	Mode string
	Plan Plan
	// OpenClaw, when set, is measured the same way after talon.
	OpenClaw *OpenClaw
	// Command is the command line to print in the report, for re-running.
	Command string
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
}

// target is a gateway under measurement.
type target struct {
	name   string // "talon" or "OpenClaw"
	binary string // talon's binary; "" for OpenClaw
	token  string // its bearer token
	// start writes a config pointing at u into the fresh stateDir, starts
	// the gateway and waits for /readyz 200.
	start func(stateDir string, u Upstreams) (*talonproc.Proc, error)
	// goroutines reads the gateway's goroutine count; nil when it has
	// none to report.
	goroutines func(context.Context, *talonproc.Proc) (int, error)
	// turnTimeout bounds one turn beyond the fake's own stream time.
	turnTimeout time.Duration
	stopTimeout time.Duration
	// lenient: figures it cannot produce are left empty, and upstream call
	// counts are reported rather than enforced (OpenClaw's gateway is not
	// ours to hold to talon's contract).
	lenient bool
}

// fakes are the fake LLMs of a run, shared by every gateway.
type fakes struct {
	plain, tool, slow *fakellm.Server
}

func startFakes(p Plan) (*fakes, error) {
	var f fakes
	var err error
	if f.plain, err = fakellm.Start(fakellm.Options{APIKey: UpstreamKey}); err != nil {
		return nil, err
	}
	if f.tool, err = fakellm.Start(fakellm.Options{APIKey: UpstreamKey, Reply: "read it",
		ToolCall: &fakellm.ToolCall{Name: "read", Arguments: `{"path":"` + readFile + `"}`}}); err != nil {
		f.close()
		return nil, err
	}
	// No white space at either end of the text: OpenClaw trims it.
	if f.slow, err = fakellm.Start(fakellm.Options{APIKey: UpstreamKey, Reply: "streamed answer.",
		Chunks: p.StreamChunks, ChunkSize: 16, StreamDuration: time.Duration(p.StreamMS) * time.Millisecond}); err != nil {
		f.close()
		return nil, err
	}
	return &f, nil
}

func (f *fakes) upstreams() Upstreams {
	return Upstreams{Plain: f.plain.BaseURL(), Tool: f.tool.BaseURL(), Slow: f.slow.BaseURL()}
}

func (f *fakes) close() {
	for _, s := range []*fakellm.Server{f.plain, f.tool, f.slow} {
		if s != nil {
			s.Close()
		}
	}
}

// env is what a measurement of one gateway works with.
type env struct {
	ctx   context.Context
	t     *target
	scale Scale
	plan  Plan
	fakes *fakes
	root  string // temp dir for state dirs
	logf  func(format string, args ...any)
	notef func(format string, args ...any)
	// proc is the gateway the turn measurements share, started on first
	// use with its own state dir.
	proc *talonproc.Proc
}

// gateway returns the shared gateway, starting it on first use.
func (e *env) gateway() (*talonproc.Proc, error) {
	if e.proc != nil {
		return e.proc, nil
	}
	e.logf("%s: starting the gateway for the turn measurements", e.t.name)
	p, err := e.t.start(filepath.Join(e.root, "turns"), e.fakes.upstreams())
	if err != nil {
		return nil, err
	}
	e.proc = p
	return p, nil
}

// measurement is a row group of the report. figures declares, for a plan,
// every figure run returns (by ID), so budgets can be checked before the
// run and a run cannot quietly drop a row.
type measurement struct {
	name    string
	figures func(Plan) []Figure
	method  func(Plan) string
	run     func(*env) (map[string]float64, error)
}

// measurements is the list of rows; later work appends to it.
var measurements = []measurement{
	{"cold start", coldStartFigures, coldStartMethod, coldStart},
	{"turn overhead", turnFigures, turnMethod, turns},
	{"tool call", toolFigures, toolMethod, toolTurns},
	{"concurrency", concurrencyFigures, concurrencyMethod, concurrency},
}

// Catalog lists the figures a plan yields, in report order, without
// values.
func Catalog(p Plan) []Figure {
	var out []Figure
	for _, m := range measurements {
		if p.runs(m.name) {
			out = append(out, m.figures(p)...)
		}
	}
	return out
}

// measurementNames lists the measurements, for errors.
func measurementNames() []string {
	var out []string
	for _, m := range measurements {
		out = append(out, fmt.Sprintf("%q", m.name))
	}
	return out
}

// Run measures talon (and OpenClaw when asked) as o says and returns the
// report. A measurement that fails ends the run with an error naming the
// gateway and the step.
func Run(ctx context.Context, o Options) (*Report, error) {
	begin := time.Now()
	if err := o.Plan.Validate(o.OpenClaw != nil); err != nil {
		return nil, err
	}
	if st, err := os.Stat(o.Binary); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("the talon binary %q is not an executable file (%v)", o.Binary, err)
	}
	// The tenants' gateway gets its limit from this process's.
	need := max(openFilesNeeded(0), uint64(o.Plan.Tenants.OpenFiles))
	if o.Plan.runs("concurrency") || o.Plan.runs("websocket idle") {
		need = max(need, openFilesNeeded(slices.Max(o.Plan.Talon.Concurrency)))
	}
	if err := raiseOpenFiles(need); err != nil {
		return nil, err
	}
	if o.OpenClaw == nil {
		// Not used, so not reported as if it had been.
		o.Plan.OpenClaw = Scale{}
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(progress, format+"\n", args...) }
	f, err := startFakes(o.Plan)
	if err != nil {
		return nil, fmt.Errorf("starting the fake LLMs: %w", err)
	}
	defer f.close()

	r := &Report{
		Format: 1, Date: begin.UTC().Truncate(time.Second), Mode: o.Mode, Command: o.Command,
		Machine: machine(), Binary: o.Binary, Plan: o.Plan, Figures: Catalog(o.Plan), Notes: []string{},
	}
	for _, m := range measurements {
		if o.Plan.runs(m.name) {
			r.Notes = append(r.Notes, m.name+": "+m.method(o.Plan))
		}
	}
	targets := []*target{talonTarget(o.Binary)}
	if o.OpenClaw != nil {
		r.OpenClaw = o.OpenClaw.String()
		targets = append(targets, openclawTarget(o.OpenClaw))
	}
	for _, t := range targets {
		scale := o.Plan.Talon
		if t.lenient {
			scale = o.Plan.OpenClaw
		}
		vals, err := measure(ctx, t, scale, o.Plan, f, logf, func(format string, args ...any) {
			r.Notes = append(r.Notes, t.name+": "+fmt.Sprintf(format, args...))
		})
		if err != nil {
			return nil, err
		}
		for i := range r.Figures {
			fig := &r.Figures[i]
			v, ok := vals[fig.ID]
			switch {
			case !ok && !t.lenient:
				return nil, fmt.Errorf("%s: no value for figure %s", t.name, fig.ID)
			case !ok:
			case t.lenient:
				fig.OpenClaw = &v
			default:
				fig.Talon = v
			}
			delete(vals, fig.ID)
		}
		if len(vals) > 0 {
			return nil, fmt.Errorf("%s: undeclared figures %v", t.name, slices.Sorted(maps.Keys(vals)))
		}
	}
	r.setRatios()
	r.Seconds = time.Since(begin).Seconds()
	return r, nil
}

// measure runs every measurement against one gateway.
func measure(ctx context.Context, t *target, scale Scale, plan Plan, f *fakes, logf, notef func(string, ...any)) (vals map[string]float64, err error) {
	root, err := os.MkdirTemp("", "talon-bench-")
	if err != nil {
		return nil, fmt.Errorf("%s: creating a temp dir: %w", t.name, err)
	}
	defer os.RemoveAll(root)
	e := &env{ctx: ctx, t: t, scale: scale, plan: plan, fakes: f, root: root, logf: logf, notef: notef}
	defer func() {
		if e.proc == nil {
			return
		}
		if serr := stop(t, e.proc); serr != nil {
			if t.lenient {
				notef("stopping it: %v", serr)
			} else if err == nil {
				err = fmt.Errorf("%s: stopping the gateway: %w\nits log:\n%s", t.name, serr, tail(e.proc.Log.String(), 2048))
			}
		}
	}()
	vals = map[string]float64{}
	for _, m := range measurements {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !plan.runs(m.name) {
			continue
		}
		v, err := m.run(e)
		if err != nil {
			log := ""
			if e.proc != nil {
				log = "\ngateway log (last 2 KB):\n" + tail(e.proc.Log.String(), 2048)
			}
			return nil, fmt.Errorf("%s: %s: %w%s", t.name, m.name, err, log)
		}
		maps.Copy(vals, v)
	}
	return vals, nil
}

// stop stops a gateway with SIGTERM and then kills, by pid, whatever of
// its descendants (OpenClaw's workers) outlived it.
func stop(t *target, p *talonproc.Proc) error {
	kids, _ := procfs.Descendants(p.Cmd.Process.Pid)
	err := p.Stop(t.stopTimeout)
	for _, pid := range kids {
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return err
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// openFilesNeeded is the descriptors n simultaneous turns take in the
// harness: a client connection to the gateway and, in the fake LLM, the
// gateway's upstream connection; plus headroom for everything else.
func openFilesNeeded(n int) uint64 { return uint64(2*n + 512) }

// raiseOpenFiles makes sure this process may open need files, raising its
// soft limit towards the hard one. Raising it explicitly (rather than
// relying on Go's automatic raise) also makes children inherit the raised
// limit: Go restores the original limit in children unless the program
// set one itself, and OpenClaw (Node) does not raise its own.
func raiseOpenFiles(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading the open-files limit: %w", err)
	}
	if lim.Max < need {
		return fmt.Errorf("the open-files hard limit is %d, and the run needs %d (the concurrency runs, or the tenants gateway's limit): raise it (ulimit -Hn %d, as root) or measure fewer simultaneous turns", lim.Max, need, need)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising the open-files limit to %d: %w", lim.Max, err)
	}
	return nil
}

// machine describes this machine for the report.
func machine() Machine {
	m := Machine{CPUs: goruntime.NumCPU(), OS: goruntime.GOOS, Arch: goruntime.GOARCH, Go: goruntime.Version(), CPU: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// sleepCtx waits d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keepAliveClient is the client of the sequential turns: a few pooled
// connections, as an SDK keeps.
func keepAliveClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: 4, DisableCompression: true, IdleConnTimeout: time.Minute}}
}
