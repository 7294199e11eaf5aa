package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Turn is one chat completions request and the answer it must get.
type Turn struct {
	URL     string // the /v1/chat/completions endpoint
	Token   string // sent as a bearer token
	Body    []byte
	Headers map[string]string
	Stream  bool   // the body asks for "stream": true
	Want    string // the answer's whole text
}

// Timing is how long a turn took.
type Timing struct {
	// First is the time to the first non-empty delta.content of a stream
	// (time to first token), or to the whole answer when not streamed.
	First time.Duration
	// Whole is the time to the end of the answer ([DONE] for a stream).
	Whole time.Duration
}

// Chat sends t over c and times it. It reads every answer to the end and
// checks it (status 200, the wanted text, and [DONE] for a stream), so a
// broken path is an error rather than a fast figure and the connection
// can be reused.
func Chat(ctx context.Context, c *http.Client, t Turn) (Timing, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(t.Body))
	if err != nil {
		return Timing{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.Token)
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return Timing{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		out, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return Timing{}, fmt.Errorf("POST %s: status %d: %s", t.URL, resp.StatusCode, bytes.TrimSpace(out))
	}
	if !t.Stream {
		out, err := io.ReadAll(resp.Body)
		took := time.Since(start)
		if err != nil {
			return Timing{}, fmt.Errorf("POST %s: reading the answer: %w", t.URL, err)
		}
		var c struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(out, &c); err != nil || len(c.Choices) == 0 {
			return Timing{}, fmt.Errorf("POST %s: want a chat.completion, got: %.500s", t.URL, out)
		}
		if got := c.Choices[0].Message.Content; got != t.Want {
			return Timing{}, fmt.Errorf("POST %s: %s", t.URL, textDiff(got, t.Want))
		}
		return Timing{First: took, Whole: took}, nil
	}
	var tm Timing
	var text strings.Builder
	done := false
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
			data = bytes.TrimSpace(data)
			if string(data) == "[DONE]" {
				done = true
				tm.Whole = time.Since(start)
			} else if content := DeltaContent(data); content != "" {
				if tm.First == 0 {
					tm.First = time.Since(start)
				}
				text.WriteString(content)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Timing{}, fmt.Errorf("POST %s: reading the stream: %w", t.URL, err)
		}
	}
	if !done {
		return Timing{}, fmt.Errorf("POST %s (stream): the stream ended without [DONE]", t.URL)
	}
	if got := text.String(); got != t.Want {
		return Timing{}, fmt.Errorf("POST %s (stream): %s", t.URL, textDiff(got, t.Want))
	}
	return tm, nil
}

// textDiff says how an answer's text differs from the wanted one: the
// lengths and the text around the first difference.
func textDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-20)
	return fmt.Sprintf("the answer's text (%d bytes) differs from the wanted one (%d bytes) at byte %d: got …%q…, want …%q…",
		len(got), len(want), i, got[from:min(len(got), i+40)], want[from:min(len(want), i+40)])
}

// DeltaContent is the choices[0].delta.content of a chat.completion.chunk
// (the JSON after "data: "), "" when it has none.
func DeltaContent(data []byte) string {
	var c struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &c) != nil || len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Delta.Content
}

// Pairs is what Measure returns: per measured pair, A's time, B's time
// and B − A, each sorted ascending.
type Pairs struct {
	A, B, Diff []time.Duration
}

// MeasurePairs runs n pairs of a and b, alternating which goes first so
// that neither side always runs on a connection or cache the other just
// warmed, and returns the times. The figure to quote is a percentile of
// Diff: noise the machine adds to both sides of a pair cancels there.
func MeasurePairs(n int, a, b func() (time.Duration, error)) (*Pairs, error) {
	p := &Pairs{A: make([]time.Duration, 0, n), B: make([]time.Duration, 0, n), Diff: make([]time.Duration, 0, n)}
	for i := range n {
		var da, db time.Duration
		var err error
		if i%2 == 0 {
			if da, err = a(); err == nil {
				db, err = b()
			}
		} else {
			if db, err = b(); err == nil {
				da, err = a()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("pair %d of %d: %w", i+1, n, err)
		}
		p.A, p.B, p.Diff = append(p.A, da), append(p.B, db), append(p.Diff, db-da)
	}
	p.A, p.B, p.Diff = sorted(p.A), sorted(p.B), sorted(p.Diff)
	return p, nil
}
