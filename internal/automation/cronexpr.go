package automation

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Talon evaluates cron expressions itself rather than with robfig/cron:
// robfig has no `+` (AND) day-of-week prefix, treats "*/n" in a day field
// as unrestricted where croner (OpenClaw's parser) does not, and computes
// the next run with time.Date in the zone, which across DST can fire a
// repeated hour twice. The evaluator below searches wall-clock times as
// plain numbers and only then maps them to instants (zoneInstant), so
// the DST rule of R3.3 lives in one place.

// cronExpr is a parsed 5- or 6-field expression: one bit set per field.
type cronExpr struct {
	second, minute, hour, dom, month, dow uint64
	// domAny and dowAny say the field was "*" or "?": only a restricted
	// field takes part in the day rule. "?" is Quartz's "no specific
	// day" here; croner reads it as every day, so that its "0 9 ? * 1"
	// fires daily, which nobody writing it means.
	domAny, dowAny bool
	// dowAnd is croner's "+" prefix on day-of-week: both day fields must
	// match instead of either.
	dowAnd bool
}

type fieldSpec struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
	dowNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

	secondField = fieldSpec{"second", 0, 59, nil}
	minuteField = fieldSpec{"minute", 0, 59, nil}
	hourField   = fieldSpec{"hour", 0, 23, nil}
	domField    = fieldSpec{"day of month", 1, 31, nil}
	monthField  = fieldSpec{"month", 1, 12, monthNames}
	// Day of week 7 is Sunday too, as in Vixie cron and croner.
	dowField = fieldSpec{"day of week", 0, 7, dowNames}
)

// cronNicknames are the @-forms croner accepts.
var cronNicknames = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// maxExprLen bounds an expression: the longest sensible one is far shorter.
const maxExprLen = 256

// parseCron reads an expression: min hour dom mon dow, or with seconds
// first, or an @-nickname.
func parseCron(expr string) (*cronExpr, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("empty expression")
	}
	if len(expr) > maxExprLen {
		return nil, fmt.Errorf("longer than %d characters", maxExprLen)
	}
	if nick, ok := cronNicknames[strings.ToLower(expr)]; ok {
		expr = nick
	}
	fields := strings.Fields(expr)
	switch len(fields) {
	case 5:
		fields = append([]string{"0"}, fields...)
	case 6:
	default:
		return nil, fmt.Errorf("expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got %d", len(fields))
	}
	c := &cronExpr{}
	var err error
	dow := fields[5]
	if rest, ok := strings.CutPrefix(dow, "+"); ok {
		c.dowAnd, dow = true, rest
	}
	for _, f := range []struct {
		dst  *uint64
		text string
		spec fieldSpec
	}{
		{&c.second, fields[0], secondField}, {&c.minute, fields[1], minuteField},
		{&c.hour, fields[2], hourField}, {&c.dom, fields[3], domField},
		{&c.month, fields[4], monthField}, {&c.dow, dow, dowField},
	} {
		if *f.dst, err = parseField(f.text, f.spec); err != nil {
			return nil, err
		}
	}
	if c.dow&(1<<7) != 0 {
		c.dow |= 1 // 7 is Sunday
	}
	c.domAny = fields[3] == "*" || fields[3] == "?"
	c.dowAny = dow == "*" || dow == "?"
	return c, nil
}

// parseField reads one comma-separated field into a bit set.
func parseField(text string, f fieldSpec) (uint64, error) {
	var set uint64
	for part := range strings.SplitSeq(text, ",") {
		bitsOf, err := parsePart(part, f)
		if err != nil {
			return 0, fmt.Errorf("%s field %q: %w", f.name, text, err)
		}
		set |= bitsOf
	}
	return set, nil
}

// parsePart reads "*", "?", "a" or "a-b"; "*" and ranges may take a
// "/step". Like croner, a step after a single number ("5/15") is refused
// rather than read as Vixie's "5-59/15": OpenClaw refuses it too.
func parsePart(part string, f fieldSpec) (uint64, error) {
	rng, stepText, hasStep := strings.Cut(part, "/")
	lo, hi := f.min, f.max
	switch {
	case rng == "*" || rng == "?":
	case rng == "":
		return 0, fmt.Errorf("empty value")
	default:
		a, b, isRange := strings.Cut(rng, "-")
		if hasStep && !isRange {
			return 0, fmt.Errorf("%q: a step needs * or a range before it (*/%s or %s-%d/%s)", part, stepText, a, f.max, stepText)
		}
		var err error
		if lo, err = fieldValue(a, f); err != nil {
			return 0, err
		}
		hi = lo
		if isRange {
			if hi, err = fieldValue(b, f); err != nil {
				return 0, err
			}
			// "fri-sun": Sunday ends a range as 7, as in croner.
			if f.names != nil && hi == 0 && strings.EqualFold(b, "sun") {
				hi = 7
			}
			if hi < lo {
				return 0, fmt.Errorf("range %d-%d runs backwards", lo, hi)
			}
		}
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > f.max-f.min+1 {
			return 0, fmt.Errorf("step %q: expected a number from 1 to %d", stepText, f.max-f.min+1)
		}
		step = n
	}
	var set uint64
	for v := lo; v <= hi; v += step {
		set |= 1 << uint(v)
	}
	return set, nil
}

// fieldValue reads a number or a name (jan, mon) within the field's range.
func fieldValue(s string, f fieldSpec) (int, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		if strings.ContainsAny(s, "LW#") {
			return 0, fmt.Errorf("%q: L, W and # are not supported", s)
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < f.min || n > f.max {
		return 0, fmt.Errorf("%d is outside %d-%d", n, f.min, f.max)
	}
	return n, nil
}

func has(set uint64, v int) bool { return set&(1<<uint(v)) != 0 }

// dayMatches is the day rule: with both day fields restricted, either
// matches (Vixie's OR) unless "+" asked for both.
func (c *cronExpr) dayMatches(w time.Time) bool {
	dom, dow := has(c.dom, w.Day()), has(c.dow, int(w.Weekday()))
	switch {
	case c.domAny && c.dowAny:
		return true
	case c.domAny:
		return dow
	case c.dowAny:
		return dom
	case c.dowAnd:
		return dom && dow
	}
	return dom || dow
}

// searchYears bounds the search for a matching wall time: the rarest
// valid expression (29 February on a Monday) recurs within 28 years.
const searchYears = 29

// nextWall is the first wall-clock time at or after w (in UTC, standing
// for the zone's wall clock) that matches, whole seconds.
func (c *cronExpr) nextWall(w time.Time) (time.Time, bool) {
	w = w.Truncate(time.Second)
	limit := w.AddDate(searchYears, 0, 0)
	for w.Before(limit) {
		switch {
		case !has(c.month, int(w.Month())):
			w = time.Date(w.Year(), w.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(w):
			w = time.Date(w.Year(), w.Month(), w.Day()+1, 0, 0, 0, 0, time.UTC)
		case !has(c.hour, w.Hour()):
			w = nextSet(w, c.hour, w.Hour(), time.Hour, 24)
		case !has(c.minute, w.Minute()):
			w = nextSet(w, c.minute, w.Minute(), time.Minute, 60)
		case !has(c.second, w.Second()):
			w = nextSet(w, c.second, w.Second(), time.Second, 60)
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

// nextSet moves w to the next value of one field (hour, minute or second)
// in set, zeroing the smaller fields, or past the end of the larger unit
// when none is left.
func nextSet(w time.Time, set uint64, cur int, unit time.Duration, n int) time.Time {
	w = w.Truncate(unit)
	rest := set >> uint(cur+1) << uint(cur+1) & (1<<uint(n) - 1)
	if rest == 0 {
		return w.Add(time.Duration(n-cur) * unit)
	}
	return w.Add(time.Duration(bits.TrailingZeros64(rest)-cur) * unit)
}

// wallOf is t's wall clock in loc, as a UTC time.
func wallOf(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// zoneInstant is the first instant whose wall clock in loc is w, or
// ok=false when the zone skips w (a spring-forward gap). A wall time the
// zone repeats (fall back) maps to its first occurrence only: R3.3's
// "a repeated local time fires once".
func zoneInstant(w time.Time, loc *time.Location) (time.Time, bool) {
	var best time.Time
	found := false
	// Every offset in force within a day of w; zones change at most
	// once a day.
	for _, probe := range []time.Duration{-24 * time.Hour, 0, 24 * time.Hour} {
		_, off := w.Add(probe).In(loc).Zone()
		t := w.Add(-time.Duration(off) * time.Second)
		if !wallOf(t, loc).Equal(w) {
			continue
		}
		if !found || t.Before(best) {
			best, found = t, true
		}
	}
	return best, found
}

// next is the first run strictly after `after` in loc.
func (c *cronExpr) next(after time.Time, loc *time.Location) (time.Time, bool) {
	w := wallOf(after, loc).Truncate(time.Second).Add(time.Second)
	for {
		cand, ok := c.nextWall(w)
		if !ok {
			return time.Time{}, false
		}
		// A candidate whose first occurrence has passed was already due
		// (or falls in a repeated hour the job ran in): look further.
		if t, ok := zoneInstant(cand, loc); ok && t.After(after) {
			return t, true
		}
		w = cand.Add(time.Second)
	}
}
