package automation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/config"
)

// Bounds on what a tenant may store: jobs are input from an untrusted
// tenant (and its model), so every length and count has a ceiling.
const (
	MaxJobs        = 1000      // jobs per tenant
	MaxName        = 200       // characters of a job name
	MaxText        = 64 << 10  // bytes of a description, text or message
	MaxKey         = 512       // bytes of a session key, target or id
	MaxURL         = 2048      // bytes of a webhook URL
	MaxList        = 64        // entries of fallbacks or toolsAllow
	MaxJobJSON     = 256 << 10 // bytes of one job or patch as JSON
	MaxTimeoutSecs = 24 * 3600 // an agent turn's timeoutSeconds
	MaxStaggerMs   = 24 * 3600 * 1000
	MaxAlertAfter  = 1000
)

// Session targets and wake modes (§3.2).
const (
	TargetMain     = "main"
	TargetIsolated = "isolated"
	TargetCurrent  = "current"
	// TargetSessionPrefix starts a named persistent session target.
	TargetSessionPrefix = "session:"

	WakeNow           = "now"
	WakeNextHeartbeat = "next-heartbeat"
)

// platforms are chat platform ids a delivery.to may be prefixed with
// ("telegram:123"), besides the configured channel ids.
var platforms = []string{"telegram", "slack", "discord", "whatsapp", "signal", "imessage", "msteams",
	"matrix", "googlechat", "mattermost", "line", "irc"}

// DecodeJob reads a new job as cron.add and the cron tool send it: the
// fields of §3 (no others), with OpenClaw's defaults for the two booleans
// whose absence means true — enabled, and deleteAfterRun of an "at" job —
// which a decoded Job cannot tell from false. The id, timestamps, state,
// revision and creator are the server's and are refused: a creator
// taken from the request would let an agent claim "operator" and leave
// the cron tool's scope (R7.3).
func DecodeJob(data []byte) (Job, error) {
	var j Job
	if len(data) > MaxJobJSON {
		return j, fmt.Errorf("job: larger than %d bytes", MaxJobJSON)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil || members == nil {
		return j, errors.New("job: expected a JSON object")
	}
	for _, k := range []string{"id", "createdAtMs", "updatedAtMs", "state", "configRevision", "creator"} {
		if _, ok := members[k]; ok {
			return j, fmt.Errorf("%s: set by the server, not by the caller", k)
		}
	}
	if err := strictUnmarshal(data, &j); err != nil {
		return j, fieldError(err)
	}
	if !present(members, "enabled") {
		j.Enabled = true
	}
	if !present(members, "deleteAfterRun") && j.Schedule.Kind == KindAt {
		j.DeleteAfterRun = true
	}
	return j, nil
}

// present says a member is there and not null.
func present(m map[string]json.RawMessage, k string) bool {
	v, ok := m[k]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// strictUnmarshal decodes refusing unknown fields, with the field named.
func strictUnmarshal(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// Normalize fills a new job's defaults: trimmed texts, sessionTarget by
// payload kind (main for systemEvent, isolated for agentTurn), wakeMode
// "now", delivery announce for isolated and current agent turns, the
// resolved zone of a cron schedule (defaultTZ, else UTC — never left to
// the host at run time: better-item 2), a top-of-hour schedule's default
// stagger written out, an every schedule's anchor, and the timestamps.
// Enabled and deleteAfterRun are DecodeJob's (their absence is not
// visible here). Normalize does not validate: call Validate after it.
func Normalize(j *Job, now time.Time, defaultTZ string) {
	j.Name = strings.TrimSpace(j.Name)
	j.AgentID = strings.TrimSpace(j.AgentID)
	j.SessionKey = strings.TrimSpace(j.SessionKey)
	j.SessionTarget = strings.TrimSpace(j.SessionTarget)
	if j.SessionTarget == "" {
		switch j.Payload.Kind {
		case PayloadSystemEvent:
			j.SessionTarget = TargetMain
		case PayloadAgentTurn:
			j.SessionTarget = TargetIsolated
		}
	}
	if j.WakeMode == "" {
		j.WakeMode = WakeNow
	}
	if j.Delivery == nil && j.Payload.Kind == PayloadAgentTurn &&
		(j.SessionTarget == TargetIsolated || j.SessionTarget == TargetCurrent) {
		j.Delivery = &Delivery{Mode: DeliverAnnounce}
	}
	ms := now.UnixMilli()
	if j.CreatedAtMs == 0 {
		j.CreatedAtMs = ms
	}
	if j.UpdatedAtMs == 0 {
		j.UpdatedAtMs = ms
	}
	normalizeSchedule(&j.Schedule, j.CreatedAtMs, defaultTZ)
}

// normalizeSchedule stores what a schedule would otherwise leave to a
// default at run time: the zone, the stagger, the anchor.
func normalizeSchedule(s *Schedule, createdAtMs int64, defaultTZ string) {
	s.Kind = strings.TrimSpace(s.Kind)
	s.Expr = strings.TrimSpace(s.Expr)
	s.TZ = strings.TrimSpace(s.TZ)
	switch s.Kind {
	case KindCron:
		if s.TZ == "" {
			s.TZ = strings.TrimSpace(defaultTZ)
		}
		if s.TZ == "" {
			s.TZ = "UTC"
		}
		if s.StaggerMs == nil && topOfHour(s.Expr) {
			w := DefaultStagger.Milliseconds()
			s.StaggerMs = &w
		}
	case KindEvery:
		if s.AnchorMs == nil {
			a := createdAtMs
			s.AnchorMs = &a
		}
	}
}

// Checks is what Validate needs from the tenant's config and the
// gateway: the ids that exist and the policies that live above this
// package.
type Checks struct {
	// Agents are the tenant's agent ids; a job's agentId must be one.
	Agents []string
	// Channels are the tenant's configured channel ids.
	Channels []string
	// WebhookURL checks a webhook URL against the SSRF policy
	// (internal/netguard with cron.webhookSsrfPolicy); nil checks the
	// URL's form only.
	WebhookURL func(string) error
	// Thinking checks a payload's thinking level for its model; nil
	// checks only that it is short.
	Thinking func(model, level string) error
}

// Validate checks a job completely (§3, R3.1–R3.7, the shapes of R3.13,
// R3.6's unsupported kinds), returning the first problem with the field
// it is about: "schedule.expr: …".
func Validate(j Job, c Checks) error {
	for _, check := range []func(Job, Checks) error{
		validateHead, validateSchedule, validatePayload, validateTarget, validateDelivery, validateFailureAlert,
	} {
		if err := check(j, c); err != nil {
			return err
		}
	}
	return nil
}

func validateHead(j Job, c Checks) error {
	switch n := utf8.RuneCountInString(j.Name); {
	case strings.TrimSpace(j.Name) == "":
		return errors.New("name: required")
	case n > MaxName:
		return fmt.Errorf("name: longer than %d characters", MaxName)
	case strings.ContainsAny(j.Name, "\r\n\x00"):
		return errors.New("name: must be one line")
	}
	if err := text("description", j.Description, MaxText); err != nil {
		return err
	}
	if j.AgentID != "" {
		id := config.NormalizeAgentID(j.AgentID)
		if !slices.ContainsFunc(c.Agents, func(a string) bool { return config.NormalizeAgentID(a) == id }) {
			return fmt.Errorf("agentId: unknown agent %q", j.AgentID)
		}
	}
	if err := text("sessionKey", j.SessionKey, MaxKey); err != nil {
		return err
	}
	return text("creator", j.Creator, MaxKey)
}

// text checks a string's size and that it is UTF-8 without NUL.
func text(field, s string, limit int) error {
	switch {
	case len(s) > limit:
		return fmt.Errorf("%s: longer than %d bytes", field, limit)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s: not valid UTF-8", field)
	case strings.ContainsRune(s, 0):
		return fmt.Errorf("%s: contains a NUL character", field)
	}
	return nil
}

func validateSchedule(j Job, _ Checks) error {
	s := j.Schedule
	var stray []string
	add := func(set bool, name string) {
		if set {
			stray = append(stray, name)
		}
	}
	switch s.Kind {
	case KindAt:
		if _, err := ParseAt(s.At); err != nil {
			return fmt.Errorf("schedule.at: %w", err)
		}
		add(s.EveryMs != 0, "everyMs")
		add(s.AnchorMs != nil, "anchorMs")
		add(s.Expr != "", "expr")
		add(s.TZ != "", "tz")
		add(s.StaggerMs != nil, "staggerMs")
	case KindEvery:
		if s.EveryMs < 1 || s.EveryMs > MaxEveryMs {
			return fmt.Errorf("schedule.everyMs: expected 1 to %d milliseconds, got %d", int64(MaxEveryMs), s.EveryMs)
		}
		if s.AnchorMs != nil && (*s.AnchorMs < 0 || *s.AnchorMs > maxAtMs) {
			return fmt.Errorf("schedule.anchorMs: expected Unix milliseconds, got %d", *s.AnchorMs)
		}
		add(s.At != "", "at")
		add(s.Expr != "", "expr")
		add(s.TZ != "", "tz")
		add(s.StaggerMs != nil, "staggerMs")
	case KindCron:
		if _, err := parseCron(s.Expr); err != nil {
			return fmt.Errorf("schedule.expr: %w", err)
		}
		// Normalize stores the resolved zone; a job without one would
		// run at a guessed time (better-item 2).
		if s.TZ == "" {
			return errors.New("schedule.tz: required: Normalize stores the resolved zone")
		}
		if _, err := Zone(s.TZ); err != nil {
			return fmt.Errorf("schedule.tz: %w", err)
		}
		if st := s.StaggerMs; st != nil && (*st < 0 || *st > MaxStaggerMs) {
			return fmt.Errorf("schedule.staggerMs: expected 0 to %d, got %d", MaxStaggerMs, *st)
		}
		add(s.At != "", "at")
		add(s.EveryMs != 0, "everyMs")
		add(s.AnchorMs != nil, "anchorMs")
		// An expression that parses but never matches (30 February).
		if _, _, err := Next(j, time.UnixMilli(j.CreatedAtMs)); err != nil {
			return err
		}
	case "":
		return errors.New("schedule.kind: required (at, every or cron)")
	default:
		return fmt.Errorf("schedule.kind: unsupported schedule kind %q (Talon runs at, every and cron)", s.Kind)
	}
	if len(stray) > 0 {
		return fmt.Errorf("schedule.%s: not valid with kind %q", stray[0], s.Kind)
	}
	return nil
}

func validatePayload(j Job, c Checks) error {
	p := j.Payload
	switch p.Kind {
	case PayloadSystemEvent:
		if strings.TrimSpace(p.Text) == "" {
			return errors.New("payload.text: required for a systemEvent")
		}
		if p.Message != "" || p.Model != "" || p.Fallbacks != nil || p.Thinking != "" || p.TimeoutSeconds != nil ||
			p.LightContext || p.ToolsAllow != nil || p.AllowUnsafeExternalContent {
			return errors.New("payload: a systemEvent takes only text; message, model and the other turn settings belong to agentTurn")
		}
		return text("payload.text", p.Text, MaxText)
	case PayloadAgentTurn:
		return validateTurn(p, c)
	case "":
		return errors.New("payload.kind: required (systemEvent or agentTurn)")
	}
	return fmt.Errorf("payload.kind: unsupported payload kind %q (Talon runs systemEvent and agentTurn)", p.Kind)
}

func validateTurn(p Payload, c Checks) error {
	if strings.TrimSpace(p.Message) == "" {
		return errors.New("payload.message: required for an agentTurn")
	}
	if p.Text != "" {
		return errors.New("payload.text: an agentTurn takes message, not text")
	}
	if err := text("payload.message", p.Message, MaxText); err != nil {
		return err
	}
	if p.Model != "" {
		if _, err := config.ParseModelRef(p.Model); err != nil {
			return fmt.Errorf("payload.model: %w", err)
		}
	}
	if len(p.Fallbacks) > MaxList {
		return fmt.Errorf("payload.fallbacks: more than %d models", MaxList)
	}
	for i, f := range p.Fallbacks {
		if _, err := config.ParseModelRef(f); err != nil {
			return fmt.Errorf("payload.fallbacks[%d]: %w", i, err)
		}
	}
	if err := text("payload.thinking", p.Thinking, 32); err != nil {
		return err
	}
	if p.Thinking != "" && c.Thinking != nil {
		if err := c.Thinking(p.Model, p.Thinking); err != nil {
			return fmt.Errorf("payload.thinking: %w", err)
		}
	}
	if t := p.TimeoutSeconds; t != nil && (*t < 0 || *t > MaxTimeoutSecs) {
		return fmt.Errorf("payload.timeoutSeconds: expected 0 (none) to %d, got %d", MaxTimeoutSecs, *t)
	}
	if len(p.ToolsAllow) > MaxList {
		return fmt.Errorf("payload.toolsAllow: more than %d tools", MaxList)
	}
	for i, t := range p.ToolsAllow {
		if strings.TrimSpace(t) == "" || len(t) > 128 {
			return fmt.Errorf("payload.toolsAllow[%d]: expected a tool name of 1 to 128 bytes", i)
		}
	}
	return nil
}

func validateTarget(j Job, _ Checks) error {
	t, kind := j.SessionTarget, j.Payload.Kind
	switch {
	case t == TargetMain:
		if kind != PayloadSystemEvent {
			return errors.New("sessionTarget: main runs systemEvent payloads only; use isolated, current or session:<key> for an agentTurn")
		}
	case t == TargetIsolated || t == TargetCurrent:
		if kind != PayloadAgentTurn {
			return fmt.Errorf("sessionTarget: %s runs agentTurn payloads only; use main or session:<key> for a systemEvent", t)
		}
	case strings.HasPrefix(t, TargetSessionPrefix):
		key := strings.TrimPrefix(t, TargetSessionPrefix)
		if strings.TrimSpace(key) == "" {
			return errors.New("sessionTarget: session:<key> needs a key")
		}
		if err := text("sessionTarget", t, MaxKey); err != nil {
			return err
		}
	case t == "":
		return errors.New("sessionTarget: required (main, isolated, current or session:<key>)")
	default:
		return fmt.Errorf("sessionTarget: expected main, isolated, current or session:<key>, got %q", t)
	}
	switch j.WakeMode {
	case "", WakeNow, WakeNextHeartbeat:
		return nil
	}
	return fmt.Errorf("wakeMode: expected now or next-heartbeat, got %q", j.WakeMode)
}

func validateDelivery(j Job, c Checks) error {
	d := j.Delivery
	if d == nil {
		return nil
	}
	switch d.Mode {
	case DeliverNone:
	case DeliverWebhook:
		if err := webhookURL("delivery.to", d.To, c); err != nil {
			return err
		}
	case DeliverAnnounce:
		if j.SessionTarget == TargetMain {
			return errors.New("delivery.mode: a main-session job delivers through the session's own route; announce is refused (webhook or none are allowed)")
		}
		if err := announceRoute("delivery", d.Channel, d.To, d.AccountID, c); err != nil {
			return err
		}
		if j.SessionTarget == TargetIsolated && len(c.Channels) > 1 && !routeDecided(d.Channel, d.To, c) {
			return fmt.Errorf("delivery.channel: several channels are configured (%s); name one, or prefix delivery.to with it",
				strings.Join(c.Channels, ", "))
		}
	case "":
		return errors.New("delivery.mode: required (announce, webhook or none)")
	default:
		return fmt.Errorf("delivery.mode: expected announce, webhook or none, got %q", d.Mode)
	}
	if err := threadID(d.ThreadID); err != nil {
		return err
	}
	if fd := d.FailureDestination; fd != nil {
		if err := announceRoute("delivery.failureDestination", fd.Channel, fd.To, fd.AccountID, c); err != nil {
			return err
		}
	}
	return nil
}

// announceRoute checks a chat route's shape (R3.13): a configured
// channel or "last"/empty, a recipient whose provider prefix agrees with
// an explicit channel.
func announceRoute(at, channel, to, account string, c Checks) error {
	if channel != "" && channel != "last" && !slices.Contains(c.Channels, channel) {
		if len(c.Channels) == 0 {
			return fmt.Errorf("%s.channel: unknown channel %q (no channel is configured)", at, channel)
		}
		return fmt.Errorf("%s.channel: unknown channel %q (configured: %s)", at, channel, strings.Join(c.Channels, ", "))
	}
	for _, f := range []struct{ name, v string }{{"to", to}, {"accountId", account}} {
		if err := text(at+"."+f.name, f.v, MaxKey); err != nil {
			return err
		}
	}
	if p := toPrefix(to, c); p != "" && channel != "" && channel != "last" && p != channel {
		return fmt.Errorf("%s.to: %q is addressed to %s but channel is %s", at, to, p, channel)
	}
	return nil
}

// toPrefix is the channel a recipient names before its first colon
// ("telegram:123"), or "".
func toPrefix(to string, c Checks) string {
	p, _, ok := strings.Cut(to, ":")
	if ok && (slices.Contains(c.Channels, p) || slices.Contains(platforms, p)) {
		return p
	}
	return ""
}

// routeDecided says a delivery names its channel, itself or by prefix.
func routeDecided(channel, to string, c Checks) bool {
	return (channel != "" && channel != "last") || toPrefix(to, c) != ""
}

// threadID accepts a number or a short string (a Telegram topic or a
// Slack thread).
func threadID(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var n json.Number
	var s string
	if json.Unmarshal(raw, &n) == nil || (json.Unmarshal(raw, &s) == nil && len(s) <= MaxKey) {
		return nil
	}
	return errors.New("delivery.threadId: expected a number or a string")
}

// webhookURL checks a webhook URL: http or https, a host, no embedded
// credentials (§3.3), then the SSRF policy when the caller has one.
func webhookURL(at, raw string, c Checks) error {
	if len(raw) > MaxURL {
		return fmt.Errorf("%s: URL longer than %d bytes", at, MaxURL)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case strings.TrimSpace(raw) == "":
		return fmt.Errorf("%s: the webhook URL is required", at)
	case err != nil:
		return fmt.Errorf("%s: not a URL: %w", at, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s: expected an http:// or https:// URL", at)
	case u.Hostname() == "":
		return fmt.Errorf("%s: the URL has no host", at)
	case u.User != nil:
		return fmt.Errorf("%s: credentials in the URL are refused; use cron.webhookToken", at)
	}
	if c.WebhookURL != nil {
		if err := c.WebhookURL(raw); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
	}
	return nil
}

func validateFailureAlert(j Job, c Checks) error {
	a := j.FailureAlert
	if a == nil || a.Disabled {
		return nil
	}
	if a.After < 0 || a.After > MaxAlertAfter {
		return fmt.Errorf("failureAlert.after: expected 1 to %d, got %d", MaxAlertAfter, a.After)
	}
	if a.CooldownMs < 0 {
		return fmt.Errorf("failureAlert.cooldownMs: expected 0 or more, got %d", a.CooldownMs)
	}
	switch a.Mode {
	case "", DeliverAnnounce:
		return announceRoute("failureAlert", a.Channel, a.To, a.AccountID, c)
	case DeliverWebhook:
		return webhookURL("failureAlert.to", a.To, c)
	}
	return fmt.Errorf("failureAlert.mode: expected announce or webhook, got %q", a.Mode)
}

// MarshalJSON writes failureAlert: false for a disabled alert.
func (a FailureAlert) MarshalJSON() ([]byte, error) {
	if a.Disabled {
		return []byte("false"), nil
	}
	type plain FailureAlert
	return json.Marshal(plain(a))
}

// UnmarshalJSON reads failureAlert: false as Disabled, or the object;
// true is refused (there is nothing to turn on without settings).
func (a *FailureAlert) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("false")) {
		*a = FailureAlert{Disabled: true}
		return nil
	}
	if len(data) == 0 || data[0] != '{' {
		return errors.New("failureAlert: expected false or an object")
	}
	type plain FailureAlert
	var p plain
	if err := strictUnmarshal(data, &p); err != nil {
		return fmt.Errorf("failureAlert: %w", err)
	}
	*a = FailureAlert(p)
	return nil
}

// Reschedule resets a job's schedule state after it was created, its
// schedule or enabled flag changed, or it was re-enabled (R4.1, R5.6,
// R5.9): counters and the auto-disable reason are cleared and the next
// run is computed from now — none when the job is disabled.
func Reschedule(j *Job, now time.Time) error {
	st := &j.State
	st.NextRunAtMs, st.AutoDisabled = nil, nil
	st.ConsecutiveErrors, st.ConsecutiveSkipped, st.ScheduleErrors = 0, 0, 0
	if !j.Enabled {
		return nil
	}
	t, ok, err := Next(*j, now)
	if err != nil {
		return err
	}
	if ok {
		ms := t.UnixMilli()
		st.NextRunAtMs = &ms
	}
	return nil
}
