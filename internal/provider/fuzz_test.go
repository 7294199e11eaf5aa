package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"talon/internal/config"
	"talon/internal/llm"
)

// replay is an http.RoundTripper that answers every request with one
// response from a fuzzed "provider", without a network.
type replay struct {
	status int
	header http.Header
	body   []byte
}

func (r *replay) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		Status: strconv.Itoa(r.status), StatusCode: r.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: r.header.Clone(), Body: io.NopCloser(bytes.NewReader(r.body)), ContentLength: -1, Request: req,
	}, nil
}

// replayClient answers with status 200, the content type and the body.
func replayClient(ctype string, body []byte) *http.Client {
	return &http.Client{Transport: &replay{status: http.StatusOK, header: http.Header{"Content-Type": {ctype}}, body: body}}
}

// fuzzRequest is a small conversation with a tool, so the encoders run too.
var fuzzRequest = &Request{
	Model: "m", System: "be brief",
	Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "hi"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"a"}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "text"},
	},
	Tools: []llm.ToolSpec{{Name: "read", Parameters: []byte(`{"type":"object"}`)}},
}

// checkChat holds what any answer of a provider must give: an error that
// names the provider and says something, or a response with a finish
// reason whose content is exactly the text streamed to the caller.
func checkChat(t *testing.T, name string, stream bool, res *Response, err error, frags []string) {
	t.Helper()
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, name+": ") || strings.TrimSpace(strings.TrimPrefix(msg, name+":")) == "" {
			t.Fatalf("error %q does not name %s or says nothing", msg, name)
		}
		return
	}
	if res == nil {
		t.Fatal("nil response without an error")
	}
	if res.FinishReason == "" {
		t.Fatal("response without a finish reason")
	}
	for _, f := range frags {
		if f == "" {
			t.Fatal("an empty fragment was streamed")
		}
	}
	if !stream && len(frags) > 0 {
		t.Fatal("fragments streamed for a non-streamed call")
	}
	if got := strings.Join(frags, ""); stream && got != res.Content {
		t.Fatalf("streamed text %q is not the response content %q", got, res.Content)
	}
}

// chatOnce calls p once, collecting streamed fragments when stream is set.
func chatOnce(p Provider, stream bool) (*Response, error, []string) {
	var frags []string
	var onDelta func(string)
	if stream {
		onDelta = func(s string) { frags = append(frags, s) }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.Chat(ctx, fuzzRequest, onDelta)
	return res, err, frags
}

var fuzzContentTypes = []string{"text/event-stream", "application/json", "text/event-stream; charset=utf-8", "", "text/plain"}

// fuzzAnswers fuzzes the provider that newProvider builds on a client
// answering 200 with a fuzzed content type and body, streamed or not. Each
// seed body is added streamed and not, under a content type that varies
// with it. See checkChat for what must hold.
func fuzzAnswers(f *testing.F, name string, bodies []string, newProvider func(*http.Client) Provider) {
	for i, s := range bodies {
		ctype := fuzzContentTypes[i%len(fuzzContentTypes)]
		f.Add(true, ctype, []byte(s))
		f.Add(false, ctype, []byte(s))
	}
	f.Fuzz(func(t *testing.T, stream bool, ctype string, body []byte) {
		res, err, frags := chatOnce(newProvider(replayClient(ctype, body)), stream)
		checkChat(t, name, stream, res, err, frags)
	})
}

// FuzzOpenAIResponse feeds any 200 answer, streamed or not, to the Chat
// Completions client: a body, SSE events, truncated or endless-looking
// streams, "error" members. See checkChat for what must hold.
func FuzzOpenAIResponse(f *testing.F) {
	seeds := []string{
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
		`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image"}],"refusal":"no"}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"x","arguments":{"a":1}}}]},"finish_reason":"function_call"}]}`,
		`{"error":{"code":502,"message":"upstream failed"}}`, `{"error":"plain"}`, `{"error":""}`, `{"error":{}}`, `{"choices":[]}`, `[]`, ``,
		data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`, `{"choices":[{"index":0,"delta":{"content":"lo"}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, `[DONE]`),
		data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":1}"}}]}}]}`,
			`{"choices":[{"index":1,"delta":{"content":"other choice"}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, `[DONE]`),
		data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}},{"id":"b","function":{"name":"y"}}]}}]}`) + ": keep-alive\n\ndata: [DONE]",
		data(`{"choices":[{"index":0,"delta":{"content":"cut"}}]}`) + `data: {"choices":[{"ind`,
		data(`{"error":{"type":"server_error","message":"boom"}}`),
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\n" + "data: \"finish_reason\":\"stop\"}]}\r\n\r\n",
	}
	fuzzAnswers(f, "openai", seeds, func(c *http.Client) Provider {
		return NewOpenAI(OpenAIOptions{BaseURL: "http://provider.invalid/v1", HTTPClient: c, MaxRetries: -1})
	})
}

// FuzzAnthropicResponse is FuzzOpenAIResponse for the Messages client and
// its named events.
func FuzzAnthropicResponse(f *testing.F) {
	full := event("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":25,"cache_read_input_tokens":3,"output_tokens":1}}}`) +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		event("ping", `{"type": "ping"}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \"a\"}"}}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}`) +
		event("message_stop", `{"type":"message_stop"}`)
	seeds := []string{
		full,
		full[:len(full)/2],
		`{"type":"message","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"read","input":{"path":"a"}},{"type":"thinking","thinking":"x"}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"type":"completion"}`, `{}`, `null`,
		event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text"`),
		event("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`),
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"b"}}`) +
			event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"a"}}`) +
			event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`),
		data(`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":1,"input_tokens":4}}`, `{"type":"message_stop"}`),
	}
	fuzzAnswers(f, "anthropic", seeds, func(c *http.Client) Provider {
		return NewAnthropic(AnthropicOptions{BaseURL: "http://provider.invalid", HTTPClient: c, MaxRetries: -1})
	})
}

// FuzzSSEReader reads any byte stream as server-sent events. It must end
// (every call consumes input or ends the stream), fail only with the
// reader's own errors, and keep every event within the line limit. Data
// written as "data:" lines comes back as written.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("event: a\ndata: 1\n\ndata: 2\r\ndata:3\r\n\r\n: ping\n\nid: 5\nretry: 1\ndata\n\n"), "", "")
	f.Add([]byte("data: cut"), "message_start", "{\"a\":1}\nsecond line")
	f.Add([]byte("data: x\n"), "", "  leading spaces")
	f.Add([]byte("event: e\n\n\n"), "e:colon", ":")
	f.Fuzz(func(t *testing.T, raw []byte, name, payload string) {
		r := newSSEReader(bytes.NewReader(raw), func() {})
		for n := 0; ; n++ {
			if n > len(raw)+1 {
				t.Fatalf("%d events from %d bytes: the reader does not advance", n, len(raw))
			}
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, errTruncated) && !errors.Is(err, errLineTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(ev.Data) > maxSSELine {
				t.Fatalf("event data of %d bytes", len(ev.Data))
			}
		}

		// Round trip: an event written as the SSE spec says comes back.
		// Lone CRs are line ends in the spec but not for this reader, and
		// an event name cannot span lines.
		if strings.ContainsAny(name, "\r\n") || strings.Contains(payload, "\r") {
			return
		}
		var b strings.Builder
		if name != "" {
			b.WriteString("event: " + name + "\n")
		}
		for _, line := range strings.Split(payload, "\n") {
			b.WriteString("data: " + line + "\n")
		}
		b.WriteString("\n")
		r = newSSEReader(strings.NewReader(b.String()), func() {})
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("reading back %q: %v", b.String(), err)
		}
		if ev.Event != name || string(ev.Data) != payload {
			t.Fatalf("read back event %q data %q, wrote %q data %q", ev.Event, ev.Data, name, payload)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the one event: %v, want EOF", err)
		}
	})
}

// FuzzStatusError turns any error answer into an *Error: its status, a
// non-negative Retry-After, a message that says something, and a
// Temporary verdict that follows the status alone.
func FuzzStatusError(f *testing.F) {
	f.Add(uint16(429), "2", "", []byte(`{"error":{"type":"rate_limit_error","message":"slow down","code":"rate_limit_exceeded"}}`))
	f.Add(uint16(503), "Wed, 21 Oct 2015 07:28:00 GMT", "1500", []byte(`{"message":"busy"}`))
	f.Add(uint16(400), "", "", []byte(`{"detail":"bad"}`))
	f.Add(uint16(500), "1e400", "NaN", []byte(`<html>`+strings.Repeat("é", 400)+`</html>`))
	f.Add(uint16(404), "Inf", "-1", []byte(`{"error":"plain"}`))
	f.Add(uint16(529), "0.5", "", []byte(`{"error":{"code":529}}`))
	f.Fuzz(func(t *testing.T, status uint16, retry, retryMs string, body []byte) {
		if status < 100 || status > 999 {
			return
		}
		h := http.Header{}
		if retry != "" {
			h.Set("Retry-After", retry)
		}
		if retryMs != "" {
			h.Set("Retry-After-Ms", retryMs)
		}
		e := statusError("p", &http.Response{StatusCode: int(status), Header: h, Body: io.NopCloser(bytes.NewReader(body))})
		if e.Status != int(status) {
			t.Fatalf("status %d, want %d", e.Status, status)
		}
		if e.RetryAfter < 0 {
			t.Fatalf("Retry-After %q / Retry-After-Ms %q gave a negative wait %v", retry, retryMs, e.RetryAfter)
		}
		msg := e.Error()
		if !strings.HasPrefix(msg, "p: "+strconv.Itoa(int(status))) {
			t.Fatalf("error %q does not start with the provider and status", msg)
		}
		want := status == 408 || status == 429 || status >= 500 && status <= 599
		if e.Temporary() != want {
			t.Fatalf("Temporary() = %v for status %d", e.Temporary(), status)
		}
		if utf8.Valid(body) && !utf8.ValidString(e.Message) {
			t.Fatalf("message %q is not UTF-8 though the body was", e.Message)
		}
		var tr transport
		tr.base, tr.cap = backoffBase, backoffCap
		if d := tr.backoff(0, e); d < 0 || d > max(retryAfterCap, backoffCap) {
			t.Fatalf("backoff %v after Retry-After %q / %q", d, retry, retryMs)
		}
	})
}

// FuzzResolve resolves any model reference (the X-OpenClaw-Model header,
// agents' model keys) against providers with secrets in the config and in
// the environment. A failure is a *ResolveError whose message says
// something and shows no secret; a success is a provider with the model id
// after the first slash.
func FuzzResolve(f *testing.F) {
	for _, ref := range []string{
		"inspect", " talon/inspect ", "openai/gpt-4o", "openrouter/google/gemini-3-flash", "anthropic/claude-x",
		"local/llama3.1", "envkey/m", "claude/m", "weird/m", "unset/m", "nobody/m", "/m", "local/", "gpt-4o", "",
	} {
		f.Add(ref, "http://127.0.0.1:11434/v1")
	}
	f.Add("local/x", "ftp://sk-LITERALSECRET@host")
	f.Add("local/x", "http://%zz")
	f.Fuzz(func(t *testing.T, ref, baseURL string) {
		secrets := []string{"sk-LITERALSECRET", "sk-ENVSECRET", "sk-OPENAISECRET"}
		cfg := &config.Config{}
		cfg.Models.Providers = map[string]config.Provider{
			"local":  {BaseURL: baseURL, APIKey: "sk-LITERALSECRET", Headers: map[string]string{"X-A": "1"}, Models: []config.Model{{ID: "x", Headers: map[string]string{"X-B": "2"}}}},
			"envkey": {BaseURL: "http://127.0.0.1:1/v1", APIKey: "${TALON_FUZZ_KEY}"},
			"claude": {API: APIAnthropicMessages, APIKey: "${TALON_FUZZ_KEY}"},
			"weird":  {API: "grpc", BaseURL: "http://h"},
			"unset":  {BaseURL: "http://h", APIKey: "${NOT_SET}"},
		}
		env := func(k string) string {
			return map[string]string{"TALON_FUZZ_KEY": "sk-ENVSECRET", "OPENAI_API_KEY": "sk-OPENAISECRET"}[k]
		}
		p, model, err := Resolve(cfg, ref, env)
		if err != nil {
			var re *ResolveError
			if !errors.As(err, &re) || strings.TrimSpace(re.Message) == "" {
				t.Fatalf("Resolve(%q) error %T %q, want a *ResolveError with a message", ref, err, err)
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) && !strings.Contains(ref+baseURL, s) {
					t.Fatalf("Resolve(%q) error shows a secret: %v", ref, err)
				}
			}
			return
		}
		if p == nil || model == "" {
			t.Fatalf("Resolve(%q) = %v, %q without an error", ref, p, model)
		}
		if _, ok := p.(Inspect); ok {
			return
		}
		if _, want, _ := strings.Cut(strings.TrimSpace(ref), "/"); model != want {
			t.Fatalf("Resolve(%q) model %q, want %q", ref, model, want)
		}
	})
}
