package agent

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"talon/internal/tools"
)

// TestWebSearchTurn: the model calls web_search through the agent loop
// (inspect's "/call"), the run's config and the tenant's key reach the
// tool, and Brave's answer comes back as the tool result; a sandboxed
// session is not offered it unless tools.sandbox.tools.allow names it,
// as OpenClaw's sandbox default allow list leaves it out.
func TestWebSearchTurn(t *testing.T) {
	var calls atomic.Int32
	brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/res/v1/web/search" || r.Header.Get("X-Subscription-Token") != "tenant-brave-key" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"type":"search","web":{"type":"search","results":[{"title":"Result for %s","url":"https://example.com/a","description":"about <strong>it</strong>"}]}}`,
			r.URL.Query().Get("q"))
	}))
	defer brave.Close()
	base := `"tools":{"network":{"allowLoopback":true}%s},"plugins":{"entries":{"brave":{"config":{"webSearch":{"baseUrl":"` + brave.URL + `"}}}}}`
	tests := []struct {
		name      string
		cfg       string
		want      []string
		wantCalls int32
	}{
		{"unsandboxed", `{` + fmt.Sprintf(base, "") + `}`,
			[]string{`"kind":"results"`, `"provider":"brave"`, "Result for talon gateway", `"url":"https://example.com/a"`}, 1},
		{"sandboxed, not allowed there", `{` + fmt.Sprintf(base, "") + `,"agents":{"defaults":{"sandbox":{"mode":"all","backend":"bwrap"}}}}`,
			[]string{`tool "web_search" is not available to this agent`}, 0},
		{"sandboxed and allowed", `{` + fmt.Sprintf(base, `,"sandbox":{"tools":{"allow":["group:web"]}}`) + `,"agents":{"defaults":{"sandbox":{"mode":"all","backend":"bwrap"}}}}`,
			[]string{`"kind":"results"`, "Result for talon gateway"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			a := newApprovalsRig(t, tt.cfg, 0)
			a.runner.Outbound = tools.Outbound{Env: func(k string) string {
				return map[string]string{"BRAVE_API_KEY": "tenant-brave-key"}[k]
			}}
			answer := a.turn(`/call web_search {"query":"talon gateway","count":1}`)
			for _, w := range tt.want {
				if !strings.Contains(answer, w) {
					t.Errorf("answer lacks %q:\n%s", w, answer)
				}
			}
			if strings.Contains(answer, "tenant-brave-key") {
				t.Error("the key is in the answer")
			}
			if calls.Load() != tt.wantCalls {
				t.Errorf("Brave was called %d times, want %d", calls.Load(), tt.wantCalls)
			}
		})
	}
}
