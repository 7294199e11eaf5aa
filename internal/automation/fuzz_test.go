package automation

import (
	"testing"
	"time"
)

// FuzzNext: a tenant's expression and zone never panic or hang Next, and
// a run it finds is strictly after the time asked about, with a wall
// clock the expression matches.
func FuzzNext(f *testing.F) {
	for _, s := range []string{"0 9 15 * 1", "*/30 * * * *", "30 2 * * *", "0 0 29 2 +1", "*/7 */5 * * * *",
		"@hourly", "0 0 30 2 *", "1-5/2,9 0-23/3 1,15 jan-dec/2 mon-fri", "? ? ? ? ?", "59 23 31 12 7"} {
		f.Add(s, "Europe/Vienna", int64(1806454800000))
		f.Add(s, "America/New_York", int64(1825300800000))
	}
	f.Fuzz(func(t *testing.T, expr, tz string, afterMs int64) {
		if afterMs < 0 || afterMs > 4102444800000 { // 1970 to 2100
			return
		}
		c, err := parseCron(expr)
		if err != nil {
			return
		}
		loc, err := Zone(tz)
		if err != nil {
			return
		}
		after := time.UnixMilli(afterMs)
		next, ok := c.next(after, loc)
		if !ok {
			return
		}
		w := wallOf(next, loc)
		if !next.After(after) || !has(c.month, int(w.Month())) || !c.dayMatches(w) ||
			!has(c.hour, w.Hour()) || !has(c.minute, w.Minute()) || !has(c.second, w.Second()) {
			t.Fatalf("%q in %s after %v: %v (wall %v) does not match", expr, tz, after, next, w)
		}
	})
}

// FuzzJob: any job and patch a tenant sends is refused with an error or
// accepted, never a panic; an accepted job has a schedule Next can read.
func FuzzJob(f *testing.F) {
	f.Add([]byte(baseJob), []byte(`{"payload":{"model":null},"schedule":{"kind":"every","everyMs":5}}`))
	f.Add([]byte(`{"name":"n","schedule":{"kind":"at","at":"2027-02-01"},"payload":{"kind":"systemEvent","text":"t"},"failureAlert":false}`),
		[]byte(`{"delivery":{"mode":"webhook","to":"https://x"},"failureAlert":{"after":2}}`))
	f.Fuzz(func(t *testing.T, job, patch []byte) {
		j, err := DecodeJob(job)
		if err != nil {
			return
		}
		Normalize(&j, testNow, "Europe/Vienna")
		if Validate(j, twoChannels) == nil {
			if _, _, err := Next(j, testNow); err != nil {
				t.Fatalf("a valid job has no readable schedule: %v", err)
			}
		}
		next, _, err := ApplyPatch(j, patch)
		if err != nil {
			return
		}
		Normalize(&next, testNow, "UTC")
		_ = Validate(next, twoChannels)
	})
}
