package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/sandbox"
	"talon/internal/store"
	"talon/internal/tools/core"
)

// docLLM is Anthropic's Messages API on loopback as a PDF model: it keeps
// each request's body and answers from what it was sent.
type docLLM struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (l *docLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	l.bodies = append(l.bodies, raw)
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"type":"message","content":[{"type":"text","text":"Revenue grew 12%."}],"stop_reason":"end_turn",
		"usage":{"input_tokens":1500,"output_tokens":6}}`)
}

// TestPDFToModel: with agents.defaults.pdfModel on Anthropic's API, the
// pdf tool hands the file whole to that model as a document block with
// the prompt, returns its answer, and the ledger records the call; a PDF
// model that cannot read documents is named in the error.
func TestPDFToModel(t *testing.T) {
	llmSrv := &docLLM{}
	srv := httptest.NewServer(llmSrv)
	t.Cleanup(srv.Close)
	state := t.TempDir()
	ws := filepath.Join(state, "workspace")
	pdf := []byte("%PDF-1.7\nnot parsed on this path\n%%EOF\n")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "q3.pdf"), pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := mustConfig(t, fmt.Sprintf(`{
		agents: {defaults: {model: "inspect", workspace: %q, pdfModel: {primary: "doc/claude-doc", fallbacks: ["plain/gpt"]}}},
		models: {providers: {doc: {baseUrl: %q, api: "anthropic-messages", models: [{id: "claude-doc"}]},
			plain: {baseUrl: %q, models: [{id: "gpt"}]}}},
	}`, ws, srv.URL, srv.URL+"/v1"))
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
	r := &Runner{Config: cfg, Policy: policy.New(cfg), Tools: reg, Store: db, StateDir: state, Sandboxes: boxes,
		Resolve: provider.NewMemo(cfg, provider.Options{Env: func(string) string { return "" }}).Resolve}

	res, err := r.Run(context.Background(), Request{AgentID: "main", SessionKey: "agent:main:main", Owner: true,
		Input: []llm.Message{{Role: llm.RoleUser, Content: `/call pdf {"pdf":"q3.pdf","prompt":"What grew?"}`}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "Revenue grew 12%.") {
		t.Errorf("answer %q lacks the PDF model's", res.Text)
	}
	var body struct {
		Messages []struct {
			Content []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Source struct {
					Type, MediaType string
					Data            string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"messages"`
	}
	llmSrv.mu.Lock()
	n := len(llmSrv.bodies)
	raw := llmSrv.bodies[0]
	llmSrv.mu.Unlock()
	if err := json.Unmarshal(raw, &body); err != nil || n != 1 || len(body.Messages) != 1 {
		t.Fatalf("%d requests, first %s: %v", n, raw, err)
	}
	blocks := body.Messages[0].Content
	data, _ := base64.StdEncoding.DecodeString(blocks[0].Source.Data)
	if len(blocks) != 2 || blocks[0].Type != "document" || !bytes.Equal(data, pdf) || blocks[1].Text != "What grew?" {
		t.Errorf("request content %+v: want the document, then the prompt", blocks)
	}
	tot, _, err := db.Usage(context.Background(), store.UsageQuery{By: store.ByKind})
	if err != nil {
		t.Fatal(err)
	}
	if _, groups, _ := db.Usage(context.Background(), store.UsageQuery{By: store.ByKind}); !hasKind(groups, store.CallPDF) || tot.Calls < 1 {
		t.Errorf("ledger groups %+v: want a pdf call", groups)
	}

	// A PDF model that reads no documents is named, and the next one
	// (none here) is not guessed.
	docs := r.documents("inspect", &sideCalls{})
	if _, err := docs(context.Background(), "x", "plain/gpt", []llm.Document{{MIME: "application/pdf", Data: pdf}}); err == nil ||
		!strings.Contains(err.Error(), "plain/gpt: it does not read PDFs itself") {
		t.Errorf("a text-only PDF model: %v", err)
	}
}

func hasKind(groups []store.UsageGroup, kind string) bool {
	for _, g := range groups {
		if g.Key == kind {
			return true
		}
	}
	return false
}
