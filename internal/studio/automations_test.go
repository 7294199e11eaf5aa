package studio

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"talon/internal/automation"
)

// gw makes one call to a tenant's gateway, as the CLI would.
func (e *env) gw(tenant, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return e.s.o.Relay.Call(ctx, tenant, method, params, out)
}

// jobsOf is cron.list of an agent, disabled jobs included.
func (e *env) jobsOf(agent string) []automation.Job {
	e.t.Helper()
	var l struct {
		Jobs []automation.Job `json:"jobs"`
	}
	if err := e.gw("", "cron.list", map[string]any{"agentId": agent, "includeDisabled": true}, &l); err != nil {
		e.t.Fatal(err)
	}
	return l.Jobs
}

// jobNamed finds a job by name, or fails the test.
func (e *env) jobNamed(agent, name string) automation.Job {
	e.t.Helper()
	for _, j := range e.jobsOf(agent) {
		if j.Name == name {
			return j
		}
	}
	e.t.Fatalf("no job %q of agent %s", name, agent)
	return automation.Job{}
}

// TestAutomationsPage: an agent's jobs are listed with their schedule
// and zone; jobs are added, edited, run, disabled, enabled and removed
// through the forms; a job the gateway refuses leaves the form filled
// with the gateway's reason; the hooks endpoint is shown without its
// token; and a person of another tenant can neither see nor change them.
func TestAutomationsPage(t *testing.T) {
	const hookToken = "hooks-secret-0123456789"
	e := newEnv(t, `{"agents":{"list":[{"id":"main"},{"id":"other"}]},"hooks":{"enabled":true,"token":"`+hookToken+`","path":"/in"}}`)
	b := e.signIn(adminToken, "")
	seed := map[string]any{"name": "weekday digest", "agentId": "main",
		"schedule": map[string]any{"kind": "cron", "expr": "0 7 * * 1-5", "tz": "Europe/Vienna"},
		"payload":  map[string]any{"kind": "agentTurn", "message": "summarise the tickets"}, "delivery": map[string]any{"mode": "none"}}
	if err := e.gw("", "cron.add", seed, nil); err != nil {
		t.Fatal(err)
	}
	seed["name"], seed["agentId"] = "other's job", "other"
	if err := e.gw("", "cron.add", seed, nil); err != nil {
		t.Fatal(err)
	}

	res, page := b.get("/agents/main/automations")
	for _, want := range []string{"<td>weekday digest</td>", "cron 0 7 * * 1-5 (Europe/Vienna)", "not run yet", "Run now", "Disable",
		"<code>/in</code>", "Hooks are <strong>enabled</strong>", "No heartbeat of main"} {
		if res.StatusCode != http.StatusOK || !strings.Contains(page, want) {
			t.Fatalf("the page (%d) lacks %q:\n%s", res.StatusCode, want, page)
		}
	}
	if strings.Contains(page, "other&#39;s job") || strings.Contains(page, hookToken) {
		t.Fatalf("the page shows another agent's job or the hooks token:\n%s", page)
	}
	if res, _ := b.get("/automations"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/agents/main/automations" {
		t.Errorf("the menu's link: %d %s", res.StatusCode, res.Header.Get("Location"))
	}

	add := func(name string, f map[string]string) url.Values {
		v := url.Values{"name": {name}, "kind": {"every"}, "every": {"2h"}, "payload": {"agentTurn"}, "text": {"check the queue"}, "delivery": {"none"}, "enabled": {"1"}}
		for k, x := range f {
			v.Set(k, x)
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		want   []string // on the page shown after a failure
	}{
		{"an every job", add("queue check", nil), http.StatusSeeOther, nil},
		{"a system event on a cron schedule", add("standup nudge", map[string]string{"kind": "cron", "expr": "30 9 * * *", "tz": "America/New_York", "payload": "systemEvent", "text": "standup in 5"}), http.StatusSeeOther, nil},
		{"a bad cron expression", add("broken", map[string]string{"kind": "cron", "expr": "61 * * * *", "tz": "UTC"}), http.StatusBadRequest,
			[]string{"schedule.expr", `value="broken"`, `value="61 * * * *"`, `value="UTC"`, "check the queue</textarea>", `id="kind-cron-add" name="kind" value="cron" checked`, "<details open>"}},
		{"an unknown zone", add("zoned", map[string]string{"kind": "cron", "expr": "0 7 * * *", "tz": "Mars/Olympus"}), http.StatusBadRequest, []string{"schedule.tz", `value="Mars/Olympus"`}},
		{"a private webhook", add("hook", map[string]string{"delivery": "webhook", "url": "http://10.0.0.1/in"}), http.StatusBadRequest,
			[]string{"delivery.to", `value="http://10.0.0.1/in"`, `id="deliv-webhook" name="delivery" value="webhook" checked`}},
		{"no duration", add("vague", map[string]string{"every": "soon"}), http.StatusBadRequest, []string{"Every: &#34;soon&#34; is not a duration", `value="soon"`}},
		{"no name", add("", nil), http.StatusBadRequest, []string{"Name: required."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.jobsOf("main"))
			res, page := b.post("/agents/main/automations", tc.form)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d:\n%s", res.StatusCode, tc.status, page)
			}
			if tc.status == http.StatusSeeOther {
				j := e.jobNamed("main", tc.form.Get("name"))
				if !j.Enabled || j.AgentID != "main" || j.State.NextRunAtMs == nil {
					t.Errorf("the job added: %+v", j)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q:\n%s", w, page)
				}
			}
			if n := len(e.jobsOf("main")); n != before {
				t.Errorf("a refused job was stored: %d jobs, were %d", n, before)
			}
		})
	}

	digest := e.jobNamed("main", "weekday digest")
	act := func(id, action string, form url.Values) (*http.Response, string) {
		return b.post("/agents/main/automations/"+id+"/"+action, form)
	}
	t.Run("run now records a run", func(t *testing.T) {
		if res, page := act(digest.ID, "run", nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("run: %d\n%s", res.StatusCode, page)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			var runs struct {
				Entries []automation.Run `json:"entries"`
			}
			if err := e.gw("", "cron.runs", map[string]any{"id": digest.ID}, &runs); err != nil {
				t.Fatal(err)
			}
			if len(runs.Entries) > 0 {
				_, page := b.get("/agents/main/automations")
				if want := "ms · " + html.EscapeString(runRow{runs.Entries[0]}.Outcome()); !strings.Contains(page, want) {
					t.Errorf("the history does not show the run %+v:\n%s", runs.Entries[0], page)
				}
				return
			}
			select {
			case <-ctx.Done():
				t.Fatal("no run recorded")
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	t.Run("disable and enable", func(t *testing.T) {
		if res, _ := act(digest.ID, "disable", nil); res.StatusCode != http.StatusSeeOther || e.jobNamed("main", "weekday digest").Enabled {
			t.Fatalf("disable: %d", res.StatusCode)
		}
		if _, page := b.get("/agents/main/automations?did=disabled"); !strings.Contains(page, "/"+digest.ID+"/enable") || !strings.Contains(page, "Job disabled") {
			t.Errorf("a disabled job has no Enable:\n%s", page)
		}
		if res, _ := act(digest.ID, "enable", nil); res.StatusCode != http.StatusSeeOther || !e.jobNamed("main", "weekday digest").Enabled {
			t.Fatalf("enable: %d", res.StatusCode)
		}
	})
	t.Run("edit", func(t *testing.T) {
		form := url.Values{"name": {"weekday digest"}, "kind": {"cron"}, "expr": {"0 25 * * *"}, "tz": {"Europe/Vienna"}, "text": {"summarise the new tickets"}, "enabled": {"1"}}
		res, page := act(digest.ID, "edit", form)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "schedule.expr") || !strings.Contains(page, `value="0 25 * * *"`) ||
			!strings.Contains(page, "summarise the new tickets</textarea>") {
			t.Fatalf("a bad edit: %d\n%s", res.StatusCode, page)
		}
		form.Set("expr", "0 8 * * 1-5")
		form.Set("name", "morning digest")
		form.Del("enabled")
		if res, page := act(digest.ID, "edit", form); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("edit: %d\n%s", res.StatusCode, page)
		}
		j := e.jobNamed("main", "morning digest")
		if j.Schedule.Expr != "0 8 * * 1-5" || j.Schedule.TZ != "Europe/Vienna" || j.Payload.Message != "summarise the new tickets" || j.Enabled {
			t.Errorf("the edited job: %+v", j)
		}
	})
	other := e.jobNamed("other", "other's job")
	for _, tc := range []struct{ name, path string }{
		{"another agent's job", "/agents/main/automations/" + other.ID + "/remove"},
		{"an unknown job", "/agents/main/automations/no-such-job/run"},
		{"a bad job id", "/agents/main/automations/%3Cx%3E/run"},
		{"an unknown action", "/agents/main/automations/" + digest.ID + "/explode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res, page := b.post(tc.path, nil); res.StatusCode < 400 {
				t.Errorf("POST %s: %d\n%s", tc.path, res.StatusCode, page)
			}
		})
	}
	t.Run("remove", func(t *testing.T) {
		if res, _ := act(digest.ID, "remove", nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("remove: %d", res.StatusCode)
		}
		for _, j := range e.jobsOf("main") {
			if j.ID == digest.ID {
				t.Fatal("the removed job is still listed")
			}
		}
		if len(e.jobsOf("other")) != 1 {
			t.Error("another agent's job went too")
		}
	})

	// Only people who may change the default tenant see it or act on it:
	// a tenant's person is refused, and a form without the session's
	// CSRF token is refused.
	acme := e.signIn(acmeToken, "acme")
	if res, page := acme.get("/t/acme/agents/main/automations"); res.StatusCode != http.StatusOK || !strings.Contains(page, "<code>/hooks/acme/hooks</code>") ||
		!strings.Contains(page, "Hooks are <strong>not enabled</strong>") {
		t.Errorf("acme's own page: %d\n%s", res.StatusCode, page)
	}
	queue := e.jobNamed("main", "queue check")
	for _, tc := range []struct {
		name string
		do   func() *http.Response
	}{
		{"acme reads the default tenant's page", func() *http.Response { r, _ := acme.get("/agents/main/automations"); return r }},
		{"acme removes a job", func() *http.Response {
			r, _ := acme.post("/agents/main/automations/"+queue.ID+"/remove", nil)
			return r
		}},
		{"acme adds a job", func() *http.Response { r, _ := acme.post("/agents/main/automations", add("intruder", nil)); return r }},
		{"a form without the CSRF token", func() *http.Response {
			r, _ := b.postRaw("/agents/main/automations/"+queue.ID+"/remove", url.Values{}, "")
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := tc.do(); res.StatusCode != http.StatusForbidden {
				t.Errorf("status %d, want 403", res.StatusCode)
			}
		})
	}
	if e.jobNamed("main", "queue check").ID != queue.ID {
		t.Error("a refused POST changed the job")
	}
	for _, j := range e.jobsOf("main") {
		if j.Name == "intruder" {
			t.Error("a refused POST added a job")
		}
	}
}
