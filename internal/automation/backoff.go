package automation

import (
	"regexp"
	"sync"
	"time"
)

// Limits of the scheduler's error handling (R3.5, R5.5, R5.6).
const (
	// MaxScheduleErrors consecutive failures to compute a next run
	// disable a job ("schedule-errors").
	MaxScheduleErrors = 3
	// MaxConsecutiveFailures consecutive execution errors disable a
	// recurring job ("consecutive-failures"); failures get more room than
	// schedule errors because provider and network errors pass.
	MaxConsecutiveFailures = 10
	// MaxRetries is how often a one-shot retries a transient error.
	MaxRetries = 3
)

// Auto-disable reasons (AutoDisabled.Reason).
const (
	ReasonScheduleErrors      = "schedule-errors"
	ReasonConsecutiveFailures = "consecutive-failures"
)

var (
	errorBackoff = []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}
	retryDelays  = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute}
)

// ErrorBackoff is R5.4's wait after n consecutive execution errors of a
// recurring job, counted from the end of the failed run; 0 for n < 1.
func ErrorBackoff(n int) time.Duration {
	if n < 1 {
		return 0
	}
	return errorBackoff[min(n, len(errorBackoff))-1]
}

// BackoffUntil is when a recurring job that last failed may run again
// (R5.4): lastRunAtMs + lastDurationMs + ErrorBackoff(consecutiveErrors),
// even when its natural slot is earlier. ok=false when the last run did
// not fail, so no backoff holds.
func BackoffUntil(st JobState) (t time.Time, ok bool) {
	if st.LastRunStatus != StatusError || st.LastRunAtMs == nil {
		return time.Time{}, false
	}
	end := *st.LastRunAtMs
	if d := st.LastDurationMs; d != nil && *d > 0 {
		end += *d
	}
	return time.UnixMilli(end).Add(ErrorBackoff(max(st.ConsecutiveErrors, 1))), true
}

// RetryDelay is R5.5's delay before a one-shot retries a transient error,
// attempt being how many attempts have failed (1 after the first run);
// ok=false when no retry is left.
func RetryDelay(attempt int) (time.Duration, bool) {
	if attempt < 1 || attempt > len(retryDelays) {
		return 0, false
	}
	return retryDelays[attempt-1], true
}

// transientPatterns are OpenClaw's retryOn categories (rate_limit,
// overloaded, network, timeout, server_error), ported from its
// cron retry classifier, plus Talon's own provider error form
// ("openai: 503: …", internal/provider.Error) for a 429 or 5xx status.
// Compiled on first use: they are a quarter of a megabyte that a gateway
// whose jobs never fail should not hold from its start.
var transientPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		// rate_limit
		regexp.MustCompile(`(?i)\b(?:https?(?:/\d(?:\.\d)?)?|status(?:[ _-]?code)?|response(?:[ _-]?code)?|http(?:[ _-]?status)?)\b[\s:=#"'(]{0,6}429\b|\b(?:provider\s+)?api[ _-]?error\b[\s:=#"'(]{0,6}429\b|\b(?:requested\s+)?url\s+returned\s+error\b[\s:=#"'(]{0,6}429\b|\b429\b[\s:)\].,-]*(?:rate[_ -]?limit(?:ed|ing)?(?:[_ -](?:error|exceeded|reached))?|too many requests|resource has been exhausted|quota(?:\s+(?:exceeded|exhausted|depleted|reached))?)\b|\brate[_ -]?limit(?:ed|ing)?(?:[_ -](?:error|exceeded|reached))?\b|\btoo many requests\b|\bresource has been exhausted\b|\btokens per day\b|^\s*429\s*$`),
		// overloaded
		regexp.MustCompile(`(?i)^\s*529(?:\s*$|[\s:)\].,-]*(?:api\b.*\bbusy\b|(?:please\s+)?try\s+again\b))|\b(?:https?(?:/\d(?:\.\d)?)?|status(?:[ _-]?code)?|response(?:[ _-]?code)?|http(?:[ _-]?status)?|(?:provider\s+)?api[ _-]?error|(?:requested\s+)?url\s+returned\s+error)\b[\s:=#"'(]{0,6}529\b|\boverloaded(?:_error)?\b|high demand|temporar(?:ily|y) overloaded|capacity exceeded`),
		// network
		regexp.MustCompile(`(?i)(network|fetch failed|socket|econnreset|econnrefused|eai_again|enetdown|ehostunreach|ehostdown|enetreset|enetunreach|epipe)`),
		// timeout
		regexp.MustCompile(`(?i)(timeout|timed out|stalled before execution start|etimedout)`),
		// server_error
		regexp.MustCompile(`(?i)\b(?:https?|status(?:[ _]code)?|response(?:[ _]code)?|http(?:[ _]status)?)\b[\s:=#"']{0,4}5\d{2}\b|\b5\d{2}\b[\s:)\].,-]*(?:internal server error|server error|bad gateway|service unavailable|gateway time-?out)\b|\binternal server error\b|\bbad gateway\b|\bservice unavailable\b|\bgateway time-?out\b|\b5xx\b|^\s*5\d{2}\s*$`),
		// Talon's provider errors: "<provider>: <status>[ <type>]: <message>".
		regexp.MustCompile(`^[\w.-]+: (?:429|5\d\d)\b`),
	}
})

// Transient says an error text is a passing failure worth retrying
// (R5.5: rate limit, overload, network, timeout, 5xx); anything else is
// permanent.
func Transient(errText string) bool {
	for _, re := range transientPatterns() {
		if re.MatchString(errText) {
			return true
		}
	}
	return false
}
