package benchmarks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// minPairs is the fewest measured pairs a run makes, whatever b.N, so the
// p99 rests on enough samples.
const minPairs = 200

// A sessionShape says which session each gateway turn lands in.
type sessionShape struct {
	name string
	// user is the request's "user" for turn i ("" = none: a new session
	// per turn).
	user func(i int) string
	// warm is the number of pairs before measuring.
	warm int
}

var sessionShapes = []sessionShape{
	// No "user": every turn opens a new session, as a stateless OpenAI
	// client does (OpenClaw's ~250 ms figure is this case).
	{"session=new", func(int) string { return "" }, 50},
	// A new "user" every 10 turns: conversations of 10 turns, history of
	// 0–18 stored messages.
	{"session=10turns", func(i int) string { return fmt.Sprintf("bench-%d", i/10) }, 50},
	// One stable "user": one session reused. 210 warm-up turns fill the
	// transcript past the runner's 400-message history limit, so every
	// measured turn reads and sends the last 400 messages: the steady state
	// of a long conversation, the same for any b.N.
	{"session=long", func(int) string { return "bench" }, 210},
}

// BenchmarkTurnOverhead measures what the gateway adds to a non-streamed
// chat turn. Each pair is one request straight to the fake LLM and one
// through `talon serve` (model openclaw/main, "hi"), in alternating order,
// over keep-alive connections; the metrics are percentiles of the per-pair
// difference gateway − direct, so machine noise common to both cancels.
// ns/op is the wall time of one pair.
func BenchmarkTurnOverhead(b *testing.B) {
	for _, s := range sessionShapes {
		b.Run(s.name, func(b *testing.B) { benchTurns(b, s, false) })
	}
}

// BenchmarkTurnOverheadStream is BenchmarkTurnOverhead with "stream": true;
// each side's time is to the first non-empty delta.content (TTFT).
func BenchmarkTurnOverheadStream(b *testing.B) {
	for _, s := range sessionShapes {
		b.Run(s.name, func(b *testing.B) { benchTurns(b, s, true) })
	}
}

func benchTurns(b *testing.B, shape sessionShape, stream bool) {
	bin := talonBinary(b)
	llm := newFakeLLM()
	defer llm.Close()
	state := b.TempDir()
	writeConfig(b, state, llm.BaseURL())
	g, _ := startGateway(b, bin, state)
	defer stopGateway(b, g)
	measurePairs(b, shape, stream, llm, g.URL, g.Log.String)
	b.ReportMetric(rssMB(b, g), "rss-MB-after")
}

// measurePairs runs the warm-up and then max(b.N, minPairs) measured
// pairs against the gateway at gwURL, and reports the metrics. gwLog
// returns the gateway's log for failure messages.
func measurePairs(b *testing.B, shape sessionShape, stream bool, llm *fakeLLM, gwURL string, gwLog func() string) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 4, DisableCompression: true, IdleConnTimeout: time.Minute}}
	defer client.CloseIdleConnections()
	streamField := ""
	if stream {
		streamField = `,"stream":true`
	}
	direct := []byte(`{"model":"fake-model","messages":[{"role":"user","content":"hi"}]` + streamField + `}`)
	turn := 0
	pair := func() (d, gw time.Duration) {
		user := ""
		if u := shape.user(turn); u != "" {
			user = `,"user":"` + u + `"`
		}
		turn++
		viaGateway := []byte(`{"model":"openclaw/main","messages":[{"role":"user","content":"hi"}]` + user + streamField + `}`)
		var err error
		if turn%2 == 0 {
			if d, err = timedChat(client, llm.BaseURL()+"/chat/completions", "sk-bench", direct, stream); err == nil {
				gw, err = timedChat(client, gwURL+"/v1/chat/completions", benchToken, viaGateway, stream)
			}
		} else {
			if gw, err = timedChat(client, gwURL+"/v1/chat/completions", benchToken, viaGateway, stream); err == nil {
				d, err = timedChat(client, llm.BaseURL()+"/chat/completions", "sk-bench", direct, stream)
			}
		}
		if err != nil {
			b.Fatalf("turn %d: %v\ngateway log:\n%s", turn, err, gwLog())
		}
		return d, gw
	}

	for range shape.warm {
		pair()
	}
	n := max(b.N, minPairs)
	before := llm.chats.Load()
	added := make([]time.Duration, 0, n)
	directs := make([]time.Duration, 0, n)
	gws := make([]time.Duration, 0, n)
	b.ResetTimer()
	for range n {
		d, gw := pair()
		directs, gws, added = append(directs, d), append(gws, gw), append(added, gw-d)
	}
	b.StopTimer()
	if calls := llm.chats.Load() - before; calls != int64(2*n) {
		b.Fatalf("the fake LLM answered %d chats for %d pairs, want %d (one upstream call per gateway turn)", calls, n, 2*n)
	}
	for _, s := range [][]time.Duration{added, directs, gws} {
		slices.Sort(s)
	}
	b.ReportMetric(micros(percentile(added, 50)), "p50-added-µs")
	b.ReportMetric(micros(percentile(added, 99)), "p99-added-µs")
	b.ReportMetric(micros(percentile(directs, 50)), "p50-direct-µs")
	b.ReportMetric(micros(percentile(gws, 50)), "p50-gateway-µs")
}

// timedChat POSTs body to url and returns the time to the whole answer
// (non-streamed) or to the first event with non-empty delta.content
// (streamed). It reads every answer to the end and checks it carries
// fakeReply, so the connection is reused and a broken path fails.
func timedChat(c *http.Client, url, token string, body []byte, stream bool) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if !stream {
		out, err := io.ReadAll(resp.Body)
		took := time.Since(start)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"content":"`+fakeReply+`"`)) {
			return 0, fmt.Errorf("POST %s: status %d: %s", url, resp.StatusCode, out)
		}
		return took, nil
	}
	var ttft time.Duration
	var text strings.Builder
	done := false
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: ")); ok {
			if string(data) == "[DONE]" {
				done = true
			} else if content, ok := firstContent(data); ok {
				if ttft == 0 {
					ttft = time.Since(start)
				}
				text.WriteString(content)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if resp.StatusCode != http.StatusOK || !done || text.String() != fakeReply {
		return 0, fmt.Errorf("POST %s (stream): status %d, [DONE] %v, text %q", url, resp.StatusCode, done, text.String())
	}
	return ttft, nil
}

// firstContent returns the choices[0].delta.content of a
// chat.completion.chunk (the JSON after "data: "), if it is non-empty.
func firstContent(data []byte) (string, bool) {
	data = bytes.TrimPrefix(data, []byte("data: "))
	var c struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &c) != nil || len(c.Choices) == 0 || c.Choices[0].Delta.Content == "" {
		return "", false
	}
	return c.Choices[0].Delta.Content, true
}
