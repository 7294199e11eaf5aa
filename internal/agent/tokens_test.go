package agent

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
	"talon/internal/provider"
	"talon/internal/store"
	"talon/internal/tools/sessions"
)

// scripted is a model that gives its answers in order, each with the
// usage it reports; an answer with err fails the call.
type scripted struct {
	mu      sync.Mutex
	answers []scriptedAnswer
}

type scriptedAnswer struct {
	call  string // a tool to call, else the answer is text
	usage provider.Usage
	err   error
}

func (s *scripted) Chat(_ context.Context, _ *provider.Request, _ func(string)) (*provider.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) == 0 {
		return nil, errors.New("scripted: no answer left")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	if a.err != nil {
		return nil, a.err
	}
	r := &provider.Response{Content: "done", FinishReason: provider.FinishStop, Usage: a.usage}
	if a.call != "" {
		r.Content, r.FinishReason = "", provider.FinishToolCalls
		r.ToolCalls = []llm.ToolCall{{ID: "c-" + a.call, Name: a.call, Arguments: "{}"}}
	}
	return r, nil
}

func usage(in, out int) provider.Usage {
	return provider.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
}

// TestTurnTokens: the runner writes each model call's usage to the
// session with the call's commit. After turns with a model that reports
// usage — one call, two calls, a failed second call, none — the session's
// counters are the sums, the last turn's figures are the last that
// reported any, the window is the configured contextWindow, and
// session_status (called by the model, through the policy) shows them.
func TestTurnTokens(t *testing.T) {
	a := newApprovalsRig(t, `{
		agents: {defaults: {model: "local/m"}},
		models: {providers: {local: {baseUrl: "http://127.0.0.1:9/v1", models: [{id: "m", contextWindow: 10000}]}}},
	}`, 0)
	model := &scripted{}
	a.runner.Resolve = func(ref string) (provider.Provider, string, error) {
		if ref != "local/m" {
			t.Errorf("resolving %q, want local/m", ref)
		}
		return model, "m", nil
	}
	type want struct {
		in, out, ctx, window, cumIn, cumOut, cumTotal int64
	}
	turns := []struct {
		name    string
		answers []scriptedAnswer
		fails   bool
		want    want
		status  string // the statusText session_status gave in this turn, if it was called
	}{
		{"one model call", []scriptedAnswer{{usage: usage(100, 10)}}, false,
			want{100, 10, 100, 10000, 100, 10, 110}, ""},
		{"two model calls, session_status between", []scriptedAnswer{{call: "session_status", usage: usage(200, 20)}, {usage: usage(300, 30)}}, false,
			want{500, 50, 300, 10000, 600, 60, 660},
			"Tokens since the last reset: 300 in, 30 out, 330 total. Last turn: 200 in, 20 out. Context: 200/10k (2%). Compactions: 0."},
		{"the second call fails: the first is counted", []scriptedAnswer{{call: "session_status", usage: usage(50, 5)}, {err: errors.New("model down")}}, true,
			want{50, 5, 50, 10000, 650, 65, 715}, ""},
		{"no usage reported: nothing changes", []scriptedAnswer{{call: "session_status"}, {}}, false,
			want{50, 5, 50, 10000, 650, 65, 715},
			"Tokens since the last reset: 650 in, 65 out, 715 total. Last turn: 50 in, 5 out. Context: 50/10k (1%). Compactions: 0."},
	}
	for _, tc := range turns {
		t.Run(tc.name, func(t *testing.T) {
			model.answers = tc.answers
			_, err := a.runner.Run(context.Background(), Request{AgentID: "main", SessionKey: key, Owner: true,
				Input: []llm.Message{{Role: llm.RoleUser, Content: tc.name}}})
			if (err != nil) != tc.fails {
				t.Fatalf("Run: %v, want failure %v", err, tc.fails)
			}
			e, err := a.db.GetSession(context.Background(), "main", key)
			if err != nil {
				t.Fatal(err)
			}
			got := want{e.InputTokens, e.OutputTokens, e.TotalTokens, e.ContextTokens,
				e.CumulativeInputTokens, e.CumulativeOutputTokens, e.CumulativeTotalTokens}
			if got != tc.want {
				t.Errorf("counters %+v, want %+v", got, tc.want)
			}
			if tc.status != "" {
				if st := lastStatus(t, a); st.Text != tc.status {
					t.Errorf("statusText %q\nwant       %q", st.Text, tc.status)
				}
			}
		})
	}

	// What session_status returns in full, after a reset.
	if _, err := a.db.ResetSession(context.Background(), "main", key, a.db.Now()); err != nil {
		t.Fatal(err)
	}
	model.answers = []scriptedAnswer{{call: "session_status"}, {}}
	a.turn("status after the reset")
	st := lastStatus(t, a)
	var tok sessions.StatusTokens
	window := int64(10000)
	tok.Context.Window = &window
	if diff := cmp.Diff(tok, st.Tokens); diff != "" || st.Model != "local/m" || st.Key != key {
		t.Errorf("status after a reset: model %q key %q, tokens (-want +got):\n%s", st.Model, st.Key, diff)
	}
	if want := "No token usage recorded since the session started or was last reset. Context: ?/10k. Compactions: 0."; st.Text != want {
		t.Errorf("statusText %q, want %q", st.Text, want)
	}
}

// lastStatus is the last session_status result in the main transcript.
func lastStatus(t *testing.T, a *approvalsRig) sessions.Status {
	t.Helper()
	msgs := a.transcript()
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == llm.RoleTool && m.Name == "session_status" {
			var st sessions.Status
			if err := json.Unmarshal([]byte(m.Content), &st); err != nil || m.IsError {
				t.Fatalf("session_status result %q: %v", m.Content, err)
			}
			return st
		}
	}
	t.Fatalf("no session_status result in %d messages", len(msgs))
	return sessions.Status{}
}

// TestTurnLedger: every model call that answered is in the usage ledger
// once, with what it was for, its model, its tokens (cache reads and
// writes apart from the rest of the prompt) and its price from
// models.providers.*.models[].cost; a call that failed is not; the
// session row has the turn's cost and the total.
func TestTurnLedger(t *testing.T) {
	a := newApprovalsRig(t, `{
		agents: {defaults: {model: "local/m"}},
		models: {providers: {local: {baseUrl: "http://127.0.0.1:9/v1",
			models: [{id: "m", contextWindow: 10000, cost: {input: 2, output: 10, cacheRead: 0.5, cacheWrite: 4}}]}}},
	}`, 0)
	model := &scripted{}
	a.runner.Resolve = func(string) (provider.Provider, string, error) { return model, "m", nil }
	cached := func(in, out, read, write int) provider.Usage {
		u := usage(in, out)
		u.CacheReadTokens, u.CacheWriteTokens = read, write
		return u
	}
	turns := []struct {
		key     string
		kind    string
		answers []scriptedAnswer
		fails   bool
	}{
		{key, "", []scriptedAnswer{{usage: cached(1000, 100, 600, 200)}}, false},
		{key, store.CallHeartbeat, []scriptedAnswer{{call: "session_status", usage: usage(500, 10)}, {usage: usage(600, 20)}}, false},
		{key, store.CallCron, []scriptedAnswer{{call: "session_status", usage: usage(100, 1)}, {err: errors.New("model down")}}, true},
		{"agent:main:subagent:s1", "", []scriptedAnswer{{}}, false},
	}
	for i, tc := range turns {
		model.answers = tc.answers
		_, err := a.runner.Run(context.Background(), Request{AgentID: "main", SessionKey: tc.key, Owner: true, Kind: tc.kind,
			Input: []llm.Message{{Role: llm.RoleUser, Content: "go"}}})
		if (err != nil) != tc.fails {
			t.Fatalf("turn %d: %v, want failure %v", i, err, tc.fails)
		}
	}
	ctx := context.Background()
	total, kinds, err := a.db.Usage(ctx, store.UsageQuery{By: store.ByKind})
	if err != nil {
		t.Fatal(err)
	}
	// turn: 200 uncached in ×2 + 100 out ×10 + 600 read ×0.5 + 200 written ×4 = 2500 µ$.
	want := []store.UsageGroup{
		{Key: "cron", UsageTotals: store.UsageTotals{Calls: 1, Input: 100, Output: 1, Cost: 210}},
		{Key: "heartbeat", UsageTotals: store.UsageTotals{Calls: 2, Input: 1100, Output: 30, Cost: 2500}},
		{Key: "subagent", UsageTotals: store.UsageTotals{Calls: 1}},
		{Key: "turn", UsageTotals: store.UsageTotals{Calls: 1, Input: 200, Output: 100, CacheRead: 600, CacheWrite: 200, Cost: 2500}},
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("ledger by kind (-want +got):\n%s", diff)
	}
	if total.Calls != 5 || total.Cost != 5210 {
		t.Errorf("totals %+v, want 5 calls costing 5210", total)
	}
	if _, groups, err := a.db.Usage(ctx, store.UsageQuery{By: store.ByModel}); err != nil || len(groups) != 1 || groups[0].Key != "local/m" {
		t.Errorf("ledger by model: %+v, %v; want local/m alone", groups, err)
	}
	e, err := a.db.GetSession(ctx, "main", key)
	if err != nil {
		t.Fatal(err)
	}
	if e.EstimatedCostUsd != 0.00021 || e.CumulativeCostUsd != 0.00521 || e.CumulativeCacheReadTokens != 600 {
		t.Errorf("session: estimatedCostUsd %v cumulativeCostUsd %v cumulativeCacheReadTokens %d; want 0.00021, 0.00521, 600",
			e.EstimatedCostUsd, e.CumulativeCostUsd, e.CumulativeCacheReadTokens)
	}
}
