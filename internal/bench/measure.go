package bench

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"talon/internal/fakellm"
	"talon/internal/procfs"
	"talon/internal/talonproc"
)

// forOpenClaw formats the OpenClaw part of a method note, "" when the
// run does not compare (Run then zeroes the plan's OpenClaw scale).
func forOpenClaw(p Plan, format string, args ...any) string {
	if p.OpenClaw.ColdStarts == 0 {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// ---- cold start and idle memory

const groupCold = "cold start"

func coldStartFigures(Plan) []Figure {
	return []Figure{
		{ID: "cold_start.ready_ms.median", Group: groupCold, What: "exec → /readyz 200, median", Unit: "ms"},
		{ID: "cold_start.ready_ms.min", Group: groupCold, What: "exec → /readyz 200, min", Unit: "ms"},
		{ID: "cold_start.ready_ms.max", Group: groupCold, What: "exec → /readyz 200, max", Unit: "ms"},
		{ID: "cold_start.rss_mb.median", Group: groupCold, What: "RSS just ready, median", Unit: "MB"},
		{ID: "cold_start.rss_mb.max", Group: groupCold, What: "RSS just ready, max", Unit: "MB"},
		{ID: "idle.rss_mb.median", Group: groupCold, What: "RSS idle after ready, median", Unit: "MB"},
		{ID: "idle.rss_mb.max", Group: groupCold, What: "RSS idle after ready, max", Unit: "MB"},
	}
}

func coldStartMethod(p Plan) string {
	return fmt.Sprintf("%d fresh starts for talon%s, each with a new state dir holding only the config; "+
		"time from just before exec to the first 200 from /readyz (polled every 0.2 ms for talon%s); "+
		"RSS is VmRSS of the process and its descendants from /proc, just after ready and again after %d ms without requests",
		p.Talon.ColdStarts, forOpenClaw(p, " (%d for OpenClaw)", p.OpenClaw.ColdStarts), forOpenClaw(p, ", 50 ms for OpenClaw"), p.IdleMS)
}

func coldStart(e *env) (map[string]float64, error) {
	var ready []time.Duration
	var rss, idle []float64
	for i := range e.scale.ColdStarts {
		p, err := e.t.start(filepath.Join(e.root, "cold-"+strconv.Itoa(i)), e.fakes.upstreams())
		if err != nil {
			return nil, err
		}
		pid := p.Cmd.Process.Pid
		r, err := procfs.TreeRSSMB(pid)
		if err == nil {
			err = sleepCtx(e.ctx, time.Duration(e.plan.IdleMS)*time.Millisecond)
		}
		var id float64
		if err == nil {
			id, err = procfs.TreeRSSMB(pid)
		}
		if serr := stop(e.t, p); err == nil && serr != nil && !e.t.lenient {
			err = fmt.Errorf("stopping start %d: %w\nits log:\n%s", i+1, serr, tail(p.Log.String(), 2048))
		}
		if err != nil {
			return nil, err
		}
		ready, rss, idle = append(ready, p.ReadyAfter), append(rss, r), append(idle, id)
		e.logf("%s: cold start %d/%d: ready in %.1f ms, RSS %.1f MB, %.1f MB idle", e.t.name, i+1, e.scale.ColdStarts, ms(p.ReadyAfter), r, id)
	}
	readyMS := sorted(msAll(ready))
	rss, idle = sorted(rss), sorted(idle)
	return map[string]float64{
		"cold_start.ready_ms.median": Percentile(readyMS, 50),
		"cold_start.ready_ms.min":    readyMS[0],
		"cold_start.ready_ms.max":    readyMS[len(readyMS)-1],
		"cold_start.rss_mb.median":   Percentile(rss, 50),
		"cold_start.rss_mb.max":      rss[len(rss)-1],
		"idle.rss_mb.median":         Percentile(idle, 50),
		"idle.rss_mb.max":            idle[len(idle)-1],
	}, nil
}

// ---- per-turn overhead against the fake LLM called directly

const (
	groupTurn   = "turn, non-streamed"
	groupStream = "turn, streamed"
)

func turnFigures(Plan) []Figure {
	return []Figure{
		{ID: "turn.added_ms.p50", Group: groupTurn, What: "added by the gateway (gateway − direct, per pair), p50", Unit: "ms"},
		{ID: "turn.added_ms.p99", Group: groupTurn, What: "added by the gateway, p99", Unit: "ms"},
		{ID: "turn.direct_ms.p50", Group: groupTurn, What: "direct to the fake LLM, p50", Unit: "ms"},
		{ID: "turn.gateway_ms.p50", Group: groupTurn, What: "through the gateway, p50", Unit: "ms"},
		{ID: "ttft.added_ms.p50", Group: groupStream, What: "time to first token added by the gateway, p50", Unit: "ms"},
		{ID: "ttft.added_ms.p99", Group: groupStream, What: "time to first token added, p99", Unit: "ms"},
		{ID: "ttft.direct_ms.p50", Group: groupStream, What: "time to first token direct, p50", Unit: "ms"},
		{ID: "ttft.gateway_ms.p50", Group: groupStream, What: "time to first token through the gateway, p50", Unit: "ms"},
		{ID: "turn.rss_after_mb", Group: groupStream, What: "gateway RSS after all the turns", Unit: "MB"},
	}
}

func turnMethod(p Plan) string {
	return fmt.Sprintf("after %d warm-up pairs, %d pairs%s of one request straight to the fake LLM and one "+
		"through the gateway (model openclaw/main, a new session each turn, the same one-line message), alternating which goes "+
		"first, over keep-alive connections; the figures are percentiles of the per-pair difference, so noise common to both "+
		"sides cancels. Non-streamed: time to the whole answer; streamed: time to the first non-empty delta.content. "+
		"Every answer is read to the end and checked",
		p.Talon.WarmPairs, p.Talon.Pairs, forOpenClaw(p, " (OpenClaw: %d after %d)", p.OpenClaw.Pairs, p.OpenClaw.WarmPairs))
}

// chatBody is a one-message chat request for a model.
func chatBody(model string, stream bool) []byte {
	s := ""
	if stream {
		s = `,"stream":true`
	}
	return []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]` + s + `}`)
}

// timer returns a func that runs turn t over c and returns one of its
// times (First or Whole), with check run after the clock stopped.
func timer(e *env, c *http.Client, t Turn, first bool, check func() error) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		tm, err := Chat(e.ctx, c, t)
		if err == nil && check != nil {
			err = check()
		}
		if first {
			return tm.First, err
		}
		return tm.Whole, err
	}
}

func turns(e *env) (map[string]float64, error) {
	p, err := e.gateway()
	if err != nil {
		return nil, err
	}
	c := keepAliveClient(e.t.turnTimeout)
	defer c.CloseIdleConnections()
	plain := e.fakes.plain
	vals := map[string]float64{}
	for _, stream := range []bool{false, true} {
		direct := Turn{URL: plain.BaseURL() + "/chat/completions", Token: UpstreamKey, Body: chatBody(fakellm.Model, stream), Stream: stream, Want: plain.Text()}
		via := Turn{URL: p.URL + "/v1/chat/completions", Token: e.t.token, Body: chatBody("openclaw/"+agentPlain, stream), Stream: stream, Want: plain.Text()}
		a, b := timer(e, c, direct, true, nil), timer(e, c, via, true, nil)
		e.logf("%s: %d warm-up pairs (stream %v)", e.t.name, e.scale.WarmPairs, stream)
		if _, err := MeasurePairs(e.scale.WarmPairs, a, b); err != nil {
			return nil, fmt.Errorf("warm-up (stream %v): %w", stream, err)
		}
		before := plain.Chats()
		pairs, err := MeasurePairs(e.scale.Pairs, a, b)
		if err != nil {
			return nil, fmt.Errorf("stream %v: %w", stream, err)
		}
		if err := upstreamCalls(e, "the turn pairs", plain.Chats()-before, int64(2*e.scale.Pairs)); err != nil {
			return nil, err
		}
		prefix := "turn"
		if stream {
			prefix = "ttft"
		}
		vals[prefix+".added_ms.p50"] = ms(Percentile(pairs.Diff, 50))
		vals[prefix+".added_ms.p99"] = ms(Percentile(pairs.Diff, 99))
		vals[prefix+".direct_ms.p50"] = ms(Percentile(pairs.A, 50))
		vals[prefix+".gateway_ms.p50"] = ms(Percentile(pairs.B, 50))
		e.logf("%s: %d turn pairs (stream %v): %.2f ms added at p50, %.2f ms at p99", e.t.name, e.scale.Pairs, stream,
			vals[prefix+".added_ms.p50"], vals[prefix+".added_ms.p99"])
	}
	rss, err := procfs.TreeRSSMB(p.Cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	vals["turn.rss_after_mb"] = rss
	return vals, nil
}

// upstreamCalls checks the fake got the calls the turns should make:
// enforced for talon (one upstream call per model round is its
// contract), reported for OpenClaw.
func upstreamCalls(e *env, what string, got, want int64) error {
	if got == want {
		return nil
	}
	if e.t.lenient {
		e.notef("%s made %d upstream calls, where talon makes %d", what, got, want)
		return nil
	}
	return fmt.Errorf("%s: the fake LLM answered %d calls, want %d", what, got, want)
}

// ---- tool-call turns

const groupTool = "tool call (read)"

func toolFigures(Plan) []Figure {
	return []Figure{
		{ID: "tool_call.added_ms.p50", Group: groupTool, What: "turn with one read call − plain turn (per pair), p50", Unit: "ms"},
		{ID: "tool_call.added_ms.p99", Group: groupTool, What: "turn with one read call − plain turn, p99", Unit: "ms"},
		{ID: "tool_call.turn_ms.p50", Group: groupTool, What: "turn with one read call, p50", Unit: "ms"},
	}
}

func toolMethod(p Plan) string {
	return fmt.Sprintf("%d pairs%s of a plain non-streamed turn and a turn whose model (another fake) first calls "+
		"read on a file in the agent's workspace and, given the result, answers; both through the gateway, alternating. "+
		"The difference is what one tool call costs: the tool, a second model round and the transcript records. "+
		"Every tool result is checked to hold the file's text",
		p.Talon.ToolPairs, forOpenClaw(p, " (OpenClaw: %d)", p.OpenClaw.ToolPairs))
}

func toolTurns(e *env) (map[string]float64, error) {
	p, err := e.gateway()
	if err != nil {
		return nil, err
	}
	c := keepAliveClient(e.t.turnTimeout)
	defer c.CloseIdleConnections()
	plain := Turn{URL: p.URL + "/v1/chat/completions", Token: e.t.token, Body: chatBody("openclaw/"+agentPlain, false), Want: e.fakes.plain.Text()}
	tool := Turn{URL: p.URL + "/v1/chat/completions", Token: e.t.token, Body: chatBody("openclaw/"+agentReader, false), Want: e.fakes.tool.Text()}
	fk := e.fakes.tool
	read := func() error {
		if r := fk.LastToolResult(); !strings.Contains(r, readMarker) {
			return fmt.Errorf("the read tool's result does not hold the file's text: %.300q", r)
		}
		return nil
	}
	a, b := timer(e, c, plain, false, nil), timer(e, c, tool, false, read)
	if _, err := MeasurePairs(max(2, e.scale.WarmPairs/10), a, b); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	chats, calls := fk.Chats(), fk.ToolCalls()
	pairs, err := MeasurePairs(e.scale.ToolPairs, a, b)
	if err != nil {
		return nil, err
	}
	if err := upstreamCalls(e, "the tool turns", fk.Chats()-chats, int64(2*e.scale.ToolPairs)); err != nil {
		return nil, err
	}
	if got := fk.ToolCalls() - calls; got != int64(e.scale.ToolPairs) {
		return nil, fmt.Errorf("the model asked for %d tool calls in %d tool turns", got, e.scale.ToolPairs)
	}
	vals := map[string]float64{
		"tool_call.added_ms.p50": ms(Percentile(pairs.Diff, 50)),
		"tool_call.added_ms.p99": ms(Percentile(pairs.Diff, 99)),
		"tool_call.turn_ms.p50":  ms(Percentile(pairs.B, 50)),
	}
	e.logf("%s: %d tool-call pairs: %.2f ms added at p50", e.t.name, e.scale.ToolPairs, vals["tool_call.added_ms.p50"])
	return vals, nil
}

// ---- simultaneous streaming turns

func concurrencyGroup(p Plan, n int) string {
	return fmt.Sprintf("%s concurrent streams (%.3g s each)", thousands(int64(n)), float64(p.StreamMS)/1000)
}

func concurrencyFigures(p Plan) []Figure {
	var out []Figure
	for _, n := range p.Talon.Concurrency {
		g, id := concurrencyGroup(p, n), "concurrency."+strconv.Itoa(n)+"."
		out = append(out,
			Figure{ID: id + "errors", Group: g, What: "turns that failed", Unit: "count"},
			Figure{ID: id + "added_ms.p50", Group: g, What: "turn time − stream time, p50", Unit: "ms"},
			Figure{ID: id + "added_ms.p99", Group: g, What: "turn time − stream time, p99", Unit: "ms"},
			Figure{ID: id + "upstream_peak", Group: g, What: "streams open at the fake LLM at once, peak", Unit: "count"},
			Figure{ID: id + "peak_rss_mb", Group: g, What: "gateway RSS, peak during the run", Unit: "MB"},
			Figure{ID: id + "goroutines_before", Group: g, What: "gateway goroutines before", Unit: "count"},
			Figure{ID: id + "goroutines_after", Group: g, What: "gateway goroutines after", Unit: "count"},
			Figure{ID: id + "open_files_after", Group: g, What: "gateway open files after", Unit: "count"},
		)
	}
	return out
}

func concurrencyMethod(p Plan) string {
	return fmt.Sprintf("N streaming turns (model openclaw/slow, a new session each) released at once from N connections, "+
		"%d round(s) per level for talon%s, while the fake LLM streams each answer over %d ms in %d chunks; "+
		"a turn counts as failed unless it ends with [DONE] and the whole text. Added latency is each turn's time to [DONE] minus "+
		"the %d ms stream. Peak RSS samples VmRSS of the process tree every 25 ms. Goroutines come from talon's GET /debug/runtime "+
		"(loopback, token), open files from /proc/PID/fd, both once they stop changing (at most 5 s) after the harness closed "+
		"its connections; they include the idle keep-alive connections talon's LLM client pools (up to 32, two goroutines each, "+
		"closed after 90 s idle). OpenClaw has no goroutine count",
		p.Talon.Rounds, forOpenClaw(p, " (%d for OpenClaw)", p.OpenClaw.Rounds), p.StreamMS, p.StreamChunks, p.StreamMS)
}

func concurrency(e *env) (map[string]float64, error) {
	p, err := e.gateway()
	if err != nil {
		return nil, err
	}
	pid := p.Cmd.Process.Pid
	limit, err := procfs.MaxOpenFiles(pid)
	if err != nil {
		return nil, err
	}
	if need := openFilesNeeded(slices.Max(e.scale.Concurrency)); limit >= 0 && uint64(limit) < need {
		return nil, fmt.Errorf("the gateway may open %d files, and %d simultaneous turns need about %d (a client and an upstream connection each)",
			limit, slices.Max(e.scale.Concurrency), need)
	}
	slow := e.fakes.slow
	turn := Turn{URL: p.URL + "/v1/chat/completions", Token: e.t.token, Body: chatBody("openclaw/"+agentSlow, true), Stream: true, Want: slow.Text()}
	stream := time.Duration(e.plan.StreamMS) * time.Millisecond
	// The slow agent's first run is not measured (OpenClaw's first run of
	// an agent takes seconds).
	warm := keepAliveClient(stream + e.t.turnTimeout)
	if _, err := Chat(e.ctx, warm, turn); err != nil {
		return nil, fmt.Errorf("warm-up turn: %w", err)
	}
	warm.CloseIdleConnections()

	vals := map[string]float64{}
	for _, n := range e.scale.Concurrency {
		id := "concurrency." + strconv.Itoa(n) + "."
		if e.t.goroutines != nil {
			g, err := settle(e.ctx, func() (int, error) { return e.t.goroutines(e.ctx, p) })
			if err != nil {
				return nil, err
			}
			vals[id+"goroutines_before"] = float64(g)
		}
		var added []time.Duration
		var failed int
		var samples []string
		var peakRSS float64
		var upstream int64
		for round := range e.scale.Rounds {
			r, err := concurrentRound(e, p, turn, n, stream)
			if err != nil {
				return nil, err
			}
			added = append(added, r.added...)
			failed += len(r.errs)
			for _, msg := range r.errs {
				if len(samples) < 3 && !slices.Contains(samples, msg) {
					samples = append(samples, msg)
				}
			}
			peakRSS, upstream = max(peakRSS, r.peakRSS), max(upstream, r.upstream)
			e.logf("%s: %d concurrent streams, round %d/%d: %d failed, peak RSS %.1f MB, %d upstream at once",
				e.t.name, n, round+1, e.scale.Rounds, len(r.errs), r.peakRSS, r.upstream)
		}
		if failed > 0 {
			e.notef("%d of %d concurrent turns failed, e.g. %s", failed, n*e.scale.Rounds, strings.Join(samples, "; "))
		}
		vals[id+"errors"] = float64(failed)
		vals[id+"peak_rss_mb"] = peakRSS
		vals[id+"upstream_peak"] = float64(upstream)
		if len(added) > 0 {
			added = sorted(added)
			vals[id+"added_ms.p50"] = ms(Percentile(added, 50))
			vals[id+"added_ms.p99"] = ms(Percentile(added, 99))
		} else if !e.t.lenient {
			return nil, fmt.Errorf("none of %d concurrent turns succeeded, e.g. %s", n*e.scale.Rounds, strings.Join(samples, "; "))
		}
		if e.t.goroutines != nil {
			g, err := settle(e.ctx, func() (int, error) { return e.t.goroutines(e.ctx, p) })
			if err != nil {
				return nil, err
			}
			vals[id+"goroutines_after"] = float64(g)
		}
		files, err := settle(e.ctx, func() (int, error) { return procfs.OpenFiles(pid) })
		if err != nil {
			return nil, err
		}
		vals[id+"open_files_after"] = float64(files)
	}
	return vals, nil
}

// round is one release of n simultaneous turns.
type round struct {
	added    []time.Duration // of the turns that succeeded
	errs     []string        // of those that did not
	peakRSS  float64
	upstream int64
}

func concurrentRound(e *env, p *talonproc.Proc, turn Turn, n int, stream time.Duration) (*round, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}
	c := &http.Client{Timeout: stream + e.t.turnTimeout, Transport: tr}
	defer tr.CloseIdleConnections()
	e.fakes.slow.ResetMaxInFlight()

	var r round
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := procfs.TreeRSSMB(p.Cmd.Process.Pid); err == nil {
				r.peakRSS = max(r.peakRSS, v)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	var mu sync.Mutex
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-gate
			tm, err := Chat(e.ctx, c, turn)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.errs = append(r.errs, err.Error())
				return
			}
			r.added = append(r.added, tm.Whole-stream)
		})
	}
	close(gate)
	wg.Wait()
	close(stopSampling)
	<-sampled
	r.upstream = e.fakes.slow.MaxInFlight()
	if err := e.ctx.Err(); err != nil {
		return nil, err
	}
	if done, err := p.Exited(); done {
		return nil, fmt.Errorf("the gateway exited during the run (%v)", err)
	}
	return &r, nil
}

// settle polls read every 100 ms until five readings in a row agree, or
// for at most 5 s, and returns the last reading: a count after the
// process has finished closing what a run left.
func settle(ctx context.Context, read func() (int, error)) (int, error) {
	deadline := time.Now().Add(5 * time.Second)
	last, same := -1, 0
	for {
		v, err := read()
		if err != nil {
			return 0, err
		}
		if v == last {
			same++
		} else {
			last, same = v, 1
		}
		if same >= 5 || time.Now().After(deadline) {
			return v, nil
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
}
