package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"absent", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"zero", map[string]string{"Retry-After": "0"}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"HTTP date", map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:00:42 GMT"}, 42 * time.Second},
		{"HTTP date in the past", map[string]string{"Retry-After": "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"retry-after-ms wins", map[string]string{"Retry-After": "7", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tc.want {
				t.Errorf("retryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	tr := newTransport("x", nil, 0, 0, 0)
	tests := []struct {
		name     string
		attempt  int
		err      error
		min, max time.Duration
	}{
		{"first", 0, &Error{Status: 500}, 250 * time.Millisecond, 500 * time.Millisecond},
		{"second", 1, &Error{Status: 500}, 500 * time.Millisecond, time.Second},
		{"third", 2, &Error{Status: 500}, time.Second, 2 * time.Second},
		{"capped", 6, &Error{Status: 500}, 4 * time.Second, 8 * time.Second},
		{"overflow stays capped", 70, &Error{Status: 500}, 4 * time.Second, 8 * time.Second},
		{"retry-after", 0, &Error{Status: 429, RetryAfter: 3 * time.Second}, 3 * time.Second, 3 * time.Second},
		{"retry-after capped", 0, &Error{Status: 429, RetryAfter: time.Hour}, 30 * time.Second, 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 {
				if d := tr.backoff(tc.attempt, tc.err); d < tc.min || d > tc.max {
					t.Fatalf("backoff = %v, want in [%v, %v]", d, tc.min, tc.max)
				}
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	cause := errors.New("dial tcp: connection refused")
	tests := []struct {
		err      *Error
		want     string
		wantTemp bool
	}{
		{&Error{Provider: "openai", Status: 429, Type: "rate_limit_exceeded", Message: "slow down"}, "openai: 429 rate_limit_exceeded: slow down", true},
		{&Error{Provider: "openai", Status: 408, Message: "timeout"}, "openai: 408: timeout", true},
		{&Error{Provider: "openai", Status: 503}, "openai: 503: Service Unavailable", true},
		{&Error{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded"}, "anthropic: 529 overloaded_error: Overloaded", true},
		{&Error{Provider: "openai", Status: 400, Type: "invalid_request_error", Message: "bad"}, "openai: 400 invalid_request_error: bad", false},
		{&Error{Provider: "openai", Status: 404, Message: "no such model"}, "openai: 404: no such model", false},
		{&Error{Provider: "ollama", Err: cause, early: true}, "ollama: dial tcp: connection refused", true},
		{&Error{Provider: "ollama", Err: cause}, "ollama: dial tcp: connection refused", false},
		{&Error{Provider: "x", Type: "server_error", Message: "m"}, "x: server_error: m", false},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if got := tc.err.Temporary(); got != tc.wantTemp {
				t.Errorf("Temporary() = %v, want %v", got, tc.wantTemp)
			}
		})
	}
	if !errors.Is(&Error{Err: cause}, cause) {
		t.Error("Error does not unwrap to its cause")
	}
}

func TestNetworkErrorAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := networkError(ctx, "openai", errors.New("read: reset"), true)
	if e.Temporary() || !errors.Is(e, context.Canceled) || e.Error() != "openai: context canceled" {
		t.Errorf("networkError after cancel = %q (temporary %v)", e, e.Temporary())
	}
}

func TestSSEReader(t *testing.T) {
	type ev struct{ Event, Data string }
	tests := []struct {
		name    string
		in      string
		want    []ev
		wantErr error // after the events; nil means io.EOF
	}{
		{
			name: "data and named events",
			in:   "data: a\n\nevent: x\ndata: b\n\n",
			want: []ev{{Data: "a"}, {Event: "x", Data: "b"}},
		},
		{
			name: "multi-line data, comments, ids, CRLF",
			in:   ": hi\r\nid: 1\r\ndata: one\r\ndata:two\r\nretry: 10\r\n\r\n",
			want: []ev{{Data: "one\ntwo"}},
		},
		{
			name: "event without data is dropped",
			in:   "event: ping\n\ndata: z\n\n",
			want: []ev{{Data: "z"}},
		},
		{
			name: "last event without blank line",
			in:   "data: a\n\ndata: [DONE]\n",
			want: []ev{{Data: "a"}, {Data: "[DONE]"}},
		},
		{
			name:    "cut mid-line",
			in:      "data: a\n\ndata: {\"x",
			want:    []ev{{Data: "a"}},
			wantErr: errTruncated,
		},
		{
			name: "long line across buffer refills",
			in:   "data: " + strings.Repeat("y", 200<<10) + "\n\n",
			want: []ev{{Data: strings.Repeat("y", 200<<10)}},
		},
		{
			name:    "too long",
			in:      "data: " + strings.Repeat("y", maxSSELine) + "\n\n",
			wantErr: errLineTooLong,
		},
		{
			name:    "too long across data lines",
			in:      strings.Repeat("data: "+strings.Repeat("y", 1<<20)+"\n", 5) + "\n",
			wantErr: errLineTooLong,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			touches := 0
			r := newSSEReader(strings.NewReader(tc.in), func() { touches++ })
			var got []ev
			var err error
			for {
				var e sseEvent
				e, err = r.Next()
				if err != nil {
					break
				}
				got = append(got, ev{Event: e.Event, Data: string(e.Data)})
			}
			want := tc.wantErr
			if want == nil {
				want = io.EOF
			}
			if !errors.Is(err, want) {
				t.Errorf("err = %v, want %v", err, want)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if touches == 0 {
				t.Error("reading never reset the idle timer")
			}
		})
	}
}
