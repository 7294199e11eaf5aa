package studio

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"time"

	"talon/internal/automation"
	"talon/internal/config"
)

// The Automations page of an agent (issue 22): its cron jobs with their
// runs, forms that add and edit them, run now, enable/disable and
// remove, the agent's last heartbeat, and the tenant's hook endpoint.
// Everything goes through the gateway's cron.* methods, so a job is
// checked by the same rules as one added with the CLI or the cron tool.

// automationsView is the Automations page.
type automationsView struct {
	Agent     agentInfo
	Agents    []agentInfo // the tenant's, for the links to their pages
	Jobs      []jobRow
	Add       jobForm
	AddOpen   bool // the add form failed: keep it open
	Heartbeat *heartbeatEvent
	// OtherHeartbeat is the last heartbeat's agent when it was another
	// agent's (last-heartbeat is the tenant's last one).
	OtherHeartbeat string
	Hooks          hooksInfo
	Done           string
}

// jobRow is one job with its edit form and its latest runs.
type jobRow struct {
	Job      automation.Job
	Edit     jobForm
	EditOpen bool // an edit failed: show it open, as it was sent
	Runs     []runRow
	RunsErr  string
}

// heartbeatEvent is last-heartbeat's answer (spec R9.7).
type heartbeatEvent struct {
	Ts         int64  `json:"ts"`
	AgentID    string `json:"agentId"`
	Status     string `json:"status"`
	Reason     string `json:"reason"`
	To         string `json:"to"`
	Channel    string `json:"channel"`
	Preview    string `json:"preview"`
	DurationMs int64  `json:"durationMs"`
}

// hooksInfo is what the page says of the tenant's HTTP hooks; the token
// is never read into it.
type hooksInfo struct {
	Known, Enabled, HasToken bool
	Path                     string
}

// jobForm is the add and edit form, as typed: shown again unchanged when
// it fails.
type jobForm struct {
	// Key tells the form's fields apart on the page: "add" or the job id.
	Key     string
	Name    string
	Kind    string // every, cron or at
	Every   string // a Go duration: 30m, 2h, 1h30m
	Expr    string
	TZ      string
	At      string
	Payload string // agentTurn or systemEvent
	Text    string
	Enabled bool
	// Delivery is none, announce or webhook (add only).
	Delivery, Channel, To, URL string
}

// Limits of a form, below the gateway's own (name 200, texts 64 KiB).
const (
	maxJobName   = 200
	maxJobText   = 64 << 10
	maxFormField = 2048
	maxFormBody  = 128 << 10
	maxJobsShown = 200
	runsShown    = 5
)

// jobIDRE is the shape of a job id in a URL (the gateway makes UUIDs;
// imported jobs keep theirs).
var jobIDRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`) // at most 128, checked apart

// jobDone are the notices after an action, by the did= value.
var jobDone = map[string]string{
	"added":    "Job added.",
	"saved":    "Job saved.",
	"ran":      "Run started: it appears in the job's history when it ends.",
	"enabled":  "Job enabled.",
	"disabled": "Job disabled: it will not run on its schedule.",
	"removed":  "Job removed.",
}

// automationsIndex sends the menu's link to the default agent's page.
func (s *Server) automationsIndex(q *req) {
	l, err := s.agents(q)
	if err != nil {
		s.fail(q.w, q.r, q.sess, http.StatusBadGateway, s.errText(q, err))
		return
	}
	id := l.DefaultID
	if id == "" && len(l.Agents) > 0 {
		id = l.Agents[0].ID
	}
	if id == "" {
		s.fail(q.w, q.r, q.sess, http.StatusNotFound, "There is no agent in "+q.tenantLabel()+" yet.")
		return
	}
	http.Redirect(q.w, q.r, q.base+"/agents/"+id+"/automations", http.StatusSeeOther)
}

func (s *Server) automationsPage(q *req) {
	a, l, ok := s.pathAgent(q)
	if !ok {
		return
	}
	s.showAutomations(q, a, l, pageState{status: http.StatusOK, done: jobDone[q.r.URL.Query().Get("did")]})
}

// pageState is what a failed or finished action adds to the page.
type pageState struct {
	status int
	err    string
	done   string
	add    *jobForm // the add form as sent
	editID string
	edit   *jobForm // the edit form of editID as sent
}

// showAutomations reads the agent's jobs, their runs, the last heartbeat
// and the hooks settings, and renders the page; a read that fails says
// why on the page and the rest is still shown.
func (s *Server) showAutomations(q *req, a agentInfo, l agentsList, st pageState) {
	v := &automationsView{Agent: a, Agents: l.Agents, Done: st.done,
		Add: jobForm{Kind: automation.KindEvery, Payload: automation.PayloadAgentTurn, Delivery: automation.DeliverNone, Enabled: true}}
	if st.add != nil {
		v.Add, v.AddOpen = *st.add, true
	}
	v.Add.Key = "add"
	p := s.newPage(q, "Automations · "+a.Label(), "automations", v)
	var errs []string
	if st.err != "" {
		errs = append(errs, st.err)
	}
	var list struct {
		Jobs []automation.Job `json:"jobs"`
	}
	if err := s.call(q, "cron.list", map[string]any{"agentId": a.ID, "includeDisabled": true, "limit": maxJobsShown, "sortBy": "name"}, &list); err != nil {
		errs = append(errs, "Jobs: "+s.errText(q, err))
	}
	for _, j := range list.Jobs {
		row := jobRow{Job: j, Edit: formOf(j)}
		if j.ID == st.editID && st.edit != nil {
			row.Edit, row.EditOpen = *st.edit, true
		}
		row.Edit.Key = j.ID
		var runs struct {
			Entries []automation.Run `json:"entries"`
		}
		if err := s.call(q, "cron.runs", map[string]any{"id": j.ID, "limit": runsShown, "sortDir": "desc"}, &runs); err != nil {
			row.RunsErr = s.errText(q, err)
		}
		for _, r := range runs.Entries {
			row.Runs = append(row.Runs, runRow{r})
		}
		v.Jobs = append(v.Jobs, row)
	}
	var hb *heartbeatEvent
	if err := s.call(q, "last-heartbeat", nil, &hb); err != nil {
		errs = append(errs, "Heartbeat: "+s.errText(q, err))
	} else if hb != nil && hb.AgentID == a.ID {
		v.Heartbeat = hb
	} else if hb != nil {
		v.OtherHeartbeat = hb.AgentID
	}
	hooks, err := s.hooksOf(q)
	if err != nil {
		errs = append(errs, "Hooks: "+s.errText(q, err))
	}
	v.Hooks = hooks
	p.Error = strings.Join(errs, " ")
	status := st.status
	if status == http.StatusOK && len(errs) > 0 {
		status = http.StatusBadGateway
	}
	s.render(q.w, status, "automations", p)
}

// hooksOf reads hooks.enabled and hooks.path from the tenant's config
// (config.get redacts hooks.token; only whether one is set is used).
// The gateway serves the operator's hooks at hooks.path and a tenant's
// at /hooks/<tenant><hooks.path>.
func (s *Server) hooksOf(q *req) (hooksInfo, error) {
	var snap configSnapshot
	if err := s.call(q, "config.get", nil, &snap); err != nil {
		return hooksInfo{}, err
	}
	var cfg struct {
		Hooks config.Hooks `json:"hooks"`
	}
	if len(snap.Parsed) > 0 {
		if err := json.Unmarshal(snap.Parsed, &cfg); err != nil {
			return hooksInfo{}, fmt.Errorf("reading hooks from the config the gateway sent: %w", err)
		}
	}
	h := hooksInfo{Known: true, Enabled: cfg.Hooks.Enabled != nil && *cfg.Hooks.Enabled, HasToken: cfg.Hooks.Token != "",
		Path: config.HooksPath(cfg.Hooks.Path)}
	if q.tenant != "" {
		h.Path = "/hooks/" + q.tenant + h.Path
	}
	return h, nil
}

// formOf is a job as its edit form shows it.
func formOf(j automation.Job) jobForm {
	f := jobForm{Name: j.Name, Kind: j.Schedule.Kind, Expr: j.Schedule.Expr, TZ: j.Schedule.TZ, At: j.Schedule.At,
		Payload: j.Payload.Kind, Text: j.Payload.Message, Enabled: j.Enabled}
	if j.Schedule.EveryMs > 0 {
		f.Every = shortDuration(time.Duration(j.Schedule.EveryMs) * time.Millisecond)
	}
	if j.Payload.Kind == automation.PayloadSystemEvent {
		f.Text = j.Payload.Text
	}
	return f
}

// shortDuration writes 1h0m0s as 1h and 90s as 1m30s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// readForm reads the job form of a POST; edit forms have no delivery.
func readForm(r *http.Request, withDelivery bool) jobForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := jobForm{Name: v("name"), Kind: v("kind"), Every: v("every"), Expr: v("expr"), TZ: v("tz"), At: v("at"),
		Payload: v("payload"), Text: r.PostFormValue("text"), Enabled: r.PostFormValue("enabled") != ""}
	if withDelivery {
		f.Delivery, f.Channel, f.To, f.URL = v("delivery"), v("channel"), v("to"), v("url")
	}
	return f
}

// problem bounds the form's fields, as a sentence for the person, ""
// when they fit; the gateway checks the rest (the expression, the zone,
// the time, the channel, the URL) and its error is shown as it is.
func (f jobForm) problem() string {
	switch {
	case f.Name == "":
		return "Name: required."
	case len(f.Name) > maxJobName:
		return fmt.Sprintf("Name: at most %d characters.", maxJobName)
	case len(f.Text) > maxJobText:
		return fmt.Sprintf("Message: at most %d bytes.", maxJobText)
	case strings.TrimSpace(f.Text) == "":
		return "Message: required: the text the agent is given."
	case f.Payload != automation.PayloadAgentTurn && f.Payload != automation.PayloadSystemEvent:
		return "What it does: an agent message or a system event."
	}
	for _, s := range []string{f.Every, f.Expr, f.TZ, f.At, f.Channel, f.To, f.URL} {
		if len(s) > maxFormField {
			return fmt.Sprintf("A field is longer than %d characters.", maxFormField)
		}
	}
	return ""
}

// schedule is the form's schedule as the gateway takes it, or what is
// wrong with it. A cron schedule without a zone is sent without one, so
// the gateway gives it the tenant's (agents.defaults.userTimezone, else
// the host's).
func (f jobForm) schedule() (map[string]any, string) {
	switch f.Kind {
	case automation.KindEvery:
		d, err := time.ParseDuration(f.Every)
		if err != nil || d < time.Second {
			return nil, fmt.Sprintf("Every: %q is not a duration of a second or more, such as 30m, 2h or 1h30m.", f.Every)
		}
		return map[string]any{"kind": f.Kind, "everyMs": d.Milliseconds()}, ""
	case automation.KindCron:
		m := map[string]any{"kind": f.Kind, "expr": f.Expr}
		if f.TZ != "" {
			m["tz"] = f.TZ
		}
		return m, ""
	case automation.KindAt:
		return map[string]any{"kind": f.Kind, "at": f.At}, ""
	}
	return nil, "Schedule: every, a cron expression or at a time."
}

// payload is the form's payload.
func (f jobForm) payload() map[string]any {
	if f.Payload == automation.PayloadSystemEvent {
		return map[string]any{"kind": f.Payload, "text": f.Text}
	}
	return map[string]any{"kind": f.Payload, "message": f.Text}
}

// delivery is the add form's delivery, nil for a system event (it is
// not delivered: it joins the session's next turn), or what is wrong.
func (f jobForm) delivery() (map[string]any, string) {
	if f.Payload == automation.PayloadSystemEvent {
		if f.Delivery != "" && f.Delivery != automation.DeliverNone {
			return nil, "Delivery: a system event is not delivered; it joins the main session's next turn. Choose none, or send an agent message."
		}
		return nil, ""
	}
	switch f.Delivery {
	case automation.DeliverNone, "":
		return map[string]any{"mode": automation.DeliverNone}, ""
	case automation.DeliverAnnounce:
		m := map[string]any{"mode": f.Delivery, "to": f.To}
		if f.Channel != "" {
			m["channel"] = f.Channel
		}
		return m, ""
	case automation.DeliverWebhook:
		return map[string]any{"mode": f.Delivery, "to": f.URL}, ""
	}
	return nil, "Delivery: none, announce to a chat, or a webhook."
}

// job is the add form as cron.add's params, or what is wrong with it.
func (f jobForm) job(agentID string) (map[string]any, string) {
	if msg := f.problem(); msg != "" {
		return nil, msg
	}
	sched, msg := f.schedule()
	if msg != "" {
		return nil, msg
	}
	deliv, msg := f.delivery()
	if msg != "" {
		return nil, msg
	}
	job := map[string]any{"name": f.Name, "agentId": agentID, "enabled": f.Enabled, "schedule": sched, "payload": f.payload()}
	if deliv != nil {
		job["delivery"] = deliv
	}
	return job, ""
}

// patch is the edit form as a cron.update patch: name, schedule, the
// message (its payload kind kept) and enabled, or what is wrong. A cron
// schedule without a zone clears it, so the gateway gives the tenant's.
func (f jobForm) patch() (map[string]any, string) {
	if msg := f.problem(); msg != "" {
		return nil, msg
	}
	sched, msg := f.schedule()
	if msg != "" {
		return nil, msg
	}
	if f.Kind == automation.KindCron && f.TZ == "" {
		sched["tz"] = nil
	}
	return map[string]any{"name": f.Name, "schedule": sched, "payload": f.payload(), "enabled": f.Enabled}, ""
}

// addJob is the add form: cron.add for the page's agent. A form that
// fails is shown again as it was sent, with the reason.
func (s *Server) addJob(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, maxFormBody)
	a, l, ok := s.pathAgent(q)
	if !ok {
		return
	}
	f := readForm(q.r, true)
	job, msg := f.job(a.ID)
	if msg == "" {
		if err := s.call(q, "cron.add", job, nil); err != nil {
			msg = s.errText(q, err)
		}
	}
	if msg != "" {
		s.showAutomations(q, a, l, pageState{status: http.StatusBadRequest, err: msg, add: &f})
		return
	}
	http.Redirect(q.w, q.r, q.base+"/agents/"+a.ID+"/automations?did=added", http.StatusSeeOther)
}

// jobActions are the one-click actions on a job: the method, its extra
// params and the notice after it.
var jobActions = map[string]struct {
	method string
	params map[string]any
	did    string
}{
	"run":     {"cron.run", map[string]any{"mode": "force"}, "ran"},
	"enable":  {"cron.update", map[string]any{"patch": map[string]any{"enabled": true}}, "enabled"},
	"disable": {"cron.update", map[string]any{"patch": map[string]any{"enabled": false}}, "disabled"},
	"remove":  {"cron.remove", nil, "removed"},
}

// jobAction is a job's edit, run, enable, disable or remove.
func (s *Server) jobAction(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, maxFormBody)
	a, l, ok := s.pathAgent(q)
	if !ok {
		return
	}
	id, action := q.r.PathValue("job"), q.r.PathValue("action")
	fail := func(status int, msg string) { s.showAutomations(q, a, l, pageState{status: status, err: msg}) }
	act, known := jobActions[action]
	switch {
	case len(id) > 128 || !jobIDRE.MatchString(id):
		fail(http.StatusBadRequest, "That is not a cron job id.")
		return
	case !known && action != "edit":
		fail(http.StatusNotFound, fmt.Sprintf("%q is not something a job can do: edit, run, enable, disable or remove.", action))
		return
	}
	// The URL names the agent and the job: the job must be that agent's.
	var j automation.Job
	if err := s.call(q, "cron.get", map[string]any{"id": id}, &j); err != nil {
		fail(http.StatusBadRequest, s.errText(q, err))
		return
	}
	if owner := config.NormalizeAgentID(cmp.Or(j.AgentID, l.DefaultID)); owner != a.ID {
		fail(http.StatusNotFound, fmt.Sprintf("Job %s is agent %s's, not %s's.", id, owner, a.ID))
		return
	}
	if action == "edit" {
		s.editJob(q, a, l, j)
		return
	}
	params := map[string]any{"id": id}
	maps.Copy(params, act.params)
	var res struct {
		Enqueued *bool  `json:"enqueued"`
		Reason   string `json:"reason"`
	}
	if err := s.call(q, act.method, params, &res); err != nil {
		fail(http.StatusBadRequest, s.errText(q, err))
		return
	}
	if res.Enqueued != nil && !*res.Enqueued {
		fail(http.StatusConflict, "The run did not start: "+res.Reason+".")
		return
	}
	http.Redirect(q.w, q.r, q.base+"/agents/"+a.ID+"/automations?did="+act.did, http.StatusSeeOther)
}

// editJob is the edit form: cron.update against the revision the job
// was read at. A form that fails is shown again open, as it was sent.
func (s *Server) editJob(q *req, a agentInfo, l agentsList, j automation.Job) {
	f := readForm(q.r, false)
	f.Payload = j.Payload.Kind
	patch, msg := f.patch()
	if msg == "" {
		params := map[string]any{"id": j.ID, "patch": patch, "expectedConfigRevision": j.ConfigRevision}
		if err := s.call(q, "cron.update", params, nil); err != nil {
			msg = s.errText(q, err)
		}
	}
	if msg != "" {
		s.showAutomations(q, a, l, pageState{status: http.StatusBadRequest, err: msg, editID: j.ID, edit: &f})
		return
	}
	http.Redirect(q.w, q.r, q.base+"/agents/"+a.ID+"/automations?did=saved", http.StatusSeeOther)
}

// Schedule says when a job runs, for the table.
func (r jobRow) Schedule() string {
	s := r.Job.Schedule
	switch s.Kind {
	case automation.KindEvery:
		return "every " + shortDuration(time.Duration(s.EveryMs)*time.Millisecond)
	case automation.KindCron:
		return "cron " + s.Expr + " (" + s.TZ + ")"
	case automation.KindAt:
		if t, err := automation.ParseAt(s.At); err == nil {
			return "once at " + t.UTC().Format("2006-01-02 15:04 UTC")
		}
		return "once at " + s.At
	}
	return s.Kind
}

// Status is the job's last outcome, for the table.
func (r jobRow) Status() string {
	st := r.Job.State
	switch {
	case st.RunningAtMs != nil:
		return "running"
	case st.LastRunStatus == "":
		return "not run yet"
	case st.LastError != "":
		return st.LastRunStatus + ": " + st.LastError
	}
	return st.LastRunStatus
}

// Disabled says why a job does not run on its schedule, or "".
func (r jobRow) Disabled() string {
	if r.Job.Enabled {
		return ""
	}
	if ad := r.Job.State.AutoDisabled; ad != nil {
		return "disabled by the gateway (" + ad.Reason + ")"
	}
	return "disabled"
}

// runRow is one run of a job's history.
type runRow struct{ automation.Run }

// Outcome is the run's result, for the history.
func (r runRow) Outcome() string {
	out := r.Status
	if r.Reason != "" {
		out += " (" + r.Reason + ")"
	}
	switch {
	case r.Error != "":
		out += ": " + r.Error
	case r.Summary != "":
		out += ": " + r.Summary
	}
	if r.DeliveryStatus != "" {
		out += " · delivery " + r.DeliveryStatus
		if r.DeliveryError != "" {
			out += ": " + r.DeliveryError
		}
	}
	return out
}

// Started is when the run started.
func (r runRow) Started() string { return when(&r.RunAtMs) }

// At is when the heartbeat ran.
func (h heartbeatEvent) At() string { return when(&h.Ts) }
