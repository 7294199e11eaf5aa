package imagegen

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"talon/internal/tools"
)

// seen is one request the fake OpenRouter received.
type seen struct {
	Path   string
	Header http.Header
	Body   []byte
}

// fakeOpenRouter is a loopback stand-in for OpenRouter's API that records
// every request before handing it to its handler.
type fakeOpenRouter struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newFake(t *testing.T, h http.HandlerFunc) *fakeOpenRouter {
	t.Helper()
	f := &fakeOpenRouter{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeOpenRouter) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// inTurn answers the n-th request with the n-th handler; the last repeats.
func inTurn(hs ...http.HandlerFunc) http.HandlerFunc {
	var n atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		hs[min(int(n.Add(1))-1, len(hs)-1)](w, r)
	}
}

// reply answers with status, a JSON body and the extra header h.
func reply(status int, body string, h ...http.Header) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, hh := range h {
			maps.Copy(w.Header(), hh)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// answerJSON is a 200 answer in OpenRouter's shape with the given text and
// image URLs.
func answerJSON(text string, urls ...string) string {
	type imageURL struct {
		URL string `json:"url"`
	}
	type img struct {
		Type     string   `json:"type"`
		ImageURL imageURL `json:"image_url"`
		Index    int      `json:"index"`
	}
	imgs := []img{}
	for i, u := range urls {
		imgs = append(imgs, img{"image_url", imageURL{u}, i})
	}
	msg := map[string]any{"role": "assistant", "content": text, "refusal": nil, "reasoning": nil}
	if len(urls) > 0 {
		msg["images"] = imgs
	}
	b, _ := json.Marshal(map[string]any{
		"id": "gen-1700000000-abc", "provider": "Google AI Studio", "model": DefaultModel,
		"object": "chat.completion", "created": 1700000000,
		"choices": []any{map[string]any{
			"logprobs": nil, "finish_reason": "stop", "native_finish_reason": "STOP", "index": 0,
			"message": msg,
		}},
		"usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 1290, "total_tokens": 1302},
	})
	return string(b)
}

func dataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

func encodePNG(t testing.TB, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, 0, color.RGBA{R: uint8(x), A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// webpVP8X is the start of an extended WebP file (RFC 9649) of w×h pixels:
// enough for the content sniffer and the size reader.
func webpVP8X(w, h int) []byte {
	b := make([]byte, 40)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], 32)
	copy(b[8:], "WEBPVP8X")
	binary.LittleEndian.PutUint32(b[16:], 10)
	b[24], b[25], b[26] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
	b[27], b[28], b[29] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
	return b
}

// workspace opens a fresh workspace root.
func workspace(t *testing.T) (*os.Root, string) {
	t.Helper()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root, dir
}

// keyEnv is an env lookup holding only the test API key.
func keyEnv(name string) (string, bool) {
	if name == DefaultAPIKeyEnv {
		return "sk-or-test", true
	}
	return "", false
}

// newTool is the tool pointed at the fake, with no retries unless asked.
func newTool(t *testing.T, f *fakeOpenRouter, env func(string) (string, bool)) *Tool {
	t.Helper()
	tool, err := New(Config{BaseURL: f.URL + "/api/v1"}, env)
	if err != nil {
		t.Fatal(err)
	}
	tool.retries = 0
	return tool
}

func argsJSON(kv ...any) json.RawMessage {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

var _ tools.Tool = (*Tool)(nil)
