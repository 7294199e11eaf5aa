package automation

import (
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/channel/format"
	"talon/internal/config"
)

// HeartbeatPrompt is the legacy default heartbeat prompt, sent verbatim
// as the user message when the config sets none (§9.1).
const HeartbeatPrompt = "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. " +
	"Do not infer or repeat old tasks from prior chats. If nothing needs attention, reply HEARTBEAT_OK."

// Heartbeat defaults Talon applies where the config is silent.
const (
	DefaultAckMaxChars = 300
	// DefaultHeartbeatTarget is Talon's: a heartbeat delivers nowhere
	// until the operator names a target.
	DefaultHeartbeatTarget = "none"
	maxHeartbeatTimeout    = 600 * time.Second
)

// HeartbeatSettings are one agent's heartbeat settings, its block merged
// key by key over agents.defaults.heartbeat, defaults filled in.
type HeartbeatSettings struct {
	AgentID string
	// Every is the cadence; 0 means no scheduled heartbeats (wakes
	// still run one).
	Every        time.Duration
	Prompt       string
	Target       string // last, none, owner or a channel id
	To           string
	AccountID    string
	DirectPolicy string // allow or block
	// Session is the run's session key; "" is the agent's main session.
	Session          string
	Model            string
	AckMaxChars      int
	ActiveHours      *config.ActiveHours
	LightContext     bool
	IsolatedSession  bool
	IncludeReasoning bool
	// Timeout bounds one heartbeat turn: the block's timeoutSeconds,
	// else agents.defaults.timeoutSeconds, else min(every, 10 min).
	Timeout time.Duration
}

// HeartbeatAgents is R9.1: when any agents.list entry has a heartbeat
// block only those agents run heartbeats, otherwise only the default
// agent; each with its merged settings, in list order. cfg is a config
// that passed validation: an every that does not parse (which validation
// refuses) turns that agent's cadence off rather than guess one.
func HeartbeatAgents(cfg *config.Config) []HeartbeatSettings {
	if cfg == nil {
		cfg = &config.Config{}
	}
	var out []HeartbeatSettings
	seen := map[string]bool{}
	for _, a := range cfg.Agents.List {
		id := config.NormalizeAgentID(a.ID)
		if a.Heartbeat == nil || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, mergeHeartbeat(cfg, id, a.Heartbeat))
	}
	if out == nil {
		id := cfg.DefaultAgentID()
		var own *config.Heartbeat
		if a, _ := cfg.Agent(id); a != nil {
			own = a.Heartbeat
		}
		out = []HeartbeatSettings{mergeHeartbeat(cfg, id, own)}
	}
	return out
}

// ScheduledHeartbeats are the heartbeats that run on a cadence: none
// without a heartbeat block anywhere (Talon's default, where OpenClaw
// runs one every 30 minutes for the default agent), else R9.1's agents
// whose every is above zero.
func ScheduledHeartbeats(cfg *config.Config) []HeartbeatSettings {
	if cfg == nil || !hasHeartbeatBlock(cfg) {
		return nil
	}
	var out []HeartbeatSettings
	for _, hs := range HeartbeatAgents(cfg) {
		if hs.Every > 0 {
			out = append(out, hs)
		}
	}
	return out
}

// HasHeartbeat says agentID runs scheduled heartbeats: only then does its
// HEARTBEAT.md go into its turns' prompts (R9.3).
func HasHeartbeat(cfg *config.Config, agentID string) bool {
	id := config.NormalizeAgentID(agentID)
	for _, hs := range ScheduledHeartbeats(cfg) {
		if hs.AgentID == id {
			return true
		}
	}
	return false
}

// hasHeartbeatBlock says the config asks for heartbeats at all.
func hasHeartbeatBlock(cfg *config.Config) bool {
	if cfg.Agents.Defaults.Heartbeat != nil {
		return true
	}
	for _, a := range cfg.Agents.List {
		if a.Heartbeat != nil {
			return true
		}
	}
	return false
}

// mergeHeartbeat lays own over agents.defaults.heartbeat and fills the
// defaults.
func mergeHeartbeat(cfg *config.Config, id string, own *config.Heartbeat) HeartbeatSettings {
	var h config.Heartbeat
	for _, b := range []*config.Heartbeat{cfg.Agents.Defaults.Heartbeat, own} {
		if b != nil {
			overlay(&h, b)
		}
	}
	s := HeartbeatSettings{
		AgentID: id, Prompt: h.Prompt, Target: h.Target, To: h.To, AccountID: h.AccountID,
		DirectPolicy: h.DirectPolicy, Session: h.Session, Model: h.Model, ActiveHours: h.ActiveHours,
		LightContext: isTrue(h.LightContext), IsolatedSession: isTrue(h.IsolatedSession),
		IncludeReasoning: isTrue(h.IncludeReasoning), AckMaxChars: DefaultAckMaxChars,
	}
	if every, err := config.HeartbeatEvery(h.Every); err == nil {
		s.Every = every
	}
	if strings.TrimSpace(s.Prompt) == "" {
		s.Prompt = HeartbeatPrompt
	}
	if s.Target == "" {
		s.Target = DefaultHeartbeatTarget
	}
	if s.DirectPolicy == "" {
		s.DirectPolicy = "allow"
	}
	if h.AckMaxChars != nil {
		s.AckMaxChars = *h.AckMaxChars
	}
	switch {
	case h.TimeoutSeconds != nil:
		s.Timeout = time.Duration(*h.TimeoutSeconds) * time.Second
	case cfg.Agents.Defaults.TimeoutSeconds != nil && *cfg.Agents.Defaults.TimeoutSeconds > 0:
		s.Timeout = time.Duration(*cfg.Agents.Defaults.TimeoutSeconds) * time.Second
	case s.Every > 0:
		s.Timeout = min(s.Every, maxHeartbeatTimeout)
	default:
		s.Timeout = maxHeartbeatTimeout
	}
	return s
}

// overlay copies the keys b sets onto h.
func overlay(h, b *config.Heartbeat) {
	for _, f := range []struct{ dst, src *string }{{&h.Every, &b.Every}, {&h.Prompt, &b.Prompt}, {&h.Target, &b.Target},
		{&h.To, &b.To}, {&h.AccountID, &b.AccountID}, {&h.DirectPolicy, &b.DirectPolicy}, {&h.Session, &b.Session}, {&h.Model, &b.Model}} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	for _, f := range []struct{ dst, src **bool }{{&h.LightContext, &b.LightContext}, {&h.IsolatedSession, &b.IsolatedSession},
		{&h.IncludeReasoning, &b.IncludeReasoning}} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	if b.AckMaxChars != nil {
		h.AckMaxChars = b.AckMaxChars
	}
	if b.TimeoutSeconds != nil {
		h.TimeoutSeconds = b.TimeoutSeconds
	}
	if b.ActiveHours != nil {
		h.ActiveHours = b.ActiveHours
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// Kinds of heartbeat reply (R9.4, R9.7's statuses for the first two).
const (
	HeartbeatOKEmpty = "ok-empty" // no text at all
	HeartbeatOKToken = "ok-token" // HEARTBEAT_OK or NO_REPLY, with at most ackMaxChars beside it
	HeartbeatAlert   = "alert"    // something to deliver
)

var (
	htmlTagRE = regexp.MustCompile(`<[^>]*>`)
	nbspRE    = regexp.MustCompile(`(?i)&nbsp;`)
	spacesRE  = regexp.MustCompile(`\s+`)
)

// HeartbeatReply classifies a heartbeat turn's final text (R9.4) and
// gives the text to deliver for an alert: the reply with HEARTBEAT_OK
// stripped from its edges (format.StripHeartbeat, the one rule for
// that). The token counts only at the start or end, also when wrapped in
// HTML tags, &nbsp; or emphasis marks; what is left, whitespace runs
// collapsed, is measured against ackMaxChars. An alert is delivered with
// its line breaks: only the measure collapses them.
func HeartbeatReply(text string, ackMaxChars int) (kind, deliver string) {
	trimmed := strings.TrimSpace(text)
	switch {
	case trimmed == "":
		return HeartbeatOKEmpty, ""
	case format.IsSilent(trimmed):
		return HeartbeatOKToken, ""
	case !strings.Contains(trimmed, format.HeartbeatToken):
		return HeartbeatAlert, trimmed
	}
	rest, stripped := stripToken(trimmed)
	if !stripped || rest == "" {
		normal := strings.Trim(nbspRE.ReplaceAllString(htmlTagRE.ReplaceAllString(trimmed, " "), " "), " \t\r\n*`~_")
		rest, stripped = stripToken(normal)
	}
	if !stripped {
		return HeartbeatAlert, trimmed
	}
	measured := spacesRE.ReplaceAllString(rest, " ")
	if measured == "" || utf8.RuneCountInString(measured) <= max(ackMaxChars, 0) {
		return HeartbeatOKToken, ""
	}
	return HeartbeatAlert, rest
}

func stripToken(s string) (string, bool) {
	out := strings.TrimSpace(format.StripHeartbeat(s))
	return out, out != s
}

var (
	checklistHeadingRE = regexp.MustCompile(`^#+(\s|$)`)
	checklistStubRE    = regexp.MustCompile(`^[-*+]\s*(\[[\sXx]?\]\s*)?$`)
	checklistFenceRE   = regexp.MustCompile("^```[A-Za-z0-9_-]*$")
)

// EmptyChecklist says HEARTBEAT.md's content is effectively empty (R9.3):
// only blank lines, # headings, HTML comments, empty list items ("- ",
// "- [ ]") and code fence markers. Such a file skips the heartbeat; a
// missing file is not content and is the caller's to tell apart.
func EmptyChecklist(md string) bool {
	inComment := false
	for _, line := range strings.Split(md, "\n") {
		line, inComment = dropComments(line, inComment)
		t := strings.TrimSpace(line)
		if t == "" || checklistHeadingRE.MatchString(t) || checklistStubRE.MatchString(t) || checklistFenceRE.MatchString(t) {
			continue
		}
		return false
	}
	return true
}

// dropComments removes the HTML comments that open at the start of a line
// (after blanks) or continue from an earlier one, as OpenClaw does: a
// comment after text is text.
func dropComments(line string, inComment bool) (string, bool) {
	for {
		if !inComment {
			t := strings.TrimLeft(line, " \t")
			if !strings.HasPrefix(t, "<!--") {
				return line, false
			}
			line = t[len("<!--"):]
		}
		end := strings.Index(line, "-->")
		if end < 0 {
			return "", true
		}
		line, inComment = line[end+len("-->"):], false
	}
}

// InActiveHours says t is inside activeHours (§9.1): from start
// (inclusive) to end (exclusive), across midnight when end is earlier,
// never when they are equal, on the clock of h's zone; userTZ is
// agents.defaults.userTimezone ("" the host's zone).
func InActiveHours(h config.ActiveHours, t time.Time, userTZ string) (bool, error) {
	start, end, err := h.Minutes()
	if err != nil {
		return false, err
	}
	if start == end {
		return false, nil
	}
	loc, err := h.Location(userTZ)
	if err != nil {
		return false, err
	}
	local := t.In(loc)
	now := local.Hour()*60 + local.Minute()
	if end > start {
		return now >= start && now < end, nil
	}
	return now >= start || now < end, nil
}
