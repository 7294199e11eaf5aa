package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/store"
)

// TestImageTool runs the image tool through the gateway and the agent
// runner: the file in the workspace reaches the image model (the offline
// inspect model, or an OpenAI-compatible server on loopback that must get
// the bytes as a data URL), and the model's answer is the tool result.
func TestImageTool(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	pic := buf.Bytes()
	facts := fmt.Sprintf(`Image "pic.png": PNG, 2×2 pixels, %d bytes.`, len(pic))
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic)

	// refusing answers every request as OpenAI does a bad image.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"Invalid image data.","type":"invalid_request_error"}}`)
	}))
	t.Cleanup(refusing.Close)

	const call = `{"image":"pic.png","prompt":"What colour is the corner?"}`
	cases := []struct {
		name       string
		imageModel string // agents.defaults.imageModel, JSON5; "" for none
		scripted   bool   // the agent's model is the scripted fake; else inspect
		vision     bool   // the scripted fake is also the image model
		want       string // in the tool result
		isError    bool
	}{
		{name: "inspect is its own image model",
			want: facts + "\n\ninspect: 1 image(s): image/png " + fmt.Sprint(len(pic)) + ` bytes; prompt: "What colour is the corner?"`},
		{name: "imageModel inspect for a scripted agent", imageModel: `"inspect"`, scripted: true,
			want: `inspect: 1 image(s): image/png`},
		{name: "imageModel on the OpenAI wire", imageModel: `"fake/vision-1"`, scripted: true, vision: true,
			want: facts + "\n\na red pixel in the corner"},
		{name: "fallback after a model that does not resolve", imageModel: `{primary:"nowhere/x",fallbacks:["fake/vision-1"]}`, scripted: true, vision: true,
			want: "a red pixel in the corner"},
		{name: "provider error", imageModel: `"refusing/vision-1"`, scripted: true,
			want: `image "pic.png": asking the image model: image model refusing/vision-1: refusing: 400 invalid_request_error: Invalid image data.`, isError: true},
		{name: "no image model resolves", imageModel: `"nowhere/x"`, scripted: true,
			want: `resolving image model nowhere/x`, isError: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			llm := newScriptedLLM(t)
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "workspace", "pic.png"), pic)
			defaults := `model:"inspect"`
			if c.scripted {
				defaults = `model:"fake/scripted"`
			}
			if c.imageModel != "" {
				defaults += `,imageModel:` + c.imageModel
			}
			writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{models:{providers:{`+
				`fake:{baseUrl:"`+llm.srv.URL+`/v1"},refusing:{baseUrl:"`+refusing.URL+`/v1"}}},`+
				`agents:{defaults:{`+defaults+`}}}`))
			ts := startServer(t, dir, nil)

			content := "/call image " + call
			if c.scripted {
				content = "look at pic.png"
				s := scripted{}
				s.ToolCalls = append(s.ToolCalls, struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				}{Name: "image", Arguments: json.RawMessage(call)})
				llm.push(s)
				if c.vision {
					llm.push(scripted{Content: "a red pixel in the corner"})
				}
				llm.push(scripted{Content: "done"})
			}
			body, _ := json.Marshal(map[string]any{"model": "openclaw", "user": "img",
				"messages": []any{map[string]string{"role": "user", "content": content}}})
			rep := ts.post(nil, string(body))
			if rep.status != http.StatusOK {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if !c.scripted {
				// inspect answers a tool result with the result itself.
				if !strings.Contains(rep.content, c.want) {
					t.Fatalf("answer %q, want it to contain %q", rep.content, c.want)
				}
				return
			}
			wantCalls := 2
			if c.vision {
				wantCalls = 3
				checkVisionRequest(t, llm.request(2), dataURL)
			}
			if n := llm.count(); n != wantCalls {
				t.Fatalf("the fake got %d requests, want %d", n, wantCalls)
			}
			last := llm.request(wantCalls)
			result := toolResult(t, last)
			if !strings.Contains(result.content, c.want) || (result.isError != c.isError) {
				t.Errorf("tool result %+v, want %q (error %v)", result, c.want, c.isError)
			}
			// The image went to the image model only: the agent's own
			// history has the answer, not the pixels.
			if bytes.Contains(last, []byte("image_url")) || bytes.Contains(last, []byte(dataURL[len("data:image/png;base64,"):])) {
				t.Errorf("the agent's next request carries the image: %s", last)
			}
			// The ledger has the agent's two calls as the turn's and the
			// image model's, when it answered, as an image call.
			want := map[string]int64{store.CallTurn: 2}
			if !c.isError {
				want[store.CallImage] = 1
			}
			if got := callsByKind(t, dir); !maps.Equal(got, want) {
				t.Errorf("ledger calls by kind %v, want %v", got, want)
			}
		})
	}
}

// checkVisionRequest checks the image model's request: one user message,
// the prompt as text, then the file as a base64 data URL.
func checkVisionRequest(t *testing.T, body []byte, dataURL string) {
	t.Helper()
	var req struct {
		Model    string `json:"model"`
		Tools    []any  `json:"tools"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("image model request: %v\n%s", err, body)
	}
	if req.Model != "vision-1" || len(req.Tools) != 0 || len(req.Messages) != 1 || req.Messages[0].Role != "user" {
		t.Fatalf("image model request: %s", body)
	}
	parts := req.Messages[0].Content
	if len(parts) != 2 || parts[0].Type != "text" || parts[0].Text != "What colour is the corner?" ||
		parts[1].Type != "image_url" || parts[1].ImageURL.URL != dataURL {
		t.Fatalf("image model content %+v, want the prompt and %.40s…", parts, dataURL)
	}
}

type wireToolResult struct {
	content string
	isError bool
}

// toolResult is the last tool message of a Chat Completions request.
// Chat Completions has no error flag on tool messages, so isError says the
// text is not the image tool's success form, which starts with "Image ".
func toolResult(t *testing.T, body []byte) wireToolResult {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "tool" && m.Content != nil {
			return wireToolResult{content: *m.Content, isError: !strings.HasPrefix(*m.Content, "Image ")}
		}
	}
	t.Fatalf("no tool result in %s", body)
	return wireToolResult{}
}

// callsByKind reads the calls of the ledger in the database of dir (the
// gateway has it open too), by kind.
func callsByKind(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, kinds, err := db.Usage(context.Background(), store.UsageQuery{By: store.ByKind})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, g := range kinds {
		got[g.Key] = g.Calls
	}
	return got
}
