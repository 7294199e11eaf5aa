package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Heartbeat is agents.defaults.heartbeat or an agents.list[] entry's
// heartbeat (spec automation.md §9.1). An empty string or nil pointer is
// an absent key: a per-agent block overrides the defaults key by key.
type Heartbeat struct {
	// Every is a duration whose bare numbers are minutes; "0m" stops the
	// cadence (wakes still run). HeartbeatEvery reads it.
	Every  string `json:"every"`
	Prompt string `json:"prompt"`
	// Target is last, none, owner or a configured channel id.
	Target       string `json:"target"`
	To           string `json:"to"`
	AccountID    string `json:"accountId"`
	DirectPolicy string `json:"directPolicy"` // allow or block
	Session      string `json:"session"`
	Model        string `json:"model"`
	// AckMaxChars is how much text may stand beside HEARTBEAT_OK for the
	// reply to still count as an acknowledgement (legacy key; 300).
	AckMaxChars      *int         `json:"ackMaxChars"`
	ActiveHours      *ActiveHours `json:"activeHours"`
	LightContext     *bool        `json:"lightContext"`
	IsolatedSession  *bool        `json:"isolatedSession"`
	IncludeReasoning *bool        `json:"includeReasoning"`
	TimeoutSeconds   *int         `json:"timeoutSeconds"`
}

// ActiveHours is the daily window heartbeats run in: Start inclusive,
// End exclusive ("24:00" allowed), both "HH:MM", in Timezone ("user",
// the default, is agents.defaults.userTimezone; "local" the host's; else
// an IANA name). Start == End is never.
type ActiveHours struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	Timezone string `json:"timezone"`
}

// Limits of the heartbeat keys: a prompt is a message, not a document.
const (
	MaxHeartbeatPrompt  = 64 << 10
	MaxHeartbeatAck     = 100_000
	MaxHeartbeatTimeout = 24 * 3600
	maxShortText        = 512
)

var (
	heartbeatDirect = []string{"allow", "block"}
	clockRE         = regexp.MustCompile(`^(?:([01]\d|2[0-3]):([0-5]\d)|24:00)$`)
)

// HeartbeatEvery reads a heartbeat's every: "" is the default (30 min), a
// bare number is minutes, 0 turns the cadence off, and anything shorter
// than a second is refused (seconds are allowed, for tests).
func HeartbeatEvery(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 30 * time.Minute, nil
	}
	d, err := ParseDuration(s, time.Minute)
	if err != nil {
		return 0, err
	}
	if d != 0 && d < time.Second {
		return 0, fmt.Errorf("heartbeat every %q is shorter than a second: use 0m to turn the cadence off", s)
	}
	return d, nil
}

// Minutes are the window's start and end in minutes after midnight
// (end up to 1440), or an error naming the field that is not "HH:MM".
func (h ActiveHours) Minutes() (start, end int, err error) {
	start, ok := clockMinutes(h.Start)
	if !ok || start == 24*60 {
		return 0, 0, &clockError{"activeHours.start", fmt.Sprintf("expected a time from 00:00 to 23:59 (got %q)", h.Start)}
	}
	end, ok = clockMinutes(h.End)
	if !ok {
		return 0, 0, &clockError{"activeHours.end", fmt.Sprintf("expected a time from 00:00 to 24:00 (got %q)", h.End)}
	}
	return start, end, nil
}

// clockError is a bad activeHours time, with the key it is in.
type clockError struct{ field, msg string }

func (e *clockError) Error() string { return e.field + ": " + e.msg }

func clockMinutes(s string) (int, bool) {
	if !clockRE.MatchString(s) {
		return 0, false
	}
	h, _ := strconv.Atoi(s[:2])
	m, _ := strconv.Atoi(s[3:])
	return h*60 + m, true
}

// Location is the window's time zone: "" and "user" are userTZ
// (agents.defaults.userTimezone; the host's when unset), "local" the
// host's.
func (h ActiveHours) Location(userTZ string) (*time.Location, error) {
	switch tz := strings.TrimSpace(h.Timezone); tz {
	case "", "user":
		loc, err := UserLocation(userTZ)
		if loc == nil && err == nil {
			loc = time.Local
		}
		return loc, err
	case "local":
		return time.Local, nil
	default:
		loc, err := UserLocation(tz)
		if err != nil {
			return nil, fmt.Errorf("activeHours.timezone: %w", err)
		}
		return loc, nil
	}
}

// heartbeat checks one heartbeat block at path.
func (k *checker) heartbeat(path string, h *Heartbeat, c *Config) {
	if h == nil {
		return
	}
	if _, err := HeartbeatEvery(h.Every); err != nil {
		k.fail(path+".every", err.Error())
	}
	if len(h.Prompt) > MaxHeartbeatPrompt {
		k.fail(path+".prompt", fmt.Sprintf("longer than %d bytes", MaxHeartbeatPrompt))
	}
	switch t := h.Target; {
	case t == "", t == "last", t == "none", t == "owner":
	case !hasChannel(c, t):
		k.fail(path+".target", fmt.Sprintf("expected last, none, owner or a configured channel id (got %q)", t))
	}
	k.shortText(path+".to", h.To)
	k.shortText(path+".accountId", h.AccountID)
	k.shortText(path+".session", h.Session)
	k.shortText(path+".model", h.Model)
	k.oneOf(path+".directPolicy", h.DirectPolicy, heartbeatDirect)
	if a := h.AckMaxChars; a != nil && (*a < 0 || *a > MaxHeartbeatAck) {
		k.fail(path+".ackMaxChars", fmt.Sprintf("expected an integer from 0 to %d (got %d)", MaxHeartbeatAck, *a))
	}
	k.between(path+".timeoutSeconds", h.TimeoutSeconds, MaxHeartbeatTimeout)
	if a := h.ActiveHours; a != nil {
		if _, _, err := a.Minutes(); err != nil {
			k.fail(path+"."+err.(*clockError).field, err.(*clockError).msg)
		}
		// "user" is agents.defaults.userTimezone, checked there.
		if tz := strings.TrimSpace(a.Timezone); tz != "" && tz != "user" && tz != "local" {
			if _, err := UserLocation(tz); err != nil {
				k.fail(path+".activeHours.timezone", err.Error())
			}
		}
	}
}

// hasChannel reports whether channels.<id> is configured.
func hasChannel(c *Config, id string) bool {
	_, ok := c.Channels[id]
	return ok && id != "defaults"
}

// shortText checks a one-line value: an id, a recipient, a key.
func (k *checker) shortText(path, s string) {
	switch {
	case len(s) > maxShortText:
		k.fail(path, fmt.Sprintf("longer than %d bytes", maxShortText))
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		k.fail(path, "contains a control character")
	}
}
