package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"talon/internal/fakellm"
	"talon/internal/procfs"
	"talon/internal/talonproc"
)

func init() {
	measurements = append(measurements, measurement{
		name: "tenants", figures: tenantFigures, method: tenantsMethod, run: tenantsRow,
	})
}

// benchTenant is a tenant the harness wrote: its id (X-Tenant-ID) and its
// gateway token.
type benchTenant struct{ id, token string }

// tenantsRow loads one fresh gateway with many tenants (see
// tenantsMethod). OpenClaw has no tenants.
func tenantsRow(e *env) (_ map[string]float64, err error) {
	if e.t.lenient || e.t.binary == "" {
		return map[string]float64{}, nil
	}
	tp := e.plan.Tenants
	dir := filepath.Join(e.root, "tenants")
	e.logf("talon: tenants: writing %d tenants", tp.N)
	ts, err := writeTenants(dir, e.fakes.plain.BaseURL(), tp.N)
	if err != nil {
		return nil, err
	}
	idleFlag, err := hasServeFlag(e.t.binary, "--tenant-idle")
	if err != nil {
		return nil, err
	}
	if !idleFlag {
		e.notef("tenants: this binary has no --tenant-idle: its tenants are never closed for idleness")
	}
	p, err := startTenantGateway(e.t.binary, dir, tp, idleFlag)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := stop(e.t, p); serr != nil && err == nil {
			err = fmt.Errorf("stopping the tenants' gateway: %w", serr)
		}
		if err != nil {
			err = fmt.Errorf("%w\nthe tenants' gateway log (last 2 KB):\n%s", err, tail(p.Log.String(), 2048))
		}
	}()
	r := &tenantRun{e: e, p: p, dir: dir, tenants: ts, plan: tp,
		turns: tenantClient(tp.Clients, e.t.turnTimeout), debug: keepAliveClient(30 * time.Second)}
	defer r.turns.CloseIdleConnections()
	defer r.debug.CloseIdleConnections()
	return r.run()
}

// tenantRun is one run of the row against a started gateway.
type tenantRun struct {
	e       *env
	p       *talonproc.Proc
	dir     string // the state dir
	tenants []benchTenant
	plan    Tenants
	// turns carries the tenants' turns; debug the /debug/runtime reads,
	// on a connection of its own that stays open throughout, so that each
	// footprint counts the same one socket of the harness.
	turns, debug *http.Client
	fails        map[string]*failures
	noted        map[string]bool
}

func (r *tenantRun) run() (map[string]float64, error) {
	e, tp := r.e, r.plan
	pid := r.p.Cmd.Process.Pid
	if got, err := procfs.MaxOpenFiles(pid); err != nil {
		return nil, err
	} else if got != int64(tp.OpenFiles) {
		return nil, fmt.Errorf("the tenants' gateway may open %d files, want %d", got, tp.OpenFiles)
	}
	r.fails, r.noted = map[string]*failures{}, map[string]bool{}
	var l tenantLoad
	var err error
	if l.empty, _, err = r.footprint(); err != nil {
		return nil, err
	}
	if l.direct, err = r.direct(20); err != nil {
		return nil, err
	}
	e.logf("talon: tenants: %d first turns, %d at a time", tp.N, tp.Clients)
	begin := time.Now()
	l.first = r.firstTurns()
	took := time.Since(begin)
	e.notef("tenants: the %d first turns took %.1f s (%.0f a second)", tp.N, took.Seconds(), float64(tp.N)/took.Seconds())
	sample := sampleOf(tp.N, tp.Sample)
	e.logf("talon: tenants: %d warm turns", len(sample))
	l.warm = r.sequential("warm", sample, true)
	var rt *runtimeInfo
	if l.active, rt, err = r.footprint(); err != nil {
		return nil, err
	}
	l.warmAfter = tp.N - r.fails["first"].count()
	if rt.Tenants != nil {
		l.warmAfter = rt.Tenants.Warm
		e.notef("tenants: after the first and warm turns the gateway knew %d tenants, %d of them warm", rt.Tenants.Known, rt.Tenants.Warm)
	}
	if err := r.waitIdle(); err != nil {
		return nil, err
	}
	if l.idle, _, err = r.footprint(); err != nil {
		return nil, err
	}
	if l.diskKB, err = diskKB(filepath.Join(r.dir, "tenants")); err != nil {
		return nil, err
	}
	e.logf("talon: tenants: %d cold turns", len(sample))
	l.cold = r.sequential("cold", sample, false)
	for _, phase := range []string{"first", "warm", "cold"} {
		if f := r.fails[phase]; f.count() > 0 {
			l.failed += f.count()
			e.notef("tenants: %d %s turns failed, e.g. %s", f.count(), phase, strings.Join(f.samples, "; "))
		}
	}
	if done, err := r.p.Exited(); done {
		return nil, fmt.Errorf("the tenants' gateway exited during the run (%v)", err)
	}
	e.logf("talon: tenants: %d failed turns; first turn p50 %.1f ms; heap of the idle tenants %.2f MB",
		l.failed, ms(Percentile(sorted(l.first), 50)), l.idle.heapMB-l.empty.heapMB)
	return tenantValues(e.plan, l), nil
}

// failures counts a phase's failed turns and keeps a few distinct
// messages.
type failures struct {
	n       int
	samples []string
}

func (f *failures) count() int {
	if f == nil {
		return 0
	}
	return f.n
}

func (r *tenantRun) fail(phase string, err error) {
	f := r.fails[phase]
	if f == nil {
		f = &failures{}
		r.fails[phase] = f
	}
	f.n++
	// The start of a message says what failed (the status and the
	// error); it is all the report needs.
	msg := err.Error()
	if len(msg) > 300 {
		msg = strings.ToValidUTF8(msg[:300], "") + "…"
	}
	if len(f.samples) < 3 && !slices.Contains(f.samples, msg) {
		f.samples = append(f.samples, msg)
	}
}

// turn is tenant i's one-message turn: a new session each time.
func (r *tenantRun) turn(i int) Turn {
	t := r.tenants[i]
	return Turn{URL: r.p.URL + "/v1/chat/completions", Token: t.token, Headers: map[string]string{"X-Tenant-ID": t.id},
		Body: chatBody("openclaw/"+agentPlain, false), Want: r.e.fakes.plain.Text()}
}

// firstTurns gives every tenant its first turn, Clients at a time, and
// returns the times of those that succeeded.
func (r *tenantRun) firstTurns() []time.Duration {
	var mu sync.Mutex
	var out []time.Duration
	next := make(chan int)
	var wg sync.WaitGroup
	for range r.plan.Clients {
		wg.Go(func() {
			for i := range next {
				tm, err := Chat(r.e.ctx, r.turns, r.turn(i))
				mu.Lock()
				if err != nil {
					r.fail("first", err)
				} else {
					out = append(out, tm.Whole)
				}
				mu.Unlock()
			}
		})
	}
	step := max(1, r.plan.N/10)
	for i := range r.plan.N {
		if r.e.ctx.Err() != nil {
			break
		}
		next <- i
		if (i+1)%step == 0 {
			mu.Lock()
			r.e.logf("talon: tenants: %d/%d first turns sent, %d failed", i+1, r.plan.N, r.fails["first"].count())
			mu.Unlock()
		}
	}
	close(next)
	wg.Wait()
	return out
}

// sequential runs the tenants' turns one at a time and returns the times
// of those that succeeded; with again, each measured turn comes right
// after an unmeasured one, which makes the tenant warm whatever the
// gateway evicted meanwhile.
func (r *tenantRun) sequential(phase string, idx []int, again bool) []time.Duration {
	var out []time.Duration
	for _, i := range idx {
		if again {
			if _, err := Chat(r.e.ctx, r.turns, r.turn(i)); err != nil {
				r.fail(phase, err)
				continue
			}
		}
		tm, err := Chat(r.e.ctx, r.turns, r.turn(i))
		if err != nil {
			r.fail(phase, err)
			continue
		}
		out = append(out, tm.Whole)
	}
	return out
}

// direct is the p50 of n calls straight to the fake, what a first turn's
// time is compared with.
func (r *tenantRun) direct(n int) (time.Duration, error) {
	plain := r.e.fakes.plain
	t := Turn{URL: plain.BaseURL() + "/chat/completions", Token: UpstreamKey, Body: chatBody(fakellm.Model, false), Want: plain.Text()}
	c := keepAliveClient(r.e.t.turnTimeout)
	defer c.CloseIdleConnections()
	var d []time.Duration
	for range n {
		tm, err := Chat(r.e.ctx, c, t)
		if err != nil {
			return 0, fmt.Errorf("a direct call to the fake LLM: %w", err)
		}
		d = append(d, tm.Whole)
	}
	return Percentile(sorted(d), 50), nil
}

// footprint reads the gateway's memory and files once its open files
// stop changing, with the turns' idle connections closed.
func (r *tenantRun) footprint() (footprint, *runtimeInfo, error) {
	r.turns.CloseIdleConnections()
	pid := r.p.Cmd.Process.Pid
	files, err := settle(r.e.ctx, func() (int, error) { return procfs.OpenFiles(pid) })
	if err != nil {
		return footprint{}, nil, err
	}
	rt, err := readRuntime(r.e.ctx, r.debug, r.p.URL, Token, true)
	if err != nil {
		return footprint{}, nil, err
	}
	f := footprint{files: files}
	if rt.HeapBytes != nil {
		f.heapMB = float64(*rt.HeapBytes) / 1e6
	} else {
		if f.heapMB, err = procfs.AnonRSSMB(pid); err != nil {
			return footprint{}, nil, err
		}
		r.noteOnce("tenants: this binary's /debug/runtime has no heapBytes: the heap figures are RssAnon after a GC (an upper bound)")
	}
	if f.rssMB, err = procfs.RSSMB(pid); err != nil {
		return footprint{}, nil, err
	}
	return f, rt, nil
}

// noteOnce adds a note the first time it is given.
func (r *tenantRun) noteOnce(note string) {
	if !r.noted[note] {
		r.noted[note] = true
		r.e.notef("%s", note)
	}
}

// waitIdle waits out the idle timeout and then until the gateway says no
// tenant is warm (at most the timeout again, or 10 s); a binary that
// does not say is given the timeout and 2 s.
func (r *tenantRun) waitIdle() error {
	idle := time.Duration(r.plan.IdleMS) * time.Millisecond
	r.e.logf("talon: tenants: idle for %v", idle)
	begin := time.Now()
	if err := sleepCtx(r.e.ctx, idle); err != nil {
		return err
	}
	deadline := begin.Add(idle + max(idle, 10*time.Second))
	for {
		rt, err := readRuntime(r.e.ctx, r.debug, r.p.URL, Token, false)
		if err != nil {
			return err
		}
		if rt.Tenants == nil {
			r.e.notef("tenants: this binary's /debug/runtime has no tenant counts: the idle figures are read %v after the last turn", idle+2*time.Second)
			return sleepCtx(r.e.ctx, 2*time.Second)
		}
		if rt.Tenants.Warm == 0 || time.Now().After(deadline) {
			r.e.notef("tenants: %.1f s after the last turn the gateway knew %d tenants, %d of them warm",
				time.Since(begin).Seconds(), rt.Tenants.Known, rt.Tenants.Warm)
			return nil
		}
		if err := sleepCtx(r.e.ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// runtimeInfo is talon's GET /debug/runtime. The fields after Goroutines
// came with issue 25; a binary without them leaves them nil.
type runtimeInfo struct {
	Goroutines int    `json:"goroutines"`
	HeapBytes  *int64 `json:"heapBytes"`
	OpenFiles  *int   `json:"openFiles"`
	Tenants    *struct {
		Known int `json:"known"`
		Warm  int `json:"warm"`
	} `json:"tenants"`
}

// readRuntime reads GET /debug/runtime with the operator's token; gc asks
// the gateway to collect garbage first, so that heapBytes is live heap.
func readRuntime(ctx context.Context, c *http.Client, base, token string, gc bool) (*runtimeInfo, error) {
	u := base + "/debug/runtime"
	if gc {
		u += "?gc=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /debug/runtime: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("GET /debug/runtime: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /debug/runtime: status %d: %.300s", resp.StatusCode, body)
	}
	var rt runtimeInfo
	if err := json.Unmarshal(body, &rt); err != nil {
		return nil, fmt.Errorf("GET /debug/runtime: %w in %.300s", err, body)
	}
	return &rt, nil
}

// tenantClient carries the tenants' turns: one keep-alive connection per
// client, so that a gateway out of descriptors (which cannot accept a new
// connection) still answers on the ones it has.
func tenantClient(clients int, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: clients, DisableCompression: true, IdleConnTimeout: time.Minute}}
}

// writeTenants writes a state dir with n tenants on the fake at llm: the
// root config (the operator's, with Token and the fake's address open to
// tenants) and tenants/<id>/talon.json, each with its own random token.
func writeTenants(dir, llm string, n int) ([]benchTenant, error) {
	u, err := url.Parse(llm)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("writing the tenants: the fake's URL %q: %v", llm, err)
	}
	root := talonConfig(dir, Upstreams{Plain: llm}, Token)
	root["tenants"] = map[string]any{"network": map[string]any{"allowHosts": []string{u.Host}}}
	if err := writeState(dir, "talon.json", root, false); err != nil {
		return nil, fmt.Errorf("writing the tenants' root config: %w", err)
	}
	width := len(strconv.Itoa(n))
	out := make([]benchTenant, n)
	for i := range out {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("writing the tenants: a token: %w", err)
		}
		t := benchTenant{id: fmt.Sprintf("t%0*d", width, i), token: hex.EncodeToString(b[:])}
		cfg := map[string]any{
			"gateway": map[string]any{"auth": map[string]any{"mode": "token", "token": t.token}},
			"models":  map[string]any{"providers": map[string]any{"fake": talonProvider(llm)}},
			"agents":  map[string]any{"defaults": map[string]any{"model": "fake/fake-model"}},
		}
		if err := writeState(filepath.Join(dir, "tenants", t.id), "talon.json", cfg, false); err != nil {
			return nil, fmt.Errorf("writing tenant %s: %w", t.id, err)
		}
		out[i] = t
	}
	return out, nil
}

// diskKB is what the regular files under dir take on disk (allocated
// blocks, so a sparse or preallocated file counts as the disk sees it),
// in KB.
func diskKB(dir string) (float64, error) {
	var blocks int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile (a journal, a temp file)
		}
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			blocks += st.Blocks
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measuring the tenants' disk use: %w", err)
	}
	return float64(blocks) * 512 / 1000, nil
}

// hasServeFlag says whether bin's `serve` takes flag, from its help.
func hasServeFlag(bin, flag string) (bool, error) {
	out, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("%s serve --help: %v\n%s", bin, err, out)
	}
	return strings.Contains(string(out), flag+" "), nil
}

// startTenantGateway starts `bin serve` on the tenants' state dir under
// sh, which sets RLIMIT_NOFILE (hard and soft: Go raises its soft limit
// to the hard one at start) before it execs talon in its place; there is
// no other way to give a child a lower hard limit than its parent's.
func startTenantGateway(bin, dir string, tp Tenants, idleFlag bool) (*talonproc.Proc, error) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		return nil, errors.New("starting the tenants' gateway: /bin/sh, which sets its open-files limit, is missing")
	}
	p, err := talonproc.Start(talonproc.Options{
		Bin: "/bin/sh", StateDir: dir, Env: talonEnv(dir), ReadyTimeout: time.Minute,
		Args: func(port int) []string {
			args := []string{"-c", `ulimit -n "$1" && shift && exec "$@"`, "sh", strconv.Itoa(tp.OpenFiles),
				bin, "serve", "--state-dir", dir, "--port", strconv.Itoa(port)}
			if idleFlag {
				args = append(args, "--tenant-idle", tenantIdle(tp))
			}
			return args
		},
	})
	if err != nil {
		return nil, fmt.Errorf("starting the tenants' gateway: %w", err)
	}
	return p, nil
}
