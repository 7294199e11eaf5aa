package imagegen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/netguard"
	"talon/internal/tools"
)

// canvasFiles lists canvas/ in dir (hidden temporary files included).
func canvasFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, CanvasDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestGenerateSaves(t *testing.T) {
	pngData := encodePNG(t, 64, 48)
	jpegData := encodeJPEG(t, 32, 20)
	webpData := webpVP8X(1344, 768)
	tests := []struct {
		name     string
		args     json.RawMessage
		answer   string
		wantBody string
		wantFile string // regexp of the saved path
		data     []byte
		wantText string
	}{
		{
			name:     "png, name from the prompt",
			args:     argsJSON("prompt", "  A red fox in SNOW, watercolour!  "),
			answer:   answerJSON("Here is your fox.", dataURL("image/png", pngData)),
			wantBody: `{"model":"google/gemini-2.5-flash-image","messages":[{"role":"user","content":"A red fox in SNOW, watercolour!"}],"modalities":["image","text"]}`,
			wantFile: `^canvas/a-red-fox-in-snow-watercolour-[0-9a-f]{6}\.png$`,
			data:     pngData,
			wantText: "(image/png, " + strconv.Itoa(len(pngData)) + " bytes, 64x48)\n\nModel's text: Here is your fox.",
		},
		{
			name:     "jpeg with a filename and aspect ratio",
			args:     argsJSON("prompt", "a lighthouse", "filename", "light_house.v2", "aspectRatio", "16:9"),
			answer:   answerJSON("", dataURL("image/jpeg", jpegData)),
			wantBody: `{"model":"google/gemini-2.5-flash-image","messages":[{"role":"user","content":"a lighthouse"}],"modalities":["image","text"],"image_config":{"aspect_ratio":"16:9"}}`,
			wantFile: `^canvas/light_house\.v2\.jpg$`,
			data:     jpegData,
			wantText: "(image/jpeg, " + strconv.Itoa(len(jpegData)) + " bytes, 32x20)",
		},
		{
			name:     "webp, the extension follows the content",
			args:     argsJSON("prompt", "city at night", "filename", "city.png"),
			answer:   answerJSON("", dataURL("image/webp", webpData)),
			wantBody: `{"model":"google/gemini-2.5-flash-image","messages":[{"role":"user","content":"city at night"}],"modalities":["image","text"]}`,
			wantFile: `^canvas/city\.webp$`,
			data:     webpData,
			wantText: "(image/webp, 40 bytes, 1344x768)",
		},
		{
			name:     "prompt with no letters",
			args:     argsJSON("prompt", "🦊🦊"),
			answer:   answerJSON("", dataURL("image/png", pngData)),
			wantBody: `{"model":"google/gemini-2.5-flash-image","messages":[{"role":"user","content":"🦊🦊"}],"modalities":["image","text"]}`,
			wantFile: `^canvas/image-[0-9a-f]{6}\.png$`,
			data:     pngData,
			wantText: "64x48",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, reply(200, tc.answer))
			root, dir := workspace(t)
			res, err := newTool(t, f, keyEnv).Run(context.Background(), &tools.Env{Workspace: root}, tc.args)
			if err != nil || res.IsError {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Path != "/api/v1/chat/completions" {
				t.Errorf("path = %q", r.Path)
			}
			for k, want := range map[string]string{
				"Authorization": "Bearer sk-or-test", "Content-Type": "application/json", "X-Title": "Talon",
			} {
				if got := r.Header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if string(r.Body) != tc.wantBody {
				t.Errorf("body\n got %s\nwant %s", r.Body, tc.wantBody)
			}
			path, _, _ := strings.Cut(strings.TrimPrefix(res.Text, "Saved "), " ")
			if !regexp.MustCompile(tc.wantFile).MatchString(path) {
				t.Fatalf("saved as %q, want %s (result %q)", path, tc.wantFile, res.Text)
			}
			got, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil || !bytes.Equal(got, tc.data) {
				t.Errorf("file %s: %d bytes, %v; want the %d bytes sent", path, len(got), err, len(tc.data))
			}
			if !strings.Contains(res.Text, tc.wantText) {
				t.Errorf("result %q lacks %q", res.Text, tc.wantText)
			}
			if files := canvasFiles(t, dir); len(files) != 1 {
				t.Errorf("canvas/ holds %v, want only the image", files)
			}
		})
	}
}

func TestNameCollision(t *testing.T) {
	pngData := encodePNG(t, 8, 8)
	f := newFake(t, reply(200, answerJSON("", dataURL("image/png", pngData))))
	root, dir := workspace(t)
	if err := os.MkdirAll(filepath.Join(dir, "canvas"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := []byte("an older picture")
	if err := os.WriteFile(filepath.Join(dir, "canvas", "fox.png"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	tool := newTool(t, f, keyEnv)
	for _, want := range []string{"canvas/fox-2.png", "canvas/fox-3.png"} {
		res, err := tool.Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox", "filename", "fox"))
		if err != nil || res.IsError || !strings.HasPrefix(res.Text, "Saved "+want+" ") {
			t.Fatalf("Run = %+v, %v; want %s", res, err, want)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, want)); !bytes.Equal(got, pngData) {
			t.Errorf("%s does not hold the image", want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "canvas", "fox.png")); !bytes.Equal(got, old) {
		t.Errorf("the existing canvas/fox.png was changed")
	}
	if files := canvasFiles(t, dir); !slices.Equal(files, []string{"fox-2.png", "fox-3.png", "fox.png"}) {
		t.Errorf("canvas/ holds %v", files)
	}
}

// TestRefusals covers calls refused before any request is made.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name     string
		args     json.RawMessage
		readOnly bool
		env      func(string) (string, bool)
		want     string
	}{
		{"read-only workspace", argsJSON("prompt", "fox"), true, keyEnv, "read-only"},
		{"missing key", argsJSON("prompt", "fox"), false, func(string) (string, bool) { return "", false },
			"image-gen: OPENROUTER_API_KEY is not set (set it in the config's env or the gateway's environment)"},
		{"blank key", argsJSON("prompt", "fox"), false, func(string) (string, bool) { return "  ", true }, "OPENROUTER_API_KEY is not set"},
		{"no prompt", argsJSON("filename", "x"), false, keyEnv, `missing required argument "prompt"`},
		{"blank prompt", argsJSON("prompt", " \n "), false, keyEnv, `"prompt" must describe the image`},
		{"prompt not a string", argsJSON("prompt", 42), false, keyEnv, `"prompt" must be a string`},
		{"prompt too long", argsJSON("prompt", strings.Repeat("é", MaxPrompt+1)), false, keyEnv, "is 4001 characters; at most 4000"},
		{"prompt with NUL", argsJSON("prompt", "a\x00b"), false, keyEnv, "NUL"},
		{"filename with a directory", argsJSON("prompt", "fox", "filename", "../x"), false, keyEnv, "without a directory"},
		{"filename upper case", argsJSON("prompt", "fox", "filename", "Fox"), false, keyEnv, "lower-case letters"},
		{"filename hidden", argsJSON("prompt", "fox", "filename", ".fox"), false, keyEnv, "lower-case letters"},
		{"filename dot dot", argsJSON("prompt", "fox", "filename", "a..b"), false, keyEnv, `not contain ".."`},
		{"filename empty", argsJSON("prompt", "fox", "filename", ""), false, keyEnv, "must not be empty"},
		{"filename only an extension", argsJSON("prompt", "fox", "filename", ".png"), false, keyEnv, "must not be empty"},
		{"filename too long", argsJSON("prompt", "fox", "filename", strings.Repeat("a", 65)), false, keyEnv, "at most 64"},
		{"bad aspect ratio", argsJSON("prompt", "fox", "aspectRatio", "7:3"), false, keyEnv, `"aspectRatio" must be one of`},
		{"unknown argument", argsJSON("prompt", "fox", "size", "1024x1024"), false, keyEnv, `unknown argument "size"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, reply(200, answerJSON("", dataURL("image/png", encodePNG(t, 2, 2)))))
			root, dir := workspace(t)
			res, err := newTool(t, f, tc.env).Run(context.Background(), &tools.Env{Workspace: root, ReadOnly: tc.readOnly}, tc.args)
			if err != nil || !res.IsError || !strings.Contains(res.Text, tc.want) {
				t.Fatalf("Run = %+v, %v; want an IsError result containing %q", res, err, tc.want)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests made", n)
			}
			if files := canvasFiles(t, dir); files != nil {
				t.Errorf("canvas/ holds %v", files)
			}
		})
	}
}

func TestAnswerProblems(t *testing.T) {
	pngData := encodePNG(t, 4, 4)
	big := make([]byte, MaxImageBytes+1)
	copy(big, pngData)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"401", reply(401, `{"error":{"code":401,"message":"No auth credentials found"}}`),
			[]string{"rejected the API key in OPENROUTER_API_KEY (401): No auth credentials found"}},
		{"402", reply(402, `{"error":{"code":402,"message":"Insufficient credits"}}`),
			[]string{"lack of credits", "(402): Insufficient credits"}},
		{"429 with Retry-After", reply(429, `{"error":{"code":429,"message":"Rate limit exceeded"}}`, http.Header{"Retry-After": {"7"}}),
			[]string{"rate limiting this key (429): Rate limit exceeded", "wait 7s"}},
		{"500", reply(500, `{"error":{"code":500,"message":"Internal Server Error"}}`),
			[]string{"failed (500): Internal Server Error"}},
		{"502 HTML", reply(502, `<html>bad gateway</html>`), []string{"(502): <html>bad gateway</html>"}},
		{"400 not an image model", reply(400, `{"error":{"code":400,"message":"No endpoints found that support the requested output modalities: image, text"}}`),
			[]string{`model "google/gemini-2.5-flash-image" (400; is it an image-output model?)`, "output modalities"}},
		{"error inside a 200", reply(200, `{"error":{"code":502,"message":"Provider returned error"}}`),
			[]string{"reported an error (code 502): Provider returned error"}},
		{"not JSON", reply(200, `<html>`), []string{"not the expected JSON"}},
		{"no choices", reply(200, `{"id":"x","choices":[]}`), []string{"no choices"}},
		{"answer without images", reply(200, answerJSON("I can only describe a fox in words.")),
			[]string{`answered without an image (finish_reason "stop")`, "Model's text: I can only describe a fox in words."}},
		{"bad base64", reply(200, answerJSON("", "data:image/png;base64,iVBORw0K*GgoAAAANSUhEUg==")),
			[]string{"image 1 is unusable: data URL's base64 is invalid"}},
		{"mime does not match the bytes", reply(200, answerJSON("", dataURL("image/jpeg", pngData))),
			[]string{"declared image/jpeg but the content is image/png"}},
		{"unsupported mime", reply(200, answerJSON("", dataURL("image/gif", []byte("GIF89a")))),
			[]string{`type "image/gif" is not image/png, image/jpeg or image/webp`}},
		{"not an image at all", reply(200, answerJSON("", dataURL("image/png", []byte("hello")))),
			[]string{"declared image/png but not a PNG, JPEG, GIF or WebP image"}},
		{"oversize", reply(200, answerJSON("", dataURL("image/png", big))),
			[]string{"larger than 20 MiB"}},
		{"remote URL not fetched", reply(200, answerJSON("", "https://example.com/fox.png")),
			[]string{"remote URL (https://example.com/fox.png), which generate_image does not download"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.handler)
			root, dir := workspace(t)
			res, err := newTool(t, f, keyEnv).Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox"))
			if err != nil || !res.IsError {
				t.Fatalf("Run = %+v, %v; want an IsError result", res, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result %q lacks %q", res.Text, w)
				}
			}
			if strings.Contains(res.Text, "sk-or-test") {
				t.Errorf("result reveals the API key: %q", res.Text)
			}
			if files := canvasFiles(t, dir); len(files) != 0 {
				t.Errorf("canvas/ holds %v", files)
			}
		})
	}
}

func TestRetriesTemporaryFailure(t *testing.T) {
	pngData := encodePNG(t, 4, 4)
	f := newFake(t, inTurn(reply(503, `{"error":{"code":503,"message":"overloaded"}}`), reply(200, answerJSON("", dataURL("image/png", pngData)))))
	root, _ := workspace(t)
	tool := newTool(t, f, keyEnv)
	tool.retries = 1
	res, err := tool.Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox", "filename", "fox"))
	if err != nil || res.IsError || !strings.HasPrefix(res.Text, "Saved canvas/fox.png ") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestPartialSave(t *testing.T) {
	pngData := encodePNG(t, 4, 4)
	f := newFake(t, reply(200, answerJSON("two tries", "data:image/png;base64,!!", dataURL("image/png", pngData))))
	root, dir := workspace(t)
	res, err := newTool(t, f, keyEnv).Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox", "filename", "fox"))
	if err != nil || res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	for _, w := range []string{"Saved canvas/fox.png (image/png", "Not saved: image 1 is unusable", "Model's text: two tries"} {
		if !strings.Contains(res.Text, w) {
			t.Errorf("result %q lacks %q", res.Text, w)
		}
	}
	if files := canvasFiles(t, dir); !slices.Equal(files, []string{"fox.png"}) {
		t.Errorf("canvas/ holds %v", files)
	}
}

func TestCanvasProblems(t *testing.T) {
	pngData := encodePNG(t, 4, 4)
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"canvas is a file", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "canvas"), nil, 0o644)
		}, "canvas is not a directory"},
		{"canvas links out of the workspace", func(t *testing.T, dir string) {
			os.Symlink(t.TempDir(), filepath.Join(dir, "canvas"))
		}, "canvas leads out of the workspace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, reply(200, answerJSON("", dataURL("image/png", pngData))))
			root, dir := workspace(t)
			tc.setup(t, dir)
			res, err := newTool(t, f, keyEnv).Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox"))
			if err != nil || !res.IsError || !strings.Contains(res.Text, tc.want) {
				t.Fatalf("Run = %+v, %v; want an IsError result containing %q", res, err, tc.want)
			}
		})
	}
}

func TestRedirectToAnotherHostRefused(t *testing.T) {
	other := newFake(t, reply(200, answerJSON("", dataURL("image/png", encodePNG(t, 2, 2)))))
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/api/v1/chat/completions", http.StatusTemporaryRedirect)
	})
	root, _ := workspace(t)
	res, err := newTool(t, f, keyEnv).Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox"))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "refusing a redirect") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}
}

func TestTimeout(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	root, _ := workspace(t)
	tool, err := New(Config{BaseURL: f.URL, TimeoutMs: minTimeoutMs}, keyEnv)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox"))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "no answer within 1s (timeoutMs 1000)") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

func TestCancelledCallIsAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	})
	root, _ := workspace(t)
	_, err := newTool(t, f, keyEnv).Run(ctx, &tools.Env{Workspace: root}, argsJSON("prompt", "fox"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
}

func TestNoWorkspaceIsTalonsFailure(t *testing.T) {
	f := newFake(t, reply(500, `{}`))
	if _, err := newTool(t, f, keyEnv).Run(context.Background(), &tools.Env{}, argsJSON("prompt", "fox")); err == nil {
		t.Fatal("Run without a workspace succeeded")
	}
}

func TestSchema(t *testing.T) {
	tool, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tool.Name() != "generate_image" {
		t.Errorf("Name = %q", tool.Name())
	}
	var s struct {
		Properties map[string]struct {
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(tool.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"prompt"}, s.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(AspectRatios, s.Properties["aspectRatio"].Enum); diff != "" {
		t.Errorf("aspectRatio enum (-want +got):\n%s", diff)
	}
	if len(s.Properties) != 3 {
		t.Errorf("properties = %v", s.Properties)
	}
}

// A guarded tool (a tenant's) reaches no private address, wherever its
// configured endpoint leads; the operator can open one exactly.
func TestGuardedEndpoint(t *testing.T) {
	pngData := encodePNG(t, 4, 4)
	f := newFake(t, reply(200, answerJSON("", dataURL("image/png", pngData))))
	root, _ := workspace(t)
	tool := newTool(t, f, keyEnv)
	tool.retries = 0
	tool.Guard(netguard.Options{})
	res, err := tool.Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox", "filename", "fox"))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "loopback address") || len(f.requests()) != 0 {
		t.Fatalf("guarded Run = %+v, %v (%d requests)", res, err, len(f.requests()))
	}
	tool.Guard(netguard.Options{Allow: []netip.AddrPort{netip.MustParseAddrPort(strings.TrimPrefix(f.URL, "http://"))}})
	if res, err := tool.Run(context.Background(), &tools.Env{Workspace: root}, argsJSON("prompt", "fox", "filename", "fox")); err != nil || res.IsError {
		t.Fatalf("Run with the endpoint opened = %+v, %v", res, err)
	}
}
