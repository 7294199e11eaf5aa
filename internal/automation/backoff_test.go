package automation

import (
	"testing"
	"time"
)

func TestErrorBackoff(t *testing.T) {
	want := []time.Duration{0, 30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, time.Hour, time.Hour}
	for n, w := range want {
		if got := ErrorBackoff(n); got != w {
			t.Errorf("ErrorBackoff(%d) = %v, want %v", n, got, w)
		}
	}
	if got := ErrorBackoff(-1); got != 0 {
		t.Errorf("ErrorBackoff(-1) = %v", got)
	}
}

// TestConformanceBackoff is the backoff half of spec §13 vector 6: after
// the third consecutive failure the next attempt is not before the end of
// that run plus 5 minutes, even when the natural slot is earlier.
func TestConformanceBackoff(t *testing.T) {
	start := utc("2027-01-01T10:00:00Z")
	tests := []struct {
		name   string
		errors int
		status string
		ok     bool
		want   time.Time
	}{
		{"first failure", 1, StatusError, true, start.Add(2*time.Second + 30*time.Second)},
		{"second failure", 2, StatusError, true, start.Add(2*time.Second + time.Minute)},
		{"third failure: end + 5 min", 3, StatusError, true, start.Add(2*time.Second + 5*time.Minute)},
		{"ninth failure: capped at an hour", 9, StatusError, true, start.Add(2*time.Second + time.Hour)},
		{"last run ok: no backoff", 0, StatusOK, false, time.Time{}},
		{"last run skipped: no backoff", 0, StatusSkipped, false, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := JobState{LastRunAtMs: i64(start.UnixMilli()), LastDurationMs: i64(2000),
				LastRunStatus: tc.status, ConsecutiveErrors: tc.errors}
			got, ok := BackoffUntil(st)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("BackoffUntil = %v, %v; want %v, %v", got.UTC(), ok, tc.want, tc.ok)
			}
		})
	}
	// A recurring every-minute job's natural slot comes before the backoff.
	j := Job{CreatedAtMs: start.UnixMilli(), Schedule: Schedule{Kind: KindEvery, EveryMs: 60000}}
	natural, _, _ := Next(j, start.Add(2*time.Second))
	until, _ := BackoffUntil(JobState{LastRunAtMs: i64(start.UnixMilli()), LastDurationMs: i64(2000),
		LastRunStatus: StatusError, ConsecutiveErrors: 3})
	if !natural.Before(until) {
		t.Errorf("natural slot %v is not before the backoff %v: the test proves nothing", natural, until)
	}
}

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		attempt int
		want    time.Duration
		ok      bool
	}{
		{0, 0, false}, {1, time.Minute, true}, {2, 2 * time.Minute, true}, {3, 5 * time.Minute, true}, {4, 0, false},
	}
	for _, tc := range tests {
		got, ok := RetryDelay(tc.attempt)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryDelay(%d) = %v, %v; want %v, %v", tc.attempt, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTransient(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"openai: 429 rate_limit_exceeded: Rate limit reached for gpt-5", true},
		{"HTTP 429 Too Many Requests", true},
		{"resource has been exhausted (e.g. check quota)", true},
		{"anthropic: 529 overloaded_error: Overloaded", true},
		{"The model is experiencing high demand", true},
		{"fetch failed", true},
		{"read tcp 10.0.0.1:443: connection reset by peer (ECONNRESET)", true},
		{"request timed out after 600s", true},
		{"timeout", true},
		{"status code 503", true},
		{"502 Bad Gateway", true},
		{"openrouter: 500: error reported without details", true},
		{"openai: 401 invalid_api_key: Incorrect API key provided", false},
		{"openai: 400 invalid_request_error: model not found", false},
		{"payload.model: model \"x/y\" is not allowed", false},
		{"the agent replied with an error: file 5000.txt missing", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			if got := Transient(tc.text); got != tc.want {
				t.Errorf("Transient = %v, want %v", got, tc.want)
			}
		})
	}
}
