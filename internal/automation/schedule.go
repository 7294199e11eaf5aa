package automation

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"talon/internal/config"
)

// DefaultStagger is R3.4's window for recurring top-of-hour expressions.
const DefaultStagger = 5 * time.Minute

// MaxEveryMs bounds an "every" interval: ten years, so anchor + k·every
// stays far from overflow.
const MaxEveryMs = 10 * 366 * 24 * 3600 * 1000

// Next is the job's next run strictly after `after`, or ok=false when it
// has none. An "at" job is the exception to "strictly after": until it
// has run successfully it is due at its time even when that has passed,
// because a one-shot always catches up (R5.7); once it ran it has none
// (a failed one is retried or disabled by the scheduler, R5.5). Next reads
// the schedule, the job id (stagger), CreatedAtMs (the default anchor of
// "every") and State.LastRunAtMs, never State.NextRunAtMs.
func Next(j Job, after time.Time) (t time.Time, ok bool, err error) {
	s := j.Schedule
	switch s.Kind {
	case KindAt:
		at, err := ParseAt(s.At)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("schedule.at: %w", err)
		}
		if last := j.State.LastRunAtMs; last != nil && *last >= at.UnixMilli() && j.State.LastRunStatus == StatusOK {
			return time.Time{}, false, nil
		}
		return at, true, nil
	case KindEvery:
		return nextEvery(j, after)
	case KindCron:
		return nextCron(j, after)
	}
	return time.Time{}, false, fmt.Errorf("schedule.kind: unsupported schedule kind %q", s.Kind)
}

// nextEvery is R3.2: lastRunAtMs + everyMs when that is still ahead (and
// the last run belongs to this anchor), else the first anchor + k·everyMs
// after `after` (the anchor itself while it is ahead).
func nextEvery(j Job, after time.Time) (time.Time, bool, error) {
	every := j.Schedule.EveryMs
	if every < 1 || every > MaxEveryMs {
		return time.Time{}, false, fmt.Errorf("schedule.everyMs: expected 1 to %d, got %d", int64(MaxEveryMs), every)
	}
	anchor := j.CreatedAtMs
	if a := j.Schedule.AnchorMs; a != nil {
		anchor = *a
	}
	now := after.UnixMilli()
	if last := j.State.LastRunAtMs; last != nil && *last >= anchor && *last+every > now {
		return time.UnixMilli(*last + every), true, nil
	}
	if anchor > now {
		return time.UnixMilli(anchor), true, nil
	}
	k := (now-anchor)/every + 1
	if k > (math.MaxInt64-anchor)/every {
		return time.Time{}, false, errors.New("schedule.everyMs: the next run overflows")
	}
	return time.UnixMilli(anchor + k*every), true, nil
}

// nextCron is the next natural slot plus the job's stable stagger offset:
// the slot is searched after after−offset, so a slot whose shifted time
// is still ahead counts.
func nextCron(j Job, after time.Time) (time.Time, bool, error) {
	s := j.Schedule
	c, err := parseCron(s.Expr)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("schedule.expr: %w", err)
	}
	loc, err := Zone(s.TZ)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("schedule.tz: %w", err)
	}
	offset := StaggerOffset(j.ID, StaggerWindow(s))
	t, ok := c.next(after.Add(-offset), loc)
	if !ok {
		return time.Time{}, false, fmt.Errorf("schedule.expr: %q matches no time within %d years", s.Expr, searchYears)
	}
	return t.Add(offset), true, nil
}

// Zone loads an IANA zone; "" is UTC, since Normalize has stored the
// resolved zone on every cron job (better-item 2) and no rule guesses.
func Zone(name string) (*time.Location, error) {
	loc, err := config.UserLocation(name)
	if loc == nil && err == nil {
		loc = time.UTC
	}
	return loc, err
}

// StaggerWindow is a cron schedule's stagger window (R3.4): StaggerMs when
// set, else DefaultStagger for recurring top-of-hour expressions, else 0.
func StaggerWindow(s Schedule) time.Duration {
	if s.Kind != KindCron {
		return 0
	}
	if s.StaggerMs != nil {
		return time.Duration(max(*s.StaggerMs, 0)) * time.Millisecond
	}
	if topOfHour(s.Expr) {
		return DefaultStagger
	}
	return 0
}

// hourListPart is one item of an hour field that recurs: "*", "?", a
// number or range, each with an optional step (OpenClaw's stagger.ts).
var hourListPart = regexp.MustCompile(`^(?:\d+|\d+-\d+)(?:/\d+)?$|^[*?](?:/\d+)?$`)

// topOfHour says the expression fires at minute 0 (second 0) of an hour
// field that has a wildcard part, as OpenClaw decides it, on the raw
// fields: nicknames such as @hourly are not staggered there either.
func topOfHour(expr string) bool {
	f := strings.Fields(expr)
	var hour string
	switch {
	case len(f) == 5 && f[0] == "0":
		hour = f[1]
	case len(f) == 6 && f[0] == "0" && f[1] == "0":
		hour = f[2]
	default:
		return false
	}
	wild := false
	for part := range strings.SplitSeq(hour, ",") {
		if !hourListPart.MatchString(part) {
			return false
		}
		wild = wild || part[0] == '*' || part[0] == '?'
	}
	return wild
}

// StaggerOffset is R3.4's stable offset of a job within its window:
// uint32_be(sha256(jobId)[0:4]) mod the window in milliseconds, so that
// it is the same across restarts and the same as OpenClaw's.
func StaggerOffset(jobID string, window time.Duration) time.Duration {
	ms := window.Milliseconds()
	if ms <= 1 {
		return 0
	}
	sum := sha256.Sum256([]byte(jobID))
	return time.Duration(int64(binary.BigEndian.Uint32(sum[:4]))%ms) * time.Millisecond
}

// isoAt is OpenClaw's ISO-8601 form of an "at": a date, optionally a time
// with seconds and fraction, optionally an offset.
var isoAt = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?$`)

// ParseAt reads an "at" time (R3.1): ISO 8601, UTC when it has no
// offset, a bare date being midnight UTC; or Unix milliseconds as digits.
func ParseAt(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("empty time")
	}
	if isDigits(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 1 || ms > maxAtMs {
			return time.Time{}, fmt.Errorf("%q: expected Unix milliseconds up to year 9999", s)
		}
		return time.UnixMilli(ms), nil
	}
	m := isoAt.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, fmt.Errorf("%q: expected an ISO-8601 time such as 2027-02-01T16:00:00Z", s)
	}
	layout, text := "2006-01-02", m[1]+"-"+m[2]+"-"+m[3]
	if m[4] != "" {
		sec := m[6]
		if sec == "" {
			sec = "00"
		}
		layout, text = layout+"T15:04:05", text+"T"+m[4]+":"+m[5]+":"+sec+m[7]
	}
	loc := time.UTC
	if off := m[8]; off != "" && off != "Z" && off != "z" {
		d, err := parseOffset(off)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: %w", s, err)
		}
		loc = time.FixedZone("", int(d.Seconds()))
	}
	t, err := time.ParseInLocation(layout, text, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: not a valid date and time", s)
	}
	return t, nil
}

// maxAtMs is 9999-12-31T23:59:59Z: later times overflow other clocks.
const maxAtMs = 253402300799000

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// parseOffset reads ±hh:mm or ±hhmm.
func parseOffset(off string) (time.Duration, error) {
	sign := time.Duration(1)
	if off[0] == '-' {
		sign = -1
	}
	digits := strings.ReplaceAll(off[1:], ":", "")
	h, _ := strconv.Atoi(digits[:2])
	m, _ := strconv.Atoi(digits[2:])
	if h > 23 || m > 59 {
		return 0, fmt.Errorf("offset %q is out of range", off)
	}
	return sign * (time.Duration(h)*time.Hour + time.Duration(m)*time.Minute), nil
}
