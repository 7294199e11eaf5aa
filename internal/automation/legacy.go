package automation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file reads OpenClaw's legacy cron store (spec R4.2): jobs.json,
// jobs-state.json, jobs-quarantine.json and runs/<jobId>.jsonl, as bytes
// the caller read. It is the one place that knows OpenClaw's older
// spellings (a bare array of jobs, schedule and payload fields at the top
// of a job, delivery hints inside the payload, the state in a side file).
// Nothing it is given is dropped: a row it cannot make a job or a run of
// is returned as Quarantined, with why, and the rows after it still count.

// MaxJobIDLen bounds a job id (it names a run-log file upstream, and is
// a key here).
const MaxJobIDLen = 128

// LegacyFiles are the legacy store's files; nil for one that is absent.
type LegacyFiles struct {
	Jobs       []byte // jobs.json
	State      []byte // jobs-state.json
	Quarantine []byte // jobs-quarantine.json
	// Runs maps a job id (a runs/<jobId>.jsonl file's base name) to the
	// file's content.
	Runs map[string][]byte
}

// LegacyOptions are what the parser cannot know by itself.
type LegacyOptions struct {
	// NowMs stamps what the files leave undated (a job's createdAtMs, a
	// quarantined row).
	NowMs int64
	// Check, when set, is run on each job read: it may complete the job
	// (Normalize) and refuse it (Validate), and a job it refuses is
	// quarantined with its error rather than imported.
	Check func(*Job) error
}

// Quarantined is a row an import could not use, kept for review.
type Quarantined struct {
	// Source names the row: "jobs.json[3]", "jobs-state.json[<id>]",
	// "jobs-quarantine.json[0]", "runs/<id>.jsonl:12".
	Source string `json:"source"`
	Reason string `json:"reason"`
	// Raw is the row as the file had it (the whole file when it was not
	// JSON at all).
	Raw  string `json:"raw"`
	AtMs int64  `json:"quarantinedAtMs"`
}

// LegacyImport is what ParseLegacy read.
type LegacyImport struct {
	Jobs       []Job
	Runs       []Run
	Quarantine []Quarantined
}

// ParseLegacy reads the legacy files. It never fails: what it cannot read
// ends in Quarantine.
func ParseLegacy(f LegacyFiles, o LegacyOptions) LegacyImport {
	var out LegacyImport
	q := func(source, reason string, raw []byte) {
		out.Quarantine = append(out.Quarantine, Quarantined{Source: source, Reason: reason, Raw: string(raw), AtMs: o.NowMs})
	}
	states := legacyStates(f.State, q)
	if f.Jobs != nil {
		rows, err := legacyJobRows(f.Jobs)
		if err != nil {
			q("jobs.json", err.Error(), f.Jobs)
		}
		seen := map[string]bool{}
		for i, row := range rows {
			source := fmt.Sprintf("jobs.json[%d]", i)
			j, err := legacyJob(row, states, o, q)
			switch {
			case err == nil && seen[j.ID]:
				err = fmt.Errorf("duplicate job id %q", j.ID)
			case err == nil && o.Check != nil:
				err = o.Check(&j)
			}
			if err != nil {
				q(source, err.Error(), row)
				continue
			}
			seen[j.ID] = true
			out.Jobs = append(out.Jobs, j)
		}
	}
	out.Quarantine = append(out.Quarantine, legacyQuarantine(f.Quarantine, o.NowMs)...)
	for _, id := range slices.Sorted(maps.Keys(f.Runs)) {
		runs := legacyRuns(id, f.Runs[id], q)
		out.Runs = append(out.Runs, runs...)
	}
	return out
}

// legacyJobRows is jobs.json's rows: {version:1, jobs:[…]} or a bare
// array.
func legacyJobRows(b []byte) ([]json.RawMessage, error) {
	var rows []json.RawMessage
	if err := json.Unmarshal(b, &rows); err == nil {
		return rows, nil
	}
	var doc struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON store of jobs: %w", err)
	}
	if doc.Jobs == nil {
		return nil, errors.New("no jobs array")
	}
	return doc.Jobs, nil
}

// legacyState is one entry of jobs-state.json.
type legacyState struct {
	UpdatedAtMs      *int64          `json:"updatedAtMs"`
	ScheduleIdentity *string         `json:"scheduleIdentity"`
	State            json.RawMessage `json:"state"`
}

// legacyStates reads jobs-state.json ({version:1, jobs:{<id>: entry}}); a
// file or entry that is not that is quarantined and its jobs start with a
// fresh state.
func legacyStates(b []byte, q func(string, string, []byte)) map[string]legacyState {
	if b == nil {
		return nil
	}
	var doc struct {
		Version int                        `json:"version"`
		Jobs    map[string]json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Version != 1 || doc.Jobs == nil {
		q("jobs-state.json", "not {version: 1, jobs: {…}}", b)
		return nil
	}
	out := map[string]legacyState{}
	for _, id := range slices.Sorted(maps.Keys(doc.Jobs)) {
		var e legacyState
		if err := json.Unmarshal(doc.Jobs[id], &e); err != nil {
			q("jobs-state.json["+id+"]", "state entry: "+err.Error(), doc.Jobs[id])
			continue
		}
		out[id] = e
	}
	return out
}

// legacyJob makes a Job of one jobs.json row.
func legacyJob(row json.RawMessage, states map[string]legacyState, o LegacyOptions, q func(string, string, []byte)) (Job, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(row, &m); err != nil || m == nil {
		return Job{}, errors.New("not a JSON object")
	}
	id := legacyString(m, "id")
	if id == "" {
		id = legacyString(m, "jobId")
	}
	if id == "" || len(id) > MaxJobIDLen || strings.ContainsAny(id, "\x00/\\") {
		return Job{}, fmt.Errorf("id %q: want 1..%d characters without / \\ or NUL", id, MaxJobIDLen)
	}
	identity := legacyScheduleIdentity(m)
	sched, err := legacySchedule(m)
	if err != nil {
		return Job{}, err
	}
	payload, err := legacyPayload(m)
	if err != nil {
		return Job{}, err
	}
	delivery, err := legacyDelivery(m)
	if err != nil {
		return Job{}, err
	}
	off := bytes.Equal(bytes.TrimSpace(m["failureAlert"]), []byte("false"))
	inlineState := m["state"]
	for _, k := range []string{"id", "jobId", "schedule", "payload", "delivery", "state", "configRevision"} {
		delete(m, k)
	}
	if off {
		delete(m, "failureAlert")
	}
	rest, _ := json.Marshal(m)
	j := Job{Enabled: true}
	if err := json.Unmarshal(rest, &j); err != nil {
		return Job{}, fmt.Errorf("job fields: %w", err)
	}
	j.ID, j.Schedule, j.Payload, j.Delivery, j.ConfigRevision = id, sched, payload, delivery, 1
	if off {
		j.FailureAlert = &FailureAlert{Disabled: true}
	}
	legacyDefaults(&j, o.NowMs)
	j.State, j.UpdatedAtMs = legacyJobState(id, inlineState, states, identity, j.UpdatedAtMs, q)
	return j, nil
}

// legacyDefaults fills what an older job left out as OpenClaw read it.
func legacyDefaults(j *Job, nowMs int64) {
	if strings.TrimSpace(j.Name) == "" {
		j.Name = j.ID
	}
	if j.SessionTarget == "" {
		j.SessionTarget = map[bool]string{true: "main", false: "isolated"}[j.Payload.Kind == PayloadSystemEvent]
	}
	if j.WakeMode == "" {
		j.WakeMode = "now"
	}
	if j.CreatedAtMs == 0 {
		j.CreatedAtMs = legacyOr(j.UpdatedAtMs, nowMs)
	}
	if j.UpdatedAtMs == 0 {
		j.UpdatedAtMs = j.CreatedAtMs
	}
}

func legacyOr(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// legacyJobState is the job's state from jobs-state.json, or inline in
// jobs.json when there is no state file (OpenClaw's older layout), and
// its updatedAtMs. A stored next run is dropped when the entry was for
// another schedule (its scheduleIdentity differs), and a run in progress
// is not: the process that ran it is gone.
func legacyJobState(id string, inline json.RawMessage, states map[string]legacyState, identity string,
	updatedAtMs int64, q func(string, string, []byte)) (JobState, int64) {
	raw, source := inline, "jobs.json state of "+id
	var e legacyState
	if states != nil {
		var ok bool
		if e, ok = states[id]; !ok {
			return JobState{}, updatedAtMs
		}
		raw, source = e.State, "jobs-state.json["+id+"]"
		if e.UpdatedAtMs != nil {
			updatedAtMs = *e.UpdatedAtMs
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return JobState{}, updatedAtMs
	}
	var st JobState
	var old struct {
		LastStatus string `json:"lastStatus"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		q(source, "state: "+err.Error(), raw)
		return JobState{}, updatedAtMs
	}
	if json.Unmarshal(raw, &old) == nil && st.LastRunStatus == "" {
		st.LastRunStatus = old.LastStatus
	}
	if e.ScheduleIdentity != nil && *e.ScheduleIdentity != identity {
		st.NextRunAtMs = nil
	}
	st.RunningAtMs = nil
	return st, updatedAtMs
}

func legacyString(m map[string]json.RawMessage, k string) string {
	var s string
	if json.Unmarshal(m[k], &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// legacyNumber is a finite number field, and whether it was one.
func legacyNumber(m map[string]json.RawMessage, k string) (float64, bool) {
	var f float64
	if len(m[k]) == 0 || json.Unmarshal(m[k], &f) != nil {
		return 0, false
	}
	return f, true
}

// legacyScheduleFields is the object a job's schedule is read from: its
// schedule, or (older jobs) the job itself.
func legacyScheduleFields(m map[string]json.RawMessage) map[string]json.RawMessage {
	var s map[string]json.RawMessage
	if json.Unmarshal(m["schedule"], &s) == nil && s != nil {
		return s
	}
	return m
}

// legacySchedule reads a schedule the way OpenClaw's migration does: a
// kind may be implied by its fields, expr may be spelt cron, and an
// epoch atMs stands for at.
func legacySchedule(m map[string]json.RawMessage) (Schedule, error) {
	s := legacyScheduleFields(m)
	kind := strings.ToLower(legacyString(s, "kind"))
	expr := legacyString(s, "expr")
	if expr == "" {
		expr = legacyString(s, "cron")
	}
	at := legacyString(s, "at")
	atMs, hasAtMs := legacyNumber(s, "atMs")
	everyMs, hasEvery := legacyNumber(s, "everyMs")
	if kind == "" {
		switch {
		case at != "" || hasAtMs:
			kind = KindAt
		case hasEvery:
			kind = KindEvery
		case expr != "":
			kind = KindCron
		}
	}
	out := Schedule{Kind: kind}
	switch kind {
	case KindAt:
		if at == "" && hasAtMs {
			at = time.UnixMilli(int64(atMs)).UTC().Format(time.RFC3339Nano)
		}
		if at == "" {
			return Schedule{}, errors.New("schedule: an at schedule without at")
		}
		out.At = at
	case KindEvery:
		if !hasEvery || everyMs < 1 || everyMs != float64(int64(everyMs)) {
			return Schedule{}, errors.New("schedule: an every schedule needs a whole everyMs ≥ 1")
		}
		out.EveryMs = int64(everyMs)
		if a, ok := legacyNumber(s, "anchorMs"); ok {
			out.AnchorMs = legacyPtr(int64(a))
		}
	case KindCron:
		if expr == "" {
			return Schedule{}, errors.New("schedule: a cron schedule without expr")
		}
		out.Expr, out.TZ = expr, legacyString(s, "tz")
		if n, ok := legacyNumber(s, "staggerMs"); ok && n >= 0 {
			out.StaggerMs = legacyPtr(int64(n))
		}
	case "":
		return Schedule{}, errors.New("schedule: none")
	default:
		return Schedule{}, fmt.Errorf("schedule: unsupported schedule kind %q", kind)
	}
	return out, nil
}

func legacyPtr(v int64) *int64 { return &v }

// legacyScheduleIdentity is OpenClaw's scheduleIdentity of a job (the
// JSON of {version, enabled, schedule} it stored beside the state), to
// tell whether a stored next run is for this schedule; "" when the job
// has no schedule it can read.
func legacyScheduleIdentity(m map[string]json.RawMessage) string {
	s, err := legacySchedule(m)
	if err != nil {
		return ""
	}
	f := legacyScheduleFields(m)
	if s.Kind == KindAt && legacyString(f, "at") == "" {
		n, _ := legacyNumber(f, "atMs")
		s.At = strconv.FormatFloat(n, 'f', -1, 64)
	}
	enabled := true
	if json.Unmarshal(m["enabled"], &enabled) != nil {
		enabled = true
	}
	// Field order is JavaScript's insertion order in OpenClaw's builder.
	type at struct {
		Kind string `json:"kind"`
		At   string `json:"at"`
	}
	type every struct {
		Kind     string `json:"kind"`
		EveryMs  int64  `json:"everyMs"`
		AnchorMs *int64 `json:"anchorMs,omitempty"`
	}
	type cron struct {
		Kind      string `json:"kind"`
		Expr      string `json:"expr"`
		TZ        string `json:"tz,omitempty"`
		StaggerMs *int64 `json:"staggerMs,omitempty"`
	}
	var sched any = cron{s.Kind, s.Expr, s.TZ, s.StaggerMs}
	switch s.Kind {
	case KindAt:
		sched = at{s.Kind, s.At}
	case KindEvery:
		sched = every{s.Kind, s.EveryMs, s.AnchorMs}
	}
	b, _ := json.Marshal(struct {
		Version  int  `json:"version"`
		Enabled  bool `json:"enabled"`
		Schedule any  `json:"schedule"`
	}{1, enabled, sched})
	return string(b)
}

// legacyPayload reads the payload: its kind in any case, or (older jobs)
// implied by a top-level message, text or command, with top-level agent
// turn settings moved in.
func legacyPayload(m map[string]json.RawMessage) (Payload, error) {
	p := map[string]json.RawMessage{}
	if raw, ok := m["payload"]; ok && json.Unmarshal(raw, &p) != nil {
		return Payload{}, errors.New("payload: not an object")
	}
	if p == nil {
		p = map[string]json.RawMessage{}
	}
	kind := strings.ToLower(legacyString(p, "kind"))
	if _, ok := m["payload"]; !ok {
		switch {
		case legacyString(m, "message") != "":
			kind, p["message"] = "agentturn", m["message"]
		case legacyString(m, "text") != "":
			kind, p["text"] = "systemevent", m["text"]
		case legacyString(m, "command") != "":
			kind, p["text"] = "systemevent", m["command"]
		}
	} else if kind == "" && legacyString(p, "message") != "" {
		kind = "agentturn"
	} else if kind == "" && legacyString(p, "text") != "" {
		kind = "systemevent"
	}
	switch kind {
	case "agentturn":
		kind = PayloadAgentTurn
	case "systemevent":
		kind = PayloadSystemEvent
	case "":
		return Payload{}, errors.New("payload: none")
	default:
		return Payload{}, fmt.Errorf("payload: unsupported payload kind %q", legacyString(p, "kind"))
	}
	for _, k := range []string{"model", "thinking", "timeoutSeconds", "allowUnsafeExternalContent"} {
		if _, ok := p[k]; !ok && m[k] != nil {
			p[k] = m[k]
		}
	}
	p["kind"], _ = json.Marshal(kind)
	b, _ := json.Marshal(p)
	var out Payload
	if err := json.Unmarshal(b, &out); err != nil {
		return Payload{}, fmt.Errorf("payload: %w", err)
	}
	return out, nil
}

// legacyDelivery is the job's delivery with the legacy hints (deliver,
// channel or provider, to, threadId, bestEffortDeliver — in the payload
// or at the top of the job) merged in, as OpenClaw's migration does.
func legacyDelivery(m map[string]json.RawMessage) (*Delivery, error) {
	var d *Delivery
	if raw, ok := m["delivery"]; ok && string(raw) != "null" {
		d = &Delivery{}
		if err := json.Unmarshal(raw, d); err != nil {
			return nil, fmt.Errorf("delivery: %w", err)
		}
	}
	hints := map[string]json.RawMessage{}
	json.Unmarshal(m["payload"], &hints)
	for _, k := range []string{"deliver", "channel", "provider", "to", "threadId", "bestEffortDeliver"} {
		if _, ok := hints[k]; !ok && m[k] != nil {
			hints[k] = m[k]
		}
	}
	var deliver, best *bool
	json.Unmarshal(hints["deliver"], &deliver)
	json.Unmarshal(hints["bestEffortDeliver"], &best)
	channel := strings.ToLower(legacyString(hints, "channel"))
	if channel == "" {
		channel = strings.ToLower(legacyString(hints, "provider"))
	}
	to, thread := legacyString(hints, "to"), legacyThreadID(hints["threadId"])
	if deliver == nil && best == nil && channel == "" && to == "" && thread == nil {
		return d, nil
	}
	if d == nil {
		d = &Delivery{Mode: DeliverAnnounce}
	}
	if deliver != nil && !*deliver {
		d.Mode = DeliverNone
	} else if deliver != nil || channel != "" || to != "" || thread != nil || best != nil {
		d.Mode = DeliverAnnounce
	}
	if channel != "" {
		d.Channel = channel
	}
	if to != "" {
		d.To = to
	}
	if thread != nil {
		d.ThreadID = thread
	}
	if best != nil {
		d.BestEffort = *best
	}
	return d, nil
}

// legacyThreadID is a thread id hint as a JSON string, nil when absent.
func legacyThreadID(raw json.RawMessage) json.RawMessage {
	var s string
	var n json.Number
	switch {
	case json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "":
		s = strings.TrimSpace(s)
	case len(raw) > 0 && json.Unmarshal(raw, &n) == nil:
		s = n.String()
	default:
		return nil
	}
	b, _ := json.Marshal(s)
	return b
}

// legacyQuarantine carries OpenClaw's own quarantine over, one row per
// entry with its reason; a file of another shape is kept whole.
func legacyQuarantine(b []byte, nowMs int64) []Quarantined {
	if b == nil {
		return nil
	}
	var doc struct {
		Version int               `json:"version"`
		Jobs    []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Version != 1 || doc.Jobs == nil {
		return []Quarantined{{Source: "jobs-quarantine.json", Reason: "not {version: 1, jobs: […]}", Raw: string(b), AtMs: nowMs}}
	}
	out := make([]Quarantined, 0, len(doc.Jobs))
	for i, raw := range doc.Jobs {
		var e struct {
			Reason          string `json:"reason"`
			QuarantinedAtMs *int64 `json:"quarantinedAtMs"`
		}
		q := Quarantined{Source: fmt.Sprintf("jobs-quarantine.json[%d]", i), Raw: string(raw), AtMs: nowMs}
		if json.Unmarshal(raw, &e) != nil || e.Reason == "" {
			q.Reason = "quarantined by OpenClaw (no reason given)"
		} else {
			q.Reason = "quarantined by OpenClaw: " + e.Reason
		}
		if e.QuarantinedAtMs != nil {
			q.AtMs = *e.QuarantinedAtMs
		}
		out = append(out, q)
	}
	return out
}

// legacyRuns reads runs/<jobID>.jsonl: one finished run per line. A line
// without a run id gets one from its time and line number, so importing
// the file again finds the same runs.
func legacyRuns(jobID string, b []byte, q func(string, string, []byte)) []Run {
	if jobID == "" || len(jobID) > MaxJobIDLen || strings.ContainsAny(jobID, "\x00/\\") {
		q("runs/"+jobID+".jsonl", "the file name is no job id", b)
		return nil
	}
	var out []Run
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		source := fmt.Sprintf("runs/%s.jsonl:%d", jobID, i+1)
		r, err := legacyRun(jobID, line, i+1)
		if err != nil {
			q(source, err.Error(), line)
			continue
		}
		out = append(out, r)
	}
	return out
}

func legacyRun(jobID string, line []byte, n int) (Run, error) {
	var r Run
	if err := json.Unmarshal(line, &r); err != nil {
		return Run{}, fmt.Errorf("not a run entry: %w", err)
	}
	switch {
	case r.Action != "finished":
		return Run{}, fmt.Errorf("action %q: only finished runs are kept", r.Action)
	case r.JobID != "" && r.JobID != jobID:
		return Run{}, fmt.Errorf("job id %q in the log of job %q", r.JobID, jobID)
	case r.Ts <= 0:
		return Run{}, errors.New("no ts")
	case r.Status != StatusOK && r.Status != StatusError && r.Status != StatusSkipped:
		return Run{}, fmt.Errorf("status %q: want ok, error or skipped", r.Status)
	case len(r.RunID) > MaxJobIDLen:
		return Run{}, errors.New("run id too long")
	}
	r.JobID = jobID
	if r.RunID == "" {
		r.RunID = fmt.Sprintf("legacy-%d-%d", r.Ts, n)
	}
	return r, nil
}
