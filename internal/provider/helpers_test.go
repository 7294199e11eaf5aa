package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorded is one request a fake server received.
type recorded struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

// fakeServer is a loopback HTTP server that answers the n-th request with
// the n-th handler (the last one repeats) and records every request.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	reqs     []recorded
	handlers []http.HandlerFunc
}

func newFakeServer(t *testing.T, handlers ...http.HandlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{handlers: handlers}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %v: %q", err, raw)
		}
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(raw))) // for handlers that read it
		f.handlers[min(n, len(f.handlers)-1)](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// jsonReply answers with a JSON body.
func jsonReply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// sseReply answers with a text/event-stream body made of raw, written in
// the given pieces with a flush after each.
func sseReply(pieces ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for _, p := range pieces {
			io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
	}
}

// data frames each payload as an SSE data event.
func data(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		fmt.Fprintf(&b, "data: %s\n\n", p)
	}
	return b.String()
}

// event frames a named SSE event.
func event(name, payload string) string {
	return fmt.Sprintf("event: %s\ndata: %s\n\n", name, payload)
}

// sseThenHang writes pieces, then keeps the stream open until the client
// goes away.
func sseThenHang(pieces ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sseReply(pieces...)(w, r)
		<-r.Context().Done()
	}
}

// sseThenCut writes pieces, then closes the connection without ending the
// chunked body properly.
func sseThenCut(pieces ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sseReply(pieces...)(w, r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

// hangUp closes the connection before sending any response.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// waits records the backoff waits a transport asks for, without sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) list() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// instant makes t record its waits instead of sleeping.
func instant(t *transport) *waits {
	w := &waits{}
	t.sleep = w.sleep
	return w
}

// collector gathers streamed fragments.
type collector struct {
	mu    sync.Mutex
	frags []string
}

func (c *collector) add(s string) {
	c.mu.Lock()
	c.frags = append(c.frags, s)
	c.mu.Unlock()
}

func (c *collector) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.frags...)
}

// redirectClient sends every request to addr whatever its URL's host, so a
// test can use a real hostname (openrouter.ai) against a loopback server.
func redirectClient(addr string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}}
}

func ptr[T any](v T) *T { return &v }
