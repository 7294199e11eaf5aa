package sse

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// event is what an EventSource dispatches.
type event struct{ name, data string }

// parse reads a stream as the WHATWG EventSource parser does: lines end
// at CRLF, CR or LF; "event" sets the name, each "data" line adds a line;
// a blank line dispatches, with the last LF dropped.
func parse(t *testing.T, stream string) []event {
	t.Helper()
	var (
		out  []event
		name string
		data strings.Builder
		seen bool
	)
	stream = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(stream)
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if seen {
				out = append(out, event{name, strings.TrimSuffix(data.String(), "\n")})
			}
			name, seen = "", false
			data.Reset()
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data.WriteString(value + "\n")
			seen = true
		default:
			t.Fatalf("unexpected line %q in %q", line, stream)
		}
	}
	return out
}

func TestSend(t *testing.T) {
	cases := []struct {
		name, event, data string
		wire              string
		want              event // as the client sees it
	}{
		{"openai chunk", "", `{"id":"x"}`, "data: {\"id\":\"x\"}\n\n", event{"", `{"id":"x"}`}},
		{"done", "", "[DONE]", "data: [DONE]\n\n", event{"", "[DONE]"}},
		{"named", "delta", `{"text":"hi"}`, "event: delta\ndata: {\"text\":\"hi\"}\n\n", event{"delta", `{"text":"hi"}`}},
		{"lf", "x", "a\nb", "event: x\ndata: a\ndata: b\n\n", event{"x", "a\nb"}},
		{"crlf and cr", "", "a\r\nb\rc", "data: a\ndata: b\ndata: c\n\n", event{"", "a\nb\nc"}},
		{"trailing line end", "", "a\n", "data: a\ndata: \n\n", event{"", "a\n"}},
		{"a field inside data", "", "ok\nevent: forged\n\ndata: x", "data: ok\ndata: event: forged\ndata: \ndata: data: x\n\n", event{"", "ok\nevent: forged\n\ndata: x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s := Start(rec)
			if err := s.Send(c.event, []byte(c.data)); err != nil {
				t.Fatal(err)
			}
			if got := rec.Body.String(); got != c.wire {
				t.Errorf("wire %q, want %q", got, c.wire)
			}
			if !rec.Flushed {
				t.Error("the event was not flushed")
			}
			got := parse(t, rec.Body.String())
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("the client sees %q, want [%q]", got, c.want)
			}
		})
	}
}

func TestStartHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	Start(rec)
	want := map[string]string{
		"Content-Type":      "text/event-stream; charset=utf-8",
		"Cache-Control":     "no-store",
		"X-Accel-Buffering": "no",
		"Connection":        "",
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if rec.Code != http.StatusOK {
		t.Errorf("status %d", rec.Code)
	}
}

func TestJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	s := Start(rec)
	// encoding/json escapes the line ends inside strings: one data line.
	if err := s.JSON("end", map[string]string{"text": "a\nb <c>"}); err != nil {
		t.Fatal(err)
	}
	if want := "event: end\ndata: {\"text\":\"a\\nb \\u003cc\\u003e\"}\n\n"; rec.Body.String() != want {
		t.Errorf("wire %q, want %q", rec.Body.String(), want)
	}
}

// failing is a client that went away: every write fails.
type failing struct {
	*httptest.ResponseRecorder
	writes int
}

func (f *failing) Write([]byte) (int, error) {
	f.writes++
	return 0, io.ErrClosedPipe
}

// TestErrorsEndTheStream: after the first error nothing more is written,
// and every later call returns that error.
func TestErrorsEndTheStream(t *testing.T) {
	cases := []struct {
		name  string
		first func(*Stream) error
		want  string
	}{
		{"write fails", func(s *Stream) error { return s.Send("", []byte("x")) }, io.ErrClosedPipe.Error()},
		{"name with a line end", func(s *Stream) error { return s.Send("a\ndata: forged", []byte("x")) }, "cannot hold a line end"},
		{"value does not marshal", func(s *Stream) error { return s.JSON("", func() {}) }, "unsupported type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &failing{ResponseRecorder: httptest.NewRecorder()}
			s := Start(w)
			err := c.first(s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("first error %v, want %q", err, c.want)
			}
			before := w.writes
			if again := s.Send("", []byte("more")); !errors.Is(again, err) {
				t.Errorf("a later Send returned %v, want %v", again, err)
			}
			if again := s.JSON("x", 1); !errors.Is(again, err) {
				t.Errorf("a later JSON returned %v, want %v", again, err)
			}
			if w.writes != before || !errors.Is(s.Err(), err) {
				t.Errorf("writes after the error: %d (was %d); Err %v", w.writes, before, s.Err())
			}
		})
	}
}

// FuzzSend: whatever the data, the client sees one event with that data,
// its line ends made LF, under the name it was sent with; a name with a
// line end is refused and nothing is written.
func FuzzSend(f *testing.F) {
	for _, s := range []string{"", "x", "a\nb", "a\r\nb\r", "\n\n", "data: x\n\nevent: y"} {
		f.Add("n", s)
	}
	f.Add("a\rb", "x")
	f.Fuzz(func(t *testing.T, name, data string) {
		rec := httptest.NewRecorder()
		err := Start(rec).Send(name, []byte(data))
		if strings.ContainsAny(name, "\r\n") {
			if err == nil || rec.Body.Len() != 0 {
				t.Fatalf("name %q: error %v, wrote %q; want a refusal", name, err, rec.Body)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		got := parse(t, rec.Body.String())
		want := event{name, strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(data)}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("Send(%q, %q) parses as %q, want [%q]", name, data, got, want)
		}
	})
}
