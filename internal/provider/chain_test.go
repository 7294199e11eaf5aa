package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
	"talon/internal/netguard"
)

func TestModelChain(t *testing.T) {
	const cfg = `{agents: {defaults: {model: {primary: "a/p", fallbacks: ["b/f1", "c/f2"]}},
		list: [{id: "main"},
			{id: "own", model: "d/own"},
			{id: "optin", model: {primary: "d/own", fallbacks: ["e/x"]}},
			{id: "inherit", model: {fallbacks: ["e/x"]}},
			{id: "strict", model: {fallbacks: []}},
			{id: "dups", model: {primary: "A/p", fallbacks: ["a/p", "b/f1", " b/f1 "]}}]}}`
	c := parseConfig(t, cfg)
	tests := []struct {
		name, agent string
		choice      Choice
		want        []string
	}{
		{"defaults", "main", Choice{}, []string{"a/p", "b/f1", "c/f2"}},
		{"an agent's own primary is strict", "own", Choice{}, []string{"d/own"}},
		{"an agent opts in with its fallbacks", "optin", Choice{}, []string{"d/own", "e/x"}},
		{"fallbacks alone keep the shared primary", "inherit", Choice{}, []string{"a/p", "e/x"}},
		{"fallbacks [] are strict", "strict", Choice{}, []string{"a/p"}},
		{"duplicates are tried once", "dups", Choice{}, []string{"A/p", "b/f1"}},
		{"a pinned model is strict", "main", Choice{Pinned: "z/pin"}, []string{"z/pin"}},
		{"a pinned model with explicit fallbacks", "main", Choice{Pinned: "z/pin", Fallbacks: []string{"y/f"}}, []string{"z/pin", "y/f"}},
		{"a job's model takes the configured fallbacks", "main", Choice{Job: "z/job"}, []string{"z/job", "b/f1", "c/f2"}},
		{"a job's own fallbacks replace them", "main", Choice{Job: "z/job", Fallbacks: []string{"y/f"}}, []string{"z/job", "y/f"}},
		{"a job's fallbacks [] are strict", "main", Choice{Job: "z/job", Fallbacks: []string{}}, []string{"z/job"}},
		{"a job without a model, with fallbacks", "main", Choice{Fallbacks: []string{"y/f"}}, []string{"a/p", "y/f"}},
		{"no config", "main", Choice{}, []string{"inspect"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := c
			if tt.name == "no config" {
				cc = parseConfig(t, `{}`)
			}
			if diff := cmp.Diff(tt.want, ModelChain(cc, tt.agent, tt.choice)); diff != "" {
				t.Errorf("chain (-want +got):\n%s", diff)
			}
		})
	}
	long := make([]string, 40)
	for i := range long {
		long[i] = fmt.Sprintf("p/m%d", i)
	}
	if got := ModelChain(c, "main", Choice{Pinned: "z/pin", Fallbacks: long}); len(got) != MaxChain {
		t.Errorf("a chain of 41 models is cut to %d, got %d", MaxChain, len(got))
	}
}

func TestClassify(t *testing.T) {
	overflow := func(err error) bool { return strings.Contains(err.Error(), "context length") }
	tests := []struct {
		err  error
		want Reason
	}{
		{&Error{Status: 500, Message: "boom"}, ReasonServer},
		{&Error{Status: 503, Message: "the model is overloaded"}, ReasonOverloaded},
		{&Error{Status: 529, Type: "overloaded_error"}, ReasonOverloaded},
		{&Error{Status: 504}, ReasonTimeout},
		{&Error{Status: 429, Message: "slow down"}, ReasonRateLimit},
		{&Error{Status: 401, Message: "invalid api key"}, ReasonAuth},
		{&Error{Status: 403, Message: "your credit balance is too low"}, ReasonBilling},
		{&Error{Status: 402, Message: "weekly usage limit reached: rate limit"}, ReasonRateLimit},
		{&Error{Status: 404, Type: "model_not_found"}, ReasonModelNotFound},
		{&Error{Status: 400, Message: "bad tool schema"}, ReasonBadRequest},
		{&Error{Status: 400, Message: "maximum context length exceeded"}, ReasonOverflow},
		{&Error{Message: "request timed out after 1s"}, ReasonTimeout},
		{&Error{Message: "stream idle for longer than 2m0s"}, ReasonTimeout},
		{&Error{Message: "stream ended early: unexpected EOF"}, ReasonNetwork},
		{&ResolveError{Message: "no key"}, ReasonUnresolved},
		{errors.New("malformed"), ReasonOther},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := Classify(context.Background(), tt.err, overflow); got != tt.want {
				t.Errorf("Classify = %s, want %s", got, tt.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := Classify(ctx, &Error{Status: 500}, nil); got != ReasonCanceled {
		t.Errorf("a cancelled call is %s, want %s", got, ReasonCanceled)
	}
}

// okReply is an OpenAI chat.completion answering text.
func okReply(text string) http.HandlerFunc {
	return jsonReply(200, fmt.Sprintf(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, text))
}

// fail answers with an OpenAI error of status, asking for an instant
// retry so the client's retries take no time.
func fail(status int, msg string) http.HandlerFunc {
	return jsonReply(status, fmt.Sprintf(`{"error":{"message":%q,"type":"x"}}`, msg), "Retry-After-Ms", "1")
}

// clock is a fake clock for cool-downs.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// chainFor builds a chain over loopback providers: refs name servers by
// provider id ("a/m" is servers["a"]), keys by profile.
func chainFor(servers map[string]*fakeServer, cd *Cooldowns, keys map[string][]string, refs ...string) *Chain {
	resolve := func(ref string) ([]Target, error) {
		id, model, _ := strings.Cut(ref, "/")
		srv := servers[id]
		if srv == nil {
			return nil, &ResolveError{Ref: ref, Message: "resolving model " + ref + ": unknown provider " + id}
		}
		ks := keys[id]
		if len(ks) == 0 {
			ks = []string{""}
		}
		var out []Target
		for i, k := range ks {
			profile := ""
			if len(keys[id]) > 0 {
				profile = fmt.Sprintf("%s:k%d", id, i)
			}
			out = append(out, Target{Provider: NewOpenAI(OpenAIOptions{Name: id, BaseURL: srv.URL + "/v1", APIKey: k, Timeout: 300 * time.Millisecond, MaxRetries: 1}),
				Model: model, ProviderID: id, Profile: profile})
		}
		return out, nil
	}
	windows := map[string]int64{"small/m": 8000, "big/m": 200000}
	return NewChain(Failover{Resolve: resolve, Cooldowns: cd,
		Overflow: func(err error) bool { return strings.Contains(err.Error(), "context length") },
		Window:   func(ref string) int64 { return windows[ref] }}, refs)
}

func ask(c *Chain) (string, string, error) {
	res, ref, err := c.Chat(context.Background(), &Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		return "", "", err
	}
	return res.Content, ref, nil
}

func TestChainFallsBack(t *testing.T) {
	tests := []struct {
		name     string
		primary  http.HandlerFunc
		wantText string // "" when the chain fails
		wantRef  string
		wantErr  string
		calls    int // of the fallback
	}{
		{"a 500 falls back", fail(500, "internal"), "from fallback", "b/m", "", 1},
		{"a 429 after retries falls back", fail(429, "rate limited"), "from fallback", "b/m", "", 1},
		{"an auth failure falls back", fail(401, "bad key"), "from fallback", "b/m", "", 1},
		{"a missing model falls back", fail(404, "no such model"), "from fallback", "b/m", "", 1},
		{"a timeout falls back", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "from fallback", "b/m", "", 1},
		{"a bad request does not", fail(400, "bad schema"), "", "", "400", 0},
		{"a refusal is an answer", jsonReply(200, `{"choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":"no"},"finish_reason":"content_filter"}]}`), "no", "a/m", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newFakeServer(t, tt.primary), newFakeServer(t, okReply("from fallback"))
			c := chainFor(map[string]*fakeServer{"a": a, "b": b}, nil, nil, "a/m", "b/m")
			text, ref, err := ask(c)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case text != tt.wantText || ref != tt.wantRef:
				t.Errorf("answer %q from %q, want %q from %q", text, ref, tt.wantText, tt.wantRef)
			}
			if n := len(b.requests()); n != tt.calls {
				t.Errorf("the fallback got %d calls, want %d", n, tt.calls)
			}
			if err == nil && c.Ref() != tt.wantRef {
				t.Errorf("Ref() = %q after the answer, want %q", c.Ref(), tt.wantRef)
			}
		})
	}
}

func TestChainAllFail(t *testing.T) {
	a, b := newFakeServer(t, fail(500, "a is down")), newFakeServer(t, fail(503, "b is down"))
	c := chainFor(map[string]*fakeServer{"a": a, "b": b}, nil, nil, "a/m", "nope/m", "b/m")
	_, _, err := ask(c)
	var x *ExhaustedError
	if !errors.As(err, &x) {
		t.Fatalf("err = %v, want an *ExhaustedError", err)
	}
	msg := err.Error()
	for _, want := range []string{"no model answered (3 tried)", "a/m: server_error: a: 500", "a is down",
		"nope/m: unresolved: resolving model nope/m: unknown provider nope", "b/m: server_error: b: 503", "b is down"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Provider != "b" {
		t.Errorf("errors.As finds %+v, want the last failure (b's)", pe)
	}
}

func TestChainStreamedTextIsNotRetried(t *testing.T) {
	a := newFakeServer(t, sseThenCut(data(`{"choices":[{"index":0,"delta":{"content":"half "}}]}`)))
	b := newFakeServer(t, okReply("from fallback"))
	c := chainFor(map[string]*fakeServer{"a": a, "b": b}, nil, nil, "a/m", "b/m")
	var got []string
	_, _, err := c.Chat(context.Background(), &Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
		func(s string) { got = append(got, s) })
	if err == nil || len(b.requests()) != 0 {
		t.Fatalf("err = %v, fallback calls %d: a call that streamed text must fail, not fall back", err, len(b.requests()))
	}
	if diff := cmp.Diff([]string{"half "}, got); diff != "" {
		t.Errorf("streamed (-want +got):\n%s", diff)
	}
}

func TestChainOverflowMovesToALargerWindow(t *testing.T) {
	overflow := fail(400, "This model's maximum context length is 8000 tokens")
	tests := []struct {
		name    string
		refs    []string
		wantRef string
	}{
		{"to a larger window, past a model that is not larger", []string{"small/m", "same/m", "big/m"}, "big/m"},
		{"not when none is larger", []string{"small/m", "same/m"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			small, same, big := newFakeServer(t, overflow), newFakeServer(t, okReply("same")), newFakeServer(t, okReply("big"))
			c := chainFor(map[string]*fakeServer{"small": small, "same": same, "big": big}, nil, nil, tt.refs...)
			_, ref, err := ask(c)
			if tt.wantRef == "" {
				if err == nil || !strings.Contains(err.Error(), "context length") || len(same.requests()) != 0 {
					t.Fatalf("err = %v (same called %d times), want the overflow back for compaction", err, len(same.requests()))
				}
				return
			}
			if err != nil || ref != tt.wantRef || len(same.requests()) != 0 {
				t.Fatalf("answer from %q, err %v, same called %d times; want %q", ref, err, len(same.requests()), tt.wantRef)
			}
		})
	}
}

func TestChainCooldown(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	cd := NewCooldowns(clk.now)
	up := true
	var mu sync.Mutex
	a := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := up
		mu.Unlock()
		if ok {
			okReply("primary")(w, r)
			return
		}
		fail(500, "down")(w, r)
	})
	b := newFakeServer(t, okReply("fallback"))
	servers := map[string]*fakeServer{"a": a, "b": b}
	turn := func() string {
		t.Helper()
		_, ref, err := ask(chainFor(servers, cd, nil, "a/m", "b/m"))
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	mu.Lock()
	up = false
	mu.Unlock()
	if ref := turn(); ref != "b/m" {
		t.Fatalf("first turn answered by %s, want the fallback", ref)
	}
	calls := len(a.requests()) // the client's tries
	if ref := turn(); ref != "b/m" || len(a.requests()) != calls {
		t.Fatalf("second turn: %s answered, the dead primary got %d more calls; want it skipped", ref, len(a.requests())-calls)
	}
	mu.Lock()
	up = true
	mu.Unlock()
	clk.add(29 * time.Second)
	if turn(); len(a.requests()) != calls {
		t.Fatal("the primary was tried before its 30 s cool-down ended")
	}
	clk.add(2 * time.Second)
	if ref := turn(); ref != "a/m" {
		t.Fatalf("after the cool-down %s answered, want the recovered primary", ref)
	}
	if _, _, cooling := cd.until(coolKey("a", "")); cooling {
		t.Error("a success does not clear the cool-down")
	}
}

func TestChainProbesWhenAllCool(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	cd := NewCooldowns(clk.now)
	cd.fail(coolKey("a", ""), ReasonServer, 0)
	clk.add(10 * time.Second)
	cd.fail(coolKey("b", ""), ReasonServer, 0)
	a, b := newFakeServer(t, okReply("a")), newFakeServer(t, okReply("b"))
	_, ref, err := ask(chainFor(map[string]*fakeServer{"a": a, "b": b}, cd, nil, "b/m", "a/m"))
	if err != nil || ref != "a/m" {
		t.Fatalf("answer from %q, err %v; want a probe of the one cooling down least (a)", ref, err)
	}
}

func TestChainRotatesKeys(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	cd := NewCooldowns(clk.now)
	a := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer k1":
			fail(429, "rate limit reached for k1")(w, r)
		case "Bearer k2":
			okReply("k2 answered")(w, r)
		default:
			fail(401, "unknown key")(w, r)
		}
	})
	servers := map[string]*fakeServer{"a": a}
	keys := map[string][]string{"a": {"k1", "k2"}}
	text, _, err := ask(chainFor(servers, cd, keys, "a/m"))
	if err != nil || text != "k2 answered" {
		t.Fatalf("answer %q, err %v; want the second key's", text, err)
	}
	before := len(a.requests())
	if text, _, err := ask(chainFor(servers, cd, keys, "a/m")); err != nil || text != "k2 answered" || len(a.requests()) != before+1 {
		t.Fatalf("next turn: %q, %v, %d calls; want the rate-limited key skipped", text, err, len(a.requests())-before)
	}
	for _, r := range a.requests()[before:] {
		if r.Header.Get("Authorization") != "Bearer k2" {
			t.Errorf("a call with %q while k1 cools down", r.Header.Get("Authorization"))
		}
	}
}

func TestCooldownSteps(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	cd := NewCooldowns(clk.now)
	start := clk.now()
	var got []time.Duration
	for range 4 {
		cd.fail("k", ReasonServer, 0)
		until, _, _ := cd.until("k")
		got = append(got, until.Sub(clk.now()))
	}
	if diff := cmp.Diff([]time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 5 * time.Minute}, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	clk.t = start.Add(2 * time.Hour)
	cd.fail("k", ReasonServer, 2*time.Minute)
	if until, _, _ := cd.until("k"); until.Sub(clk.now()) != 2*time.Minute {
		t.Errorf("after an hour without failures, with Retry-After 2m: %s, want 2m", until.Sub(clk.now()))
	}
	for i := range maxCooling + 10 {
		cd.fail(fmt.Sprint(i), ReasonServer, 0)
	}
	if n := len(cd.m); n > maxCooling {
		t.Errorf("%d entries kept, want at most %d", n, maxCooling)
	}
}

// TestChainGuardedFallback: a fallback resolved for a tenant connects
// through netguard like its primary; one at a private address is
// refused before any byte is sent, listed as blocked, and the chain
// goes on to the next.
func TestChainGuardedFallback(t *testing.T) {
	inside, b := newFakeServer(t, okReply("private")), newFakeServer(t, okReply("public"))
	cfg := parseConfig(t, `{models: {providers: {inside: {baseUrl: "`+inside.URL+`/v1"}, b: {baseUrl: "`+b.URL+`/v1"}}}}`)
	ap := netip.MustParseAddrPort(strings.TrimPrefix(b.URL, "http://"))
	opts := Options{Env: func(string) string { return "" }, Guard: &netguard.Options{Allow: []netip.AddrPort{ap}}}
	c := NewChain(Failover{Resolve: func(ref string) ([]Target, error) { return ResolveTargets(cfg, ref, opts) }}, []string{"inside/m", "b/m"})
	_, _, err := ask(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(inside.requests()) != 0 || c.Ref() != "b/m" {
		t.Fatalf("the private address got %d calls, %s answered; want it refused and b to answer", len(inside.requests()), c.Ref())
	}
	if got := Classify(context.Background(), func() error {
		_, err := c.f.Resolve("inside/m")
		if err != nil {
			return err
		}
		ts, _ := c.f.Resolve("inside/m")
		_, err = ts[0].Provider.Chat(context.Background(), &Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, nil)
		return err
	}(), nil); got != ReasonBlocked {
		t.Errorf("a refused address is %s, want %s", got, ReasonBlocked)
	}
}
