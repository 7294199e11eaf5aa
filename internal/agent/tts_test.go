package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"talon/internal/sandbox"
)

// TestTTSTool runs the tts tool through the agent loop with the inspect
// model (/call tts) against a loopback OpenAI speech API: on the host
// the audio lands in the agent's workspace; in a bwrap sandbox with its
// own workspace it lands there, where the sandbox's commands read it;
// with a read-only workspace the tool refuses before any request.
func TestTTSTool(t *testing.T) {
	var calls atomic.Int32
	frame := make([]byte, 417) // a silent MPEG-1 Layer III frame
	copy(frame, []byte{0xFF, 0xFB, 0x90, 0x64})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var body struct {
			Input  string `json:"input"`
			Format string `json:"response_format"`
		}
		raw, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/audio/speech" || r.Header.Get("Authorization") != "Bearer sk-test" || json.Unmarshal(raw, &body) != nil ||
			body.Input != "Good morning." || body.Format != "mp3" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Write(frame)
	}))
	t.Cleanup(api.Close)
	base := `tools: {network: {allowLoopback: true}, sandbox: {tools: {allow: ["tts", "exec"]}}},
		tts: {providers: {openai: {baseUrl: "` + api.URL + `/v1", apiKey: "sk-test"}}}`
	fileRE := regexp.MustCompile(`\[audio: (tts/\d{4}-\d\d-\d\d/speech-\d{6}\.mp3) \(openai, audio/mpeg, 417 B\)\]`)

	cases := []struct {
		name    string
		sandbox string // agents.defaults.sandbox; "" for none
		refused string // in the answer when the tool refuses
	}{
		{name: "host"},
		{name: "bwrap, own workspace", sandbox: `{mode: "all", backend: "bwrap"}`},
		{name: "bwrap, read-only workspace", sandbox: `{mode: "all", backend: "bwrap", workspaceAccess: "ro"}`,
			refused: `tts: the workspace is read-only in this sandbox (workspaceAccess "ro")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.sandbox != "" {
				if err := requireBwrap(t); err != nil {
					t.Skip(err)
				}
			}
			calls.Store(0)
			cfg := `{` + base + `}`
			if c.sandbox != "" {
				cfg = `{agents: {defaults: {sandbox: ` + c.sandbox + `}}, ` + base + `}`
			}
			a := newApprovalsRig(t, cfg, 0)
			answer := a.turn(`/call tts {"text":"Good morning."}`)
			if c.refused != "" {
				if !strings.Contains(answer, c.refused) || calls.Load() != 0 {
					t.Fatalf("answer %q after %d requests, want %q and none", answer, calls.Load(), c.refused)
				}
				return
			}
			m := fileRE.FindStringSubmatch(answer)
			if !strings.HasPrefix(answer, "(spoken) Good morning.") || m == nil || calls.Load() != 1 {
				t.Fatalf("answer %q after %d requests", answer, calls.Load())
			}
			plan, err := sandbox.Resolve(a.runner.Config, a.state, "main", key)
			if err != nil {
				t.Fatal(err)
			}
			dir := plan.AgentWorkspace
			if plan.Sandboxed {
				dir = plan.Spec.Root
				// The sandbox's own commands see the file where the
				// tool said it is.
				args, _ := json.Marshal(map[string]string{"command": "wc -c < " + m[1]})
				if out := a.turn("/call exec " + string(args)); !strings.Contains(out, "417") {
					t.Errorf("wc in the sandbox: %q", out)
				}
				if _, err := os.Stat(filepath.Join(plan.AgentWorkspace, m[1])); err == nil {
					t.Error("the sandbox's audio is in the agent's own workspace too")
				}
			}
			if b, err := os.ReadFile(filepath.Join(dir, m[1])); err != nil || len(b) != len(frame) {
				t.Errorf("the audio file: %d bytes, %v", len(b), err)
			}
		})
	}
}
