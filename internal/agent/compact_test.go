package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/compaction"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/sandbox"
	"talon/internal/store"
	"talon/internal/tools/core"
)

// windowRig is a runner whose model is a windowLLM, reached through the
// real provider clients.
type windowRig struct {
	t      *testing.T
	llm    *windowLLM
	runner *Runner
	db     *store.DB
	ws     string
	events []CompactionEvent
	mu     sync.Mutex
}

// newWindowRig runs agent main on the fake model; told is the window the
// config states, extra more agents.defaults keys.
func newWindowRig(t *testing.T, w *windowLLM, told int, extra string) *windowRig {
	t.Helper()
	return newRigOf(t, w, `"fake/m"`, w.providerConfig(told), extra)
}

// newRigOf is newWindowRig with the agents' model (a JSON5 value) and
// the providers given.
func newRigOf(t *testing.T, w *windowLLM, model, providers, extra string) *windowRig {
	t.Helper()
	state := t.TempDir()
	rig := &windowRig{t: t, llm: w, ws: filepath.Join(state, "workspace")}
	cfg := mustConfig(t, fmt.Sprintf(`{
		agents: {defaults: {model: %s, workspace: %q, %s}},
		models: {providers: {%s}},
	}`, model, rig.ws, extra, providers))
	db, err := store.Open(filepath.Join(state, "talon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	boxes := sandbox.NewManager()
	t.Cleanup(func() { boxes.Close() })
	reg, err := core.Registry()
	if err != nil {
		t.Fatal(err)
	}
	rig.db = db
	rig.runner = &Runner{Config: cfg, Policy: policy.New(cfg), Tools: reg, Store: db, StateDir: state, Sandboxes: boxes,
		Resolve: provider.NewMemo(cfg, provider.Options{Env: func(string) string { return "" }}).Resolve}
	return rig
}

// turn runs one turn of the main session.
func (g *windowRig) turn(text string) (*Result, error) {
	return g.runner.Run(context.Background(), Request{AgentID: "main", SessionKey: key, Owner: true,
		Input: []llm.Message{{Role: llm.RoleUser, Content: text}},
		OnCompaction: func(ev CompactionEvent) {
			g.mu.Lock()
			g.events = append(g.events, ev)
			g.mu.Unlock()
		}})
}

// ends are the compactions that ended, by reason.
func (g *windowRig) ends() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for _, ev := range g.events {
		if ev.Phase == "end" && ev.Completed {
			out[ev.Reason]++
		}
	}
	return out
}

// records reads the main session's whole transcript.
func (g *windowRig) records() []store.Record {
	g.t.Helper()
	e, err := g.db.GetSession(context.Background(), "main", key)
	if err != nil {
		g.t.Fatal(err)
	}
	recs, err := g.db.TranscriptRecords(context.Background(), e.SessionID, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	return recs
}

// filler is a user message of about 4 KB, as the failing session
// had.
func filler(i int) string {
	return fmt.Sprintf("Turn %d. ", i) + strings.Repeat(fmt.Sprintf("Some long text of turn %d. ", i), 160)
}

// TestLongSessionStaysInWindow is the session: a 32k window, 4 KB
// messages, 120 turns. Before compaction, turn 28 failed and every turn
// after it. Now no turn fails, no request the model answered was over
// the window, a fact of the first turn still reaches the model at the
// last one (through summaries of summaries), and the transcript keeps
// every turn. With both providers' wire formats.
func TestLongSessionStaysInWindow(t *testing.T) {
	for _, anthropic := range []bool{false, true} {
		t.Run(map[bool]string{false: "openai", true: "anthropic"}[anthropic], func(t *testing.T) {
			const window, turns = 32768, 120
			w := newWindowLLM(t, window, anthropic)
			g := newWindowRig(t, w, window, "")
			for i := 1; i <= turns; i++ {
				text := filler(i)
				if i == 1 {
					text = "FACT: the vault code is 4711. " + text
				}
				if _, err := g.turn(text); err != nil {
					t.Fatalf("turn %d failed: %v", i, err)
				}
			}
			answered, refused, summaries, _, maxAnswered, last := w.stats()
			if maxAnswered > window || refused > 0 {
				t.Errorf("the model refused %d requests and answered one of %d tokens (window %d): compaction came too late", refused, maxAnswered, window)
			}
			if !strings.Contains(last, "FACT: the vault code is 4711") {
				t.Errorf("the last request lacks the first turn's fact")
			}
			if !strings.Contains(last, compaction.SummaryIntro) || !strings.Contains(last, fmt.Sprintf("Turn %d.", turns)) {
				t.Errorf("the last request lacks the summary or the last turn")
			}
			users := 0
			for _, r := range g.records() {
				if r.Kind == store.KindMessage && r.Message.Role == llm.RoleUser {
					users++
				}
			}
			if users != turns {
				t.Errorf("the transcript keeps %d user messages, want %d", users, turns)
			}
			ends := g.ends()
			if ends[compaction.ReasonThreshold] == 0 {
				t.Errorf("no threshold compaction in %d turns: %v", turns, ends)
			}
			e, _ := g.db.GetSession(context.Background(), "main", key)
			if e.CompactionCount != int64(ends[compaction.ReasonThreshold]+ends[compaction.ReasonOverflow]) {
				t.Errorf("compactionCount %d, compactions %v", e.CompactionCount, ends)
			}
			t.Logf("%d requests answered (largest %d tokens), %d refused, %d summary calls, compactions %v", answered, maxAnswered, refused, summaries, ends)
		})
	}
}

// TestConformance8OverflowRecovery is spec context.md §12 vector 8, with
// OpenAI's and Anthropic's refusals: the model's real window is smaller
// than the config says, so the request of a turn is refused as too large;
// the runner compacts once, sends the same user message again and gets a
// single reply. A model that refuses every request ends the turn after
// three compactions with the advice, and the session keeps its id.
func TestConformance8OverflowRecovery(t *testing.T) {
	for _, anthropic := range []bool{false, true} {
		t.Run(map[bool]string{false: "openai", true: "anthropic"}[anthropic], func(t *testing.T) {
			w := newWindowLLM(t, 200_000, anthropic)
			g := newWindowRig(t, w, 200_000, "")
			for i := 1; i <= 12; i++ {
				if _, err := g.turn(filler(i)); err != nil {
					t.Fatal(err)
				}
			}
			e, _ := g.db.GetSession(context.Background(), "main", key)
			// The model's real window shrinks below what the session holds.
			w.set(func(w *windowLLM) { w.window = 14_000 })
			res, err := g.turn("FACT: retried once. " + filler(13))
			if err != nil {
				t.Fatalf("the turn after the overflow failed: %v", err)
			}
			_, refused, _, _, _, last := w.stats()
			if refused != 1 || g.ends()[compaction.ReasonOverflow] != 1 {
				t.Errorf("%d refusals, compactions %v; want one of each", refused, g.ends())
			}
			if !strings.Contains(last, "FACT: retried once.") || !strings.HasPrefix(res.Text, "Noted.") {
				t.Errorf("the retried request or its answer is not the turn's: %q", res.Text)
			}
			replies := 0
			for _, r := range g.records() {
				if r.Kind == store.KindMessage && r.Message.Role == llm.RoleAssistant && strings.HasPrefix(r.Message.Content, "Noted.") {
					replies++
				}
			}
			if replies != 13 {
				t.Errorf("%d replies stored for 13 turns", replies)
			}

			// Three refusals in a row: the advice, same session.
			w.set(func(w *windowLLM) { w.window = 0 })
			_, err = g.turn("one more")
			var oe *OverflowError
			if !errors.As(err, &oe) || err.Error() != compaction.OverflowAdvice || oe.Attempts != maxOverflowAttempts {
				t.Fatalf("error %v (%T), want the overflow advice after %d attempts", err, err, maxOverflowAttempts)
			}
			var perr *provider.Error
			if !errors.As(err, &perr) || perr.Status != 400 {
				t.Errorf("the advice does not wrap the provider's refusal: %v", err)
			}
			if after, _ := g.db.GetSession(context.Background(), "main", key); after.SessionID != e.SessionID {
				t.Errorf("the session moved from %s to %s", e.SessionID, after.SessionID)
			}
			recs := g.records()
			if m := recs[len(recs)-1].Message; m.StopReason != llm.StopError || m.Error != compaction.OverflowAdvice {
				t.Errorf("the failed turn is recorded as %+v", m)
			}
		})
	}
}

// TestHardTrimWhenSummarisingFails: the summary model answers nothing to
// every summariser call; threshold compaction then commits the hard
// trim's stub, the next requests fit, and no turn fails.
func TestHardTrimWhenSummarisingFails(t *testing.T) {
	const window = 16384
	w := newWindowLLM(t, window, false)
	w.set(func(w *windowLLM) { w.failSummaries = true })
	g := newWindowRig(t, w, window, "")
	for i := 1; i <= 30; i++ {
		if _, err := g.turn(filler(i)); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	_, _, summaries, _, maxAnswered, last := w.stats()
	if summaries == 0 || maxAnswered > window {
		t.Fatalf("%d summary calls, largest request %d", summaries, maxAnswered)
	}
	trims := 0
	for _, r := range g.records() {
		if r.Kind == store.KindCompaction {
			if !r.Compaction.Details.HardTrim || !strings.Contains(r.Compaction.Summary, "because summarising them failed") {
				t.Errorf("compaction %d is not the hard trim: %+v", r.Seq, r.Compaction)
			}
			trims++
		}
	}
	if trims == 0 || !strings.Contains(last, "because summarising them failed") {
		t.Errorf("%d hard trims; the last request has the stub: %v", trims, strings.Contains(last, "summarising them failed"))
	}
}

// TestSummaryFallsBack: a summary of the run's own model that fails with
// an error a fallback can fix (a 500) is asked of the run's fallback, as
// OpenClaw does, instead of ending in the hard trim; the ledger records
// the calls under the model that answered them.
func TestSummaryFallsBack(t *testing.T) {
	const window = 16384
	primary, spare := newWindowLLM(t, window, false), newWindowLLM(t, window, false)
	primary.set(func(w *windowLLM) { w.summariesDown = true })
	providers := primary.providerConfig(window) + ", " +
		strings.Replace(spare.providerConfig(window), "fake:", "spare:", 1)
	g := newRigOf(t, primary, `{primary: "fake/m", fallbacks: ["spare/m"]}`, providers, "")
	for i := 1; i <= 30; i++ {
		if _, err := g.turn(filler(i)); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	compactions := 0
	for _, r := range g.records() {
		if r.Kind == store.KindCompaction {
			compactions++
			if r.Compaction.Details.HardTrim {
				t.Errorf("compaction %d is a hard trim: the fallback was not asked", r.Seq)
			}
		}
	}
	spareAnswered, _, spareSummaries, _, _, _ := spare.stats()
	if compactions == 0 || spareSummaries == 0 {
		t.Fatalf("%d compactions, %d summaries by the fallback", compactions, spareSummaries)
	}
	_, models, err := g.db.Usage(context.Background(), store.UsageQuery{By: store.ByModel})
	if err != nil {
		t.Fatal(err)
	}
	// Within a run the chain goes on from the model that answered last,
	// so a turn after a fallen-back summary may be the fallback's too.
	for _, m := range models {
		if m.Key == "spare/m" && m.Calls == int64(spareAnswered) {
			return
		}
	}
	t.Errorf("ledger by model %+v: want the %d calls the fallback answered under spare/m", models, spareAnswered)
}

// TestCompactionTimeout: a summary model that does not answer within
// compaction.timeoutSeconds is given up, and the turn goes on after the
// hard trim.
func TestCompactionTimeout(t *testing.T) {
	const window = 16384
	w := newWindowLLM(t, window, false)
	g := newWindowRig(t, w, window, `compaction: {timeoutSeconds: 1, model: "slow/m"}`)
	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	inner := g.runner.Resolve
	g.runner.Resolve = func(ref string) (provider.Provider, string, error) {
		if ref == "slow/m" {
			return blocking{slow}, "m", nil
		}
		return inner(ref)
	}
	for i := 1; g.ends()[compaction.ReasonThreshold] == 0; i++ {
		if i > 20 {
			t.Fatal("no compaction in 20 turns")
		}
		if _, err := g.turn(filler(i)); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	recs := g.records()
	if c := recs[len(recs)-3]; c.Kind != store.KindCompaction || !c.Compaction.Details.HardTrim {
		t.Errorf("the compaction before the last turn is not the hard trim: %+v", c)
	}
	if _, err := g.turn("after"); err != nil {
		t.Fatal(err)
	}
}

// blocking is a model that answers nothing until its call is cancelled.
type blocking struct{ release chan struct{} }

func (b blocking) Chat(ctx context.Context, _ *provider.Request, _ func(string)) (*provider.Response, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.release:
		return nil, errors.New("released")
	}
}

// TestCompactionHoldsOnlyItsSession: while one session's summary model
// hangs, a turn of another session of the same agent runs and ends; the
// compacting session's turn ends when the summary does.
func TestCompactionHoldsOnlyItsSession(t *testing.T) {
	const window = 16384
	w := newWindowLLM(t, window, false)
	g := newWindowRig(t, w, window, `compaction: {model: "slow/m"}`)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	inner := g.runner.Resolve
	g.runner.Resolve = func(ref string) (provider.Provider, string, error) {
		if ref == "slow/m" {
			return entering{blocking{release}, entered}, "m", nil
		}
		return inner(ref)
	}
	failed := make(chan error, 1)
	go func() {
		for i := 1; i <= 20; i++ {
			if _, err := g.turn(filler(i)); err != nil {
				failed <- fmt.Errorf("turn %d: %w", i, err)
				return
			}
			if g.ends()[compaction.ReasonThreshold] > 0 {
				failed <- nil
				return
			}
		}
		failed <- errors.New("no compaction in 20 turns")
	}()
	select {
	case <-entered:
	case err := <-failed:
		t.Fatalf("the session ended its turns before a compaction held it: %v", err)
	}
	other, err := g.runner.Run(context.Background(), Request{AgentID: "main", SessionKey: "agent:main:other", Owner: true,
		Input: []llm.Message{{Role: llm.RoleUser, Content: "hello from another session"}}})
	if err != nil || other.Text == "" {
		t.Fatalf("another session's turn during the compaction: %+v, %v", other, err)
	}
	select {
	case err := <-failed:
		t.Fatalf("the compacting session's turn ended while its summary was held: %v", err)
	default:
	}
	close(release)
	if err := <-failed; err != nil {
		t.Fatalf("after the summary model gave up: %v", err)
	}
}

// entering is a model that says when it is called.
type entering struct {
	provider.Provider
	entered chan struct{}
}

func (e entering) Chat(ctx context.Context, req *provider.Request, delta func(string)) (*provider.Response, error) {
	select {
	case e.entered <- struct{}{}:
	default:
	}
	return e.Provider.Chat(ctx, req, delta)
}

// TestMemoryFlush: before the threshold, a silent turn lets the agent
// write memory/ (the file is there), is recorded on the session, runs
// once per compaction cycle, and neither its prompt nor its answer
// enters the transcript. A session whose sandbox may only read the
// workspace gets no flush (spec context.md R6.4).
func TestMemoryFlush(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		flushes     bool
	}{
		{"writable workspace", `userTimezone: "Europe/Vienna"`, true},
		{"read-only sandbox", `sandbox: {mode: "all", workspaceAccess: "ro"}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			const window = 32768
			w := newWindowLLM(t, window, false)
			g := newWindowRig(t, w, window, c.extra)
			for i := 1; i <= 60; i++ {
				if _, err := g.turn(filler(i)); err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
			}
			_, _, _, flushes, _, _ := w.stats()
			compactions := g.ends()[compaction.ReasonThreshold]
			switch {
			case compactions == 0:
				t.Fatal("no compaction in 60 turns")
			case !c.flushes && flushes != 0:
				t.Fatalf("%d flushes in a read-only sandbox", flushes)
			case !c.flushes:
				return
			case flushes != compactions && flushes != compactions+1:
				t.Fatalf("%d flushes, %d compactions: want one flush per compaction cycle", flushes, compactions)
			}
			if b, err := os.ReadFile(filepath.Join(g.ws, "memory", "flush.md")); err != nil || string(b) != "memory-written" {
				t.Errorf("memory file: %q, %v", b, err)
			}
			e, _ := g.db.GetSession(context.Background(), "main", key)
			if e.MemoryFlushAt == 0 || e.MemoryFlushCompactionCount == nil {
				t.Errorf("the flush is not recorded: %+v", e)
			}
			g.checkLedger()
			for _, r := range g.records() {
				if strings.Contains(r.Message.Content, "Pre-compaction memory flush") || r.Message.Content == "NO_REPLY" ||
					len(r.Message.ToolCalls) > 0 && strings.Contains(r.Message.ToolCalls[0].Arguments, "memory-written") {
					t.Errorf("the flush turn reached the transcript: %+v", r.Message)
				}
			}
		})
	}
}

// TestManualCompact: /compact on a session summarises it with the focus
// sent as data, reports before and after, and a second one right after
// has nothing to do; a session without a transcript is not compacted.
func TestManualCompact(t *testing.T) {
	w := newWindowLLM(t, 200_000, false)
	g := newWindowRig(t, w, 200_000, `compaction: {keepRecentTokens: 2000}`)
	ctx := context.Background()
	if res, err := g.runner.Compact(ctx, "main", key, "", nil); err != nil || res.Compacted || res.Reason != ReasonNoTranscript {
		t.Fatalf("compacting a missing session: %+v, %v", res, err)
	}
	for i := 1; i <= 8; i++ {
		text := filler(i)
		if i == 2 {
			text = "FACT: keep this. " + text
		}
		if _, err := g.turn(text); err != nil {
			t.Fatal(err)
		}
	}
	var events []CompactionEvent
	res, err := g.runner.Compact(ctx, "main", key, "focus on <the facts>", func(ev CompactionEvent) { events = append(events, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.TokensAfter >= res.TokensBefore || res.CompactionCount != 1 || !strings.Contains(res.Summary, "FACT: keep this.") {
		t.Fatalf("result %+v", res)
	}
	if want := compaction.NoticeCompacted(res.TokensBefore, res.TokensAfter, 200_000); res.Notice != want || !strings.HasPrefix(res.Notice, "⚙️ Compacted (") {
		t.Errorf("notice %q, want %q", res.Notice, want)
	}
	if len(events) != 2 || events[0].Phase != "start" || events[1].Phase != "end" || events[1].Reason != compaction.ReasonManual {
		t.Errorf("events %+v", events)
	}
	again, err := g.runner.Compact(ctx, "main", key, "", nil)
	if err != nil || again.Compacted || again.Reason != compaction.ErrAlreadyCompacted.Error() || !strings.HasPrefix(again.Notice, "⚙️ Compaction skipped: ") {
		t.Errorf("second compaction %+v, %v", again, err)
	}
	if _, err := g.turn("after"); err != nil {
		t.Fatal(err)
	}
	_, _, _, _, _, last := w.stats()
	if !strings.Contains(last, "FACT: keep this.") {
		t.Errorf("the turn after /compact lacks the summary")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if sum := strings.NewReplacer(`\u0026`, "&", `\u003c`, "<", `\u003e`, ">").Replace(w.lastSummary); !strings.Contains(sum, "Additional focus from /compact") || !strings.Contains(sum, "focus on &lt;the facts&gt;") {
		t.Errorf("the summariser was not sent the focus as escaped data")
	}
}

// TestWindowGuard: a window under 4 000 refuses the run with OpenClaw's
// message; one under 8 000 runs.
func TestWindowGuard(t *testing.T) {
	for _, c := range []struct {
		told int
		err  string
	}{
		{3000, "Model context window too small (3000 tokens; source=modelsConfig). Minimum is 4000."},
		{6000, ""},
	} {
		t.Run(fmt.Sprint(c.told), func(t *testing.T) {
			w := newWindowLLM(t, 200_000, false)
			g := newWindowRig(t, w, c.told, "")
			_, err := g.turn("hi")
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
				t.Fatalf("error %v, want %q", err, c.err)
			}
		})
	}
}

// TestPruningIsSticky: with contextPruning cache-ttl, once the prompt
// cache has been idle for the TTL an old tool result is trimmed in the
// request (never in the transcript), the projection is recorded, and the
// next request replays the same bytes although no new round runs. The
// window is small enough for the 14,000-character result to be worth
// trimming, and large enough that the tool list (every built tool) does
// not make the rig compact first.
func TestPruningIsSticky(t *testing.T) {
	ws := t.TempDir()
	a := newApprovalsRig(t, fmt.Sprintf(`{agents: {defaults: {workspace: %q, contextTokens: 22000, contextPruning: {mode: "cache-ttl", ttl: "5m"}}}}`, ws), 0)
	clock := time.UnixMilli(1_800_000_000_000)
	now := func() time.Time { return clock }
	a.runner.Now, a.db.Now = now, now
	big := strings.Repeat("0123456789", 1400)
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	toolResult := func() string {
		for _, m := range a.model.last() {
			if m.Role == llm.RoleTool {
				return m.Content
			}
		}
		t.Fatal("no tool result in the request")
		return ""
	}
	a.turn(`/call read {"path":"big.txt"}`)
	a.turn("hi")
	a.turn("hi")
	if got := toolResult(); got != big {
		t.Fatalf("the result was pruned before the TTL (%d chars)", len(got))
	}
	clock = clock.Add(10 * time.Minute)
	a.turn("hi")
	trimmed := toolResult()
	if !strings.HasSuffix(trimmed, "[Tool result trimmed: kept first 1500 chars and last 1500 chars of 14000 chars.]") {
		t.Fatalf("the old result was not trimmed after the TTL: %d chars", len(trimmed))
	}
	a.turn("hi")
	if got := toolResult(); got != trimmed {
		t.Errorf("the next request does not replay the trimmed bytes")
	}
	var projections int
	for _, r := range a.records() {
		switch {
		case r.Kind == store.KindProjection:
			projections++
		case r.Message.Role == llm.RoleTool && r.Message.Content != big:
			t.Errorf("the transcript's tool result changed")
		}
	}
	if projections != 1 {
		t.Errorf("%d projections recorded, want 1", projections)
	}
}

// records reads the main session's whole transcript, every kind of row.
func (a *approvalsRig) records() []store.Record {
	a.t.Helper()
	e, err := a.db.GetSession(context.Background(), "main", key)
	if err != nil {
		a.t.Fatal(err)
	}
	recs, err := a.db.TranscriptRecords(context.Background(), e.SessionID, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	return recs
}

// checkLedger: the usage ledger has every call the fake model answered,
// once, under its kind (the turns', the compaction summaries', the
// memory flushes'), with the tokens the fake reported.
func (g *windowRig) checkLedger() {
	g.t.Helper()
	_, kinds, err := g.db.Usage(context.Background(), store.UsageQuery{By: store.ByKind})
	if err != nil {
		g.t.Fatal(err)
	}
	got := map[string][2]int64{}
	for _, k := range kinds {
		got[k.Key] = [2]int64{k.Calls, k.Tokens()}
	}
	g.llm.mu.Lock()
	want := maps.Clone(g.llm.ledger)
	g.llm.mu.Unlock()
	if got[store.CallSummary][0] == 0 || got[store.CallMemoryFlush][0] == 0 {
		g.t.Errorf("ledger %v: no summary or memory-flush calls", got)
	}
	if !maps.Equal(got, want) {
		g.t.Errorf("ledger by kind (calls, tokens) %v, the model answered %v", got, want)
	}
}
