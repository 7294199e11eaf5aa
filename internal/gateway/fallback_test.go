package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"talon/protocol"
)

// keyedLLM is a fake OpenAI-compatible provider on loopback that answers
// each call by its key: status 200 with text, or an OpenAI error asking
// for an instant retry (so the client's retries take no time); a key it
// does not know gets a 500. It counts the calls per key.
type keyedLLM struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
	// answer maps "Bearer KEY" ("" for none) to a status and text.
	answer map[string]keyedAnswer
}

type keyedAnswer struct {
	status int
	text   string
}

func newKeyedLLM(t *testing.T, answer map[string]keyedAnswer) *keyedLLM {
	l := &keyedLLM{calls: map[string]int{}, answer: answer}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		l.mu.Lock()
		l.calls[auth]++
		a, ok := l.answer[auth]
		l.mu.Unlock()
		if !ok {
			a = keyedAnswer{status: 500, text: "unknown key"}
		}
		w.Header().Set("Content-Type", "application/json")
		if a.status != http.StatusOK {
			w.Header().Set("Retry-After-Ms", "1")
			w.WriteHeader(a.status)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"x"}}`, a.text)
			return
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, a.text)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *keyedLLM) count(auth string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[auth]
}

func (l *keyedLLM) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		n += c
	}
	return n
}

// postAnswered posts a chat completion and returns the model its
// X-OpenClaw-Model header names (a streamed answer's trailer), with the
// body's model echo (a streamed answer's first chunk's).
func postAnswered(t *testing.T, ts *testServer, body string, stream bool) (answered, echo string) {
	t.Helper()
	resp, err := http.Post(ts.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Model string `json:"model"`
	}
	if !stream {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.Header.Get("X-OpenClaw-Model"), out.Model
	}
	raw, err := io.ReadAll(resp.Body) // the trailer comes after the body
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(string(raw), "data: "), "\n")
	if err := json.Unmarshal([]byte(first), &out); err != nil {
		t.Fatalf("first chunk %q: %v", first, err)
	}
	if h := resp.Header.Get("X-OpenClaw-Model"); h != "" {
		t.Errorf("a streamed answer's header names %q before the model answered", h)
	}
	return resp.Trailer.Get("X-OpenClaw-Model"), out.Model
}

// TestFallbackTurns: a turn whose primary fails is answered by the
// fallback and names it, streamed or not; the next turn skips the dead
// primary (its cool-down); a timeout falls back too; when every model
// fails the client is told each attempt.
func TestFallbackTurns(t *testing.T) {
	tests := []struct {
		name     string
		primary  string // provider block of "dead"
		fallback map[string]keyedAnswer
		stream   bool
		status   int
		want     []string // in the answer's content or error
	}{
		{name: "a 500 falls back", primary: `{baseUrl: "%s/v1"}`, fallback: map[string]keyedAnswer{"": {200, "fallback here"}},
			status: 200, want: []string{"fallback here"}},
		{name: "a 500 falls back, streamed", primary: `{baseUrl: "%s/v1"}`, fallback: map[string]keyedAnswer{"": {200, "fallback here"}},
			stream: true, status: 200, want: []string{"fallback here"}},
		{name: "a timeout falls back", primary: `{baseUrl: "%s/v1", timeoutSeconds: 0.2}`, fallback: map[string]keyedAnswer{"": {200, "fallback here"}},
			status: 200, want: []string{"fallback here"}},
		{name: "all failing lists each attempt", primary: `{baseUrl: "%s/v1"}`, fallback: map[string]keyedAnswer{"": {503, "spare is down too"}},
			status: http.StatusBadGateway, want: []string{"no model answered (2 tried)", "dead/m: server_error: dead: 500", "primary is down",
				"spare/m: server_error: spare: 503", "spare is down too"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hang := strings.Contains(tt.primary, "timeoutSeconds")
			dead := newKeyedLLM(t, map[string]keyedAnswer{"": {500, "primary is down"}})
			if hang {
				dead.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					dead.mu.Lock()
					dead.calls[""]++
					dead.mu.Unlock()
					// Read the body: the server notices the client left
					// only once it reads past the request.
					io.Copy(io.Discard, r.Body)
					<-r.Context().Done()
				})
			}
			spare := newKeyedLLM(t, tt.fallback)
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{models: {providers: {dead: `+fmt.Sprintf(tt.primary, dead.srv.URL)+
				`, spare: {baseUrl: "`+spare.srv.URL+`/v1"}}}, agents: {defaults: {model: {primary: "dead/m", fallbacks: ["spare/m"]}}}}`))
			ts := startServer(t, dir, nil)

			rep := ts.post(nil, chatBody("u", "hello", tt.stream))
			if rep.status != tt.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tt.status, rep.body)
			}
			for _, w := range tt.want {
				if !strings.Contains(rep.content+rep.body, w) {
					t.Errorf("answer %q does not say %q", rep.body, w)
				}
			}
			if tt.status != http.StatusOK {
				return
			}
			before := dead.total()
			if before == 0 {
				t.Fatal("the primary was never called")
			}
			answered, echo := postAnswered(t, ts, chatBody("u", "again", tt.stream), tt.stream)
			if answered != "spare/m" || echo != "openclaw" || dead.total() != before {
				t.Errorf("next turn: answered by %q (echo %q), %d more calls to the dead primary; want spare/m, the dead primary skipped while it cools down",
					answered, echo, dead.total()-before)
			}
		})
	}
}

// TestFallbackStrictOverride: a model the caller chooses (the
// X-OpenClaw-Model header) is strict: its failure is the turn's, and the
// configured fallback is not called.
func TestFallbackStrictOverride(t *testing.T) {
	dead := newKeyedLLM(t, map[string]keyedAnswer{"": {500, "primary is down"}})
	spare := newKeyedLLM(t, map[string]keyedAnswer{"": {200, "fallback here"}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{models: {providers: {dead: {baseUrl: "`+dead.srv.URL+`/v1"},
		spare: {baseUrl: "`+spare.srv.URL+`/v1"}}}, agents: {defaults: {model: {primary: "spare/m", fallbacks: ["spare/other"]}}}}`))
	ts := startServer(t, dir, nil)
	rep := ts.post(map[string]string{"X-OpenClaw-Model": "dead/m"}, chatBody("u", "hello", false))
	if rep.status != http.StatusBadGateway || spare.total() != 0 || !strings.Contains(rep.body, "primary is down") {
		t.Fatalf("status %d body %s, fallback calls %d; want the chosen model's failure alone", rep.status, rep.body, spare.total())
	}
}

// TestFallbackKeyRotation: auth profiles give a provider two keys; the
// first rate-limited, the second answers, and the next turn goes
// straight to the second while the first cools down.
func TestFallbackKeyRotation(t *testing.T) {
	llm := newKeyedLLM(t, map[string]keyedAnswer{"Bearer k-one": {429, "rate limit reached"}, "Bearer k-two": {200, "second key here"}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{models: {providers: {pool: {baseUrl: "`+llm.srv.URL+`/v1"}}},
		auth: {profiles: {"pool:one": {provider: "pool", mode: "api_key"}, "pool:two": {provider: "pool", mode: "api_key"}},
			order: {pool: ["pool:one", "pool:two"]}},
		agents: {defaults: {model: "pool/m"}}}`))
	ts := startServer(t, dir, map[string]string{"POOL_API_KEY_ONE": "k-one", "POOL_API_KEY_TWO": "k-two"})
	rep := ts.post(nil, chatBody("u", "hello", false))
	if rep.status != http.StatusOK || rep.content != "second key here" {
		t.Fatalf("status %d body %s; want the second key's answer", rep.status, rep.body)
	}
	one := llm.count("Bearer k-one")
	if one == 0 {
		t.Fatal("the first key was never tried")
	}
	rep = ts.post(nil, chatBody("u", "again", false))
	if rep.status != http.StatusOK || llm.count("Bearer k-one") != one || llm.count("Bearer k-two") != 2 {
		t.Errorf("next turn: %d %q, k-one %d more calls, k-two %d calls; want k-one skipped",
			rep.status, rep.content, llm.count("Bearer k-one")-one, llm.count("Bearer k-two"))
	}
}

// TestFallbackTenant: a tenant's fallbacks are held to the operator's
// ceiling as its primary is (a provider at a private address is taken
// out of its config, so the fallback naming it does not resolve, is
// never reached, and the chain says so), and its providers' failures
// cool down its own chain only: the operator's turns through the same
// provider and address still call it.
func TestFallbackTenant(t *testing.T) {
	open := newKeyedLLM(t, map[string]keyedAnswer{"": {500, "shared is down"}})
	private := newKeyedLLM(t, map[string]keyedAnswer{"": {200, "private answer"}})
	openAddr := strings.TrimPrefix(open.srv.URL, "http://")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway: {auth: {token: "root"}}, tenants: {network: {allowHosts: ["`+openAddr+`"]}},
		models: {providers: {shared: {baseUrl: "`+open.srv.URL+`/v1"}}}, agents: {defaults: {model: "shared/m"}}}`))
	writeFile(t, filepath.Join(dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme"}},
		models: {providers: {shared: {baseUrl: "`+open.srv.URL+`/v1"}, inside: {baseUrl: "`+private.srv.URL+`/v1"}}},
		agents: {defaults: {model: {primary: "shared/m", fallbacks: ["inside/m"]}}}}`))
	ts := startServer(t, dir, nil)
	tenant := map[string]string{"Authorization": "Bearer acme", "X-Tenant-ID": "acme", "Content-Type": "application/json"}
	rep := ts.post(tenant, chatBody("u", "hello", false))
	if rep.status != http.StatusBadGateway || private.total() != 0 {
		t.Fatalf("status %d body %s, %d calls to the private address; want it refused", rep.status, rep.body, private.total())
	}
	for _, w := range []string{"shared/m: server_error", `inside/m: unresolved: model configuration error: resolving model \"inside/m\": unknown provider`} {
		if !strings.Contains(rep.body, w) {
			t.Errorf("the error %s does not say %q", rep.body, w)
		}
	}
	before := open.total()
	root := map[string]string{"Authorization": "Bearer root", "Content-Type": "application/json"}
	if rep := ts.post(root, chatBody("u", "hello", false)); rep.status != http.StatusBadGateway || open.total() == before {
		t.Errorf("the operator's turn: %d, %d calls; want the provider called, not skipped for the tenant's cool-down",
			rep.status, open.total()-before)
	}
}

// TestFallbackChatFinal: over WS, the final chat event of a turn the
// fallback answered names it (message.provider and message.model), and
// a cron job's own fallbacks are its chain.
func TestFallbackChatFinal(t *testing.T) {
	dead := newKeyedLLM(t, map[string]keyedAnswer{"": {500, "primary is down"}})
	spare := newKeyedLLM(t, map[string]keyedAnswer{"": {200, "fallback here"}})
	_, url := startWS(t, `,models: {providers: {dead: {baseUrl: "`+dead.srv.URL+`/v1"}, spare: {baseUrl: "`+spare.srv.URL+`/v1"}}},
		agents: {defaults: {model: {primary: "dead/m", fallbacks: ["spare/m"]}}}`)
	cl := dialWS(t, url, protocol.ScopeWrite)
	callOK(t, cl, "chat.send", map[string]any{"sessionKey": "main", "message": "hello", "idempotencyKey": "run-fb"})
	var ev runEvents
	watch(t, cl, "run-fb", &ev, (*runEvents).ended)
	end := ev.terminal()
	if end.State != "final" || end.text() != "fallback here" || end.Message.Provider != "spare" || end.Message.Model != "m" {
		t.Fatalf("final event %+v (message %+v); want the fallback's answer naming spare/m", end, end.Message)
	}

	// A cron job's model with its own fallbacks: the agent's chain does
	// not apply, the job's does, and the run names the model that
	// answered.
	admin := dialWS(t, url)
	before := spare.total()
	job := mustCall[map[string]any](t, admin, "cron.add", map[string]any{"name": "fallback job",
		"schedule": map[string]any{"kind": "cron", "expr": "0 * * * *"},
		"payload":  map[string]any{"kind": "agentTurn", "message": "report", "model": "dead/other", "fallbacks": []string{"spare/job"}},
		"delivery": map[string]any{"mode": "none"}})
	id, _ := job["id"].(string)
	mustCall[map[string]any](t, admin, "cron.run", map[string]any{"jobId": id})
	type runs struct {
		Entries []struct{ Status, Model, Provider, Summary string } `json:"entries"`
	}
	var last runs
	waitFor(t, "the cron run", func() bool {
		last = mustCall[runs](t, admin, "cron.runs", map[string]any{"id": id})
		return len(last.Entries) == 1
	})
	if e := last.Entries[0]; e.Status != "ok" || e.Model != "spare/job" || e.Provider != "spare" || e.Summary != "fallback here" || spare.total() != before+1 {
		t.Errorf("cron run %+v, %d calls to the fallback; want spare/job to answer", last.Entries, spare.total()-before)
	}
}
