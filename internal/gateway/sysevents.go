package gateway

import (
	"strings"
	"sync"
	"time"

	"talon/internal/agent"
	"talon/internal/config"
	"talon/internal/llm"
)

// System events (spec automation.md §8): short notices queued for a
// session — a cron job's systemEvent, a wake, the system-event method, a
// hook's wake — that its next turn gets as "System: [time] text" lines
// before the user's message. The queue is in memory, as OpenClaw's: a
// notice is momentary, and a restart loses the ones not yet taken.

// Bounds of the queue.
const (
	maxSysEvents        = 20      // per session: the oldest are dropped (R8.1)
	maxSysEventSessions = 10_000  // per tenant: a new session's event is refused beyond it
	maxSysEventText     = 4 << 10 // bytes of one event's text
)

// Outcomes of queueing an event (the hooks' eventOutcome).
const (
	eventQueued    = "queued"
	eventCoalesced = "coalesced" // identical to the last one queued
)

// sysEvent is one queued notice.
type sysEvent struct {
	text string
	at   time.Time
}

// sysEvents is a tenant's queues, by session key. Safe for concurrent
// use.
type sysEvents struct {
	mu sync.Mutex
	q  map[string][]sysEvent
}

// add queues text for a session. Blank text is ignored (""), and text
// identical to the last event queued is not added again (coalesced).
func (e *sysEvents) add(key, text string, at time.Time) (string, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return "", errBlankEvent
	case len(text) > maxSysEventText:
		return "", errLongEvent
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.q == nil {
		e.q = map[string][]sysEvent{}
	}
	q, ok := e.q[key]
	if !ok && len(e.q) >= maxSysEventSessions {
		return "", errTooManyEventSessions
	}
	if n := len(q); n > 0 && q[n-1].text == text {
		return eventCoalesced, nil
	}
	q = append(q, sysEvent{text: text, at: at})
	if len(q) > maxSysEvents {
		q = append(q[:0:0], q[len(q)-maxSysEvents:]...)
	}
	e.q[key] = q
	return eventQueued, nil
}

// drain takes a session's queued events.
func (e *sysEvents) drain(key string) []sysEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.q[key]
	delete(e.q, key)
	return q
}

// pending counts a session's queued events.
func (e *sysEvents) pending(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.q[key])
}

type eventError string

func (e eventError) Error() string { return string(e) }

const (
	errBlankEvent           = eventError("the event's text is empty")
	errLongEvent            = eventError("the event's text is over 4 KiB")
	errTooManyEventSessions = eventError("too many sessions have events waiting")
)

// eventLines renders drained events as R8.2's lines, each stamped in the
// user's time zone: "System: [2026-11-27 08:00 CET] text", a
// continuation line "System: more".
func eventLines(evs []sysEvent, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	var b strings.Builder
	for _, ev := range evs {
		for i, line := range strings.Split(ev.text, "\n") {
			b.WriteString(agent.SystemEventPrefix)
			if i == 0 {
				b.WriteString("[" + ev.at.In(loc).Format("2006-01-02 15:04 MST") + "] ")
			}
			b.WriteString(strings.TrimRight(line, " \t\r"))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// withEvents puts a session's queued events before the turn's message:
// the last user message of input, on a copy. A turn without one gets
// them as a message of their own.
func withEvents(input []llm.Message, evs []sysEvent, cfg *config.Config) []llm.Message {
	if len(evs) == 0 {
		return input
	}
	loc, _ := config.UserLocation(cfg.Agents.Defaults.UserTimezone)
	lines := eventLines(evs, loc)
	out := append([]llm.Message(nil), input...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == llm.RoleUser {
			out[i].Content = lines + "\n" + out[i].Content
			return out
		}
	}
	return append(out, llm.Message{Role: llm.RoleUser, Content: strings.TrimSuffix(lines, "\n")})
}

// events is the tenant's system-event queues.
func (t *tenant) events() *sysEvents {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sysEvents == nil {
		t.sysEvents = &sysEvents{}
	}
	return t.sysEvents
}
