package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"talon/internal/fakellm"
	"talon/internal/procfs"
	"talon/internal/talonproc"
	"talon/internal/testtier"
)

// Soak figures. The length is TALON_SOAK (a Go duration), else
// defaultSoak. The soak is of the full tier (CI=true or TALON_E2E=full),
// where `go test -short` outside CI still skips it; TALON_SOAK runs it in
// any tier.
const (
	defaultSoak  = 2 * time.Minute
	soakWorkers  = 8
	soakSessions = 5                // named sessions per worker; every 25th turn opens a fresh one
	soakWarmUp   = 5 * time.Second  // the same load, before the baseline is taken
	soakSettle   = 30 * time.Second // bounds the wait for goroutines and files to wind down
	// The bound on memory: RSS after the soak, idle, below twice the
	// baseline plus 20 MB. RSS rightly stays above the baseline after a
	// load: Go returns freed memory to the OS lazily, and the store keeps
	// transcript tails in a cache bounded at 8 MB of JSON. What the bound
	// catches is growth with the number of turns and sessions, which 2
	// minutes multiply (≈15,000 turns, ≈600 sessions on 2 cores).
	soakRSSFactor = 2
	soakRSSSlack  = 20.0 // MB
	// Files: talon's SQLite reader pool keeps up to max(4, GOMAXPROCS)
	// connections open once a load has needed them, three files each
	// (database, -wal, -shm); the warm-up usually grows it to its size,
	// and this slack absorbs the rest. A leak of one file per turn or per
	// connection is thousands after 2 minutes.
	soakFileSlack = 12
)

// soakLength is how long the soak runs, or a skip.
func soakLength(t *testing.T) time.Duration {
	t.Helper()
	if v := os.Getenv("TALON_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("TALON_SOAK=%q: want a positive Go duration such as 2m or 30s", v)
		}
		return d
	}
	testtier.RequireFull(t, "a 2-minute soak; TALON_SOAK=30s runs a short one")
	if testing.Short() && !testtier.CI() {
		t.Skip("soak skipped under -short outside CI; TALON_SOAK=30s runs a short one")
	}
	return defaultSoak
}

// TestSoak runs chat turns (streamed and not), tool-call turns (the model
// calls read, then answers), session listings (the model calls
// sessions_list) and clients that leave mid-stream, concurrently, against
// talon serve for soakLength. Every turn must succeed. Afterwards, with
// idle connections closed, the process's goroutines (from its
// /debug/runtime) and open files (/proc/PID/fd) return to their baseline
// after a warm-up, and its RSS stays within soakRSSFactor×baseline +
// soakRSSSlack MB.
func TestSoak(t *testing.T) {
	length := soakLength(t)
	dir := t.TempDir()
	const notes = "remember the milk"
	if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace", "notes.txt"), []byte(notes), 0o600); err != nil {
		t.Fatal(err)
	}
	// The fake models, each behind a TCP relay whose connections the test
	// can close, so that the gateway's idle keep-alive connections to them
	// do not count as leaks. "slow" streams for long enough that a client
	// leaving after its first chunk aborts the run mid-stream.
	models := map[string]fakellm.Options{
		"chat":   {Reply: "soak reply", Chunks: 4},
		"slow":   {Reply: "a story told slowly", Chunks: 4, StreamDuration: 400 * time.Millisecond},
		"reader": {Reply: "read it", ToolCall: &fakellm.ToolCall{Name: "read", Arguments: `{"path":"notes.txt"}`}},
		"lister": {Reply: "listed", ToolCall: &fakellm.ToolCall{Name: "sessions_list", Arguments: `{}`}},
	}
	fakes, relays, urls := map[string]*fakellm.Server{}, map[string]*relay{}, map[string]string{}
	for id, o := range models {
		f, err := fakellm.Start(o)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := startRelay(strings.TrimPrefix(f.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer r.close()
		fakes[id], relays[id], urls[id] = f, r, "http://"+r.addr()+"/v1"
	}
	writeModelConfig(t, dir, urls, "chat/"+fakellm.Model)
	p := startTalon(t, dir)
	defer func() {
		if err := p.Stop(shutdownTimeout); err != nil {
			t.Errorf("%v; its log:\n%s", err, p.Log)
		}
	}()
	pid := p.Cmd.Process.Pid
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: soakWorkers}}
	idle := func() {
		client.CloseIdleConnections()
		for _, r := range relays {
			r.drop()
		}
	}
	measure := func() (goroutines, files int, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if goroutines, err = p.Goroutines(ctx, defaultToken); err != nil {
			return 0, 0, err
		}
		files, err = procfs.OpenFiles(pid)
		return goroutines, files, err
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	if n := soakLoad(t, client, p, soakWarmUp, seed); n == 0 {
		t.Fatal("warm-up: no turn completed")
	}
	idle()
	baseG, baseF, err := lowest(measure)
	if err != nil {
		t.Fatalf("baseline: %v", err)
	}
	baseRSS, err := procfs.RSSMB(pid)
	if err != nil {
		t.Fatal(err)
	}

	peak := baseRSS
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // RSS while the load runs, for the log
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if mb, err := procfs.RSSMB(pid); err == nil {
					peak = max(peak, mb)
				}
			}
		}
	}()
	turns := soakLoad(t, client, p, length, seed+1)
	close(stop)
	<-sampled

	// Nothing left behind.
	idle()
	var g, f int
	deadline := time.Now().Add(soakSettle)
	for {
		if g, f, err = measure(); err != nil {
			t.Fatalf("after the soak: %v", err)
		}
		if g <= baseG && f <= baseF+soakFileSlack {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%v after the soak: %d goroutines (baseline %d) and %d open files (baseline %d, slack %d); /proc/%d/fd:\n%s",
				soakSettle, g, baseG, f, baseF, soakFileSlack, pid, fdTargets(pid))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rss, err := procfs.RSSMB(pid)
	if err != nil {
		t.Fatal(err)
	}
	limit := soakRSSFactor*baseRSS + soakRSSSlack
	if rss > limit {
		t.Errorf("RSS %.1f MB after the soak, over the bound %.1f MB (baseline %.1f MB)", rss, limit, baseRSS)
	}
	t.Logf("soak %v: %d turns by %d clients; goroutines %d → %d, open files %d → %d, RSS %.1f MB → peak %.1f → %.1f MB (bound %.1f)",
		length, turns, soakWorkers, baseG, g, baseF, f, baseRSS, peak, rss, limit)

	// The fakes saw the tools run and the sessions listed, and refused no
	// request the gateway sent them.
	if r := fakes["reader"].LastToolResult(); !strings.Contains(r, notes) {
		t.Errorf("the read tool's last result %q lacks %q", r, notes)
	}
	if r := fakes["lister"].LastToolResult(); !strings.Contains(r, `"sessions"`) {
		t.Errorf("sessions_list's last result %q lists no sessions", r)
	}
	for id, fk := range fakes {
		if n := fk.Rejected(); n > 0 {
			t.Errorf("fake model %s refused %d requests from the gateway", id, n)
		}
	}
}

// soakKind is a kind of turn in the mix: the model it uses, the reply it
// must get, and its weight.
type soakKind struct {
	name, model, reply string
	stream, leave      bool // leave: the client goes away after the first chunk
	weight             int
}

var soakKinds = []soakKind{
	{"chat", "", "soak reply", false, false, 3},
	{"chat streamed", "", "soak reply", true, false, 3},
	{"read then answer", "reader/" + fakellm.Model, "read it", false, false, 1},
	{"read then answer, streamed", "reader/" + fakellm.Model, "read it", true, false, 1},
	{"list sessions", "lister/" + fakellm.Model, "listed", false, false, 1},
	{"leave mid-stream", "slow/" + fakellm.Model, "", true, true, 1},
}

// soakLoad runs soakWorkers clients sending the mix for length and returns
// how many turns completed. Any turn that fails fails the test (the first
// few are reported).
func soakLoad(t *testing.T, client *http.Client, p *talonproc.Proc, length time.Duration, seed uint64) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), length)
	defer cancel()
	total := 0
	for _, k := range soakKinds {
		total += k.weight
	}
	var done, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range soakWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; ; i++ {
				k := pickKind(rnd.IntN(total))
				user := fmt.Sprintf("soak-%d-%d", w, i%soakSessions)
				if i%25 == 24 {
					user = fmt.Sprintf("soak-%d-fresh-%d", w, i)
				}
				tr := turn{user: user, text: fmt.Sprintf("%s #%d from worker %d", k.name, i, w), stream: k.stream, model: k.model}
				// Each turn gets its own deadline so the last ones finish
				// after the soak's end rather than being cut.
				tctx, tcancel := context.WithTimeout(context.Background(), time.Minute)
				var err error
				if k.leave {
					err = leaveMidStream(tctx, client, p.URL, tr)
				} else {
					var reply string
					if reply, err = send(tctx, client, p.URL, tr); err == nil && reply != k.reply {
						err = fmt.Errorf("reply %q, want %q", reply, k.reply)
					}
				}
				tcancel()
				if err != nil {
					if failed.Add(1) <= 5 {
						t.Errorf("%s: %v", tr.text, err)
					}
				} else {
					done.Add(1)
				}
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d turns failed; talon's log:\n%s", n, tail(p.Log.String(), 4<<10))
	}
	return int(done.Load())
}

// pickKind is the kind at n of the weights' total.
func pickKind(n int) (k soakKind) {
	for _, k = range soakKinds {
		if n < k.weight {
			return k
		}
		n -= k.weight
	}
	return k
}

// leaveMidStream starts a streamed turn and goes away after the first
// chunk of the model's text.
func leaveMidStream(ctx context.Context, c *http.Client, base string, tr turn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": "openclaw", "user": tr.user, "stream": true,
		"messages": []any{map[string]string{"role": "user", "content": tr.text}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+defaultToken)
	req.Header.Set("X-OpenClaw-Model", tr.model)
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("posting: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"content"`) {
			return nil // cancel, then close: the client is gone
		}
	}
	return fmt.Errorf("the stream ended before the model's text: %v", sc.Err())
}

// lowest takes the lowest of each figure over a second: what is left once
// the connections just closed have wound down.
func lowest(measure func() (int, int, error)) (int, int, error) {
	g, f, err := measure()
	for range 10 {
		if err != nil {
			return 0, 0, err
		}
		time.Sleep(100 * time.Millisecond)
		var g2, f2 int
		g2, f2, err = measure()
		g, f = min(g, g2), min(f, f2)
	}
	return g, f, err
}

// fdTargets lists what the process's file descriptors point at.
func fdTargets(pid int) string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "  %s -> %s\n", e.Name(), target)
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// relay passes TCP connections through to a server, and can drop them all:
// the test's way to close the gateway's idle connections to a fake model
// from the outside, without an HTTP proxy's own behaviour in between.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func startRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay: listening: %w", err)
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			in.Close()
			continue
		}
		r.mu.Lock()
		r.conns[in], r.conns[out] = true, true
		r.mu.Unlock()
		r.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer r.wg.Done()
			_, _ = io.Copy(dst, src)
			// One side ended: end both, as a connection.
			in.Close()
			out.Close()
			r.mu.Lock()
			delete(r.conns, in)
			delete(r.conns, out)
			r.mu.Unlock()
		}
		go pipe(out, in)
		go pipe(in, out)
	}
}

// drop closes every relayed connection.
func (r *relay) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		c.Close()
	}
}

func (r *relay) close() {
	r.ln.Close()
	r.drop()
	r.wg.Wait()
}
