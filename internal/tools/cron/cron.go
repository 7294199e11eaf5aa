// Package cron is the cron tool (spec automation.md §7): an agent lists,
// adds, changes, runs and removes its own scheduled jobs, reads their
// runs, and queues a wake. The arguments are flat (Talon's tool schemas
// have no nested objects): a job is described by name, one schedule
// (at, every or cron with tz), one payload (message or systemEvent) and
// its delivery, and the tool builds OpenClaw's job JSON from them. The
// gateway (tools.Crons) holds the scope rules of R7.3 and caps a job's
// tools to the calling run's. Safe for concurrent use.
package cron

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"talon/internal/automation"
	"talon/internal/tools"
)

// New returns the cron tool.
func New() tools.Tool { return tool{} }

type tool struct{}

var _ tools.Tool = tool{}

func (tool) Name() string { return "cron" }

func (tool) Description() string {
	return "Schedule work for later and manage your scheduled jobs. " +
		"Actions: status; list; get (jobId); add (name, one of at / every / cron, and message for an agent turn or systemEvent for a note to your main session); " +
		"update (jobId and the fields to change); remove (jobId); run (jobId, runMode due or force); runs (jobId); wake (text: a note for your next turn, mode now or next-heartbeat). " +
		"at is an ISO time, UTC when it has no offset, or relative (20m, 2h); every is a duration (10m, 1h); cron is a 5-field expression of wall-clock time in tz " +
		"(an IANA zone; never convert it to UTC yourself; without tz the gateway's zone is used). Never use exec sleep as a timer. " +
		"A job's result is posted to this chat unless deliver says otherwise."
}

var actions = []string{"status", "list", "get", "add", "update", "remove", "run", "runs", "wake"}

var schema = tools.Object(
	tools.Prop{Name: "action", Type: tools.TypeString, Required: true, Enum: actions, Description: "what to do"},
	tools.Prop{Name: "jobId", Type: tools.TypeString, Description: "the job, for get, update, remove, run and runs"},
	tools.Prop{Name: "name", Type: tools.TypeString, Description: "add/update: the job's name"},
	tools.Prop{Name: "at", Type: tools.TypeString, Description: "add/update: run once at this ISO time (UTC without an offset) or after a relative time such as 20m"},
	tools.Prop{Name: "every", Type: tools.TypeString, Description: "add/update: run every interval, such as 30m or 2h"},
	tools.Prop{Name: "cron", Type: tools.TypeString, Description: "add/update: a cron expression (min hour day month weekday), wall-clock time in tz"},
	tools.Prop{Name: "tz", Type: tools.TypeString, Description: "add/update: the IANA time zone of a cron expression, such as Europe/Vienna"},
	tools.Prop{Name: "message", Type: tools.TypeString, Description: "add/update: the prompt of an agent turn the job runs"},
	tools.Prop{Name: "systemEvent", Type: tools.TypeString, Description: "add/update: instead of message, a note queued for your main session's next turn"},
	tools.Prop{Name: "deliver", Type: tools.TypeString, Enum: []string{"announce", "webhook", "none"}, Description: "add/update: where an agent turn's answer goes: announce (a chat; default this one), webhook (to is the URL) or none"},
	tools.Prop{Name: "channel", Type: tools.TypeString, Description: "add/update: the chat platform of an announce (telegram, slack, discord)"},
	tools.Prop{Name: "to", Type: tools.TypeString, Description: "add/update: the chat of an announce in the channel's form, or the webhook URL"},
	tools.Prop{Name: "tools", Type: tools.TypeArray, Description: "add/update: the tools the job's runs may use (at most yours); default: yours"},
	tools.Prop{Name: "contextMessages", Type: tools.TypeInteger, Description: "add: with systemEvent, append up to this many (0-10) recent lines of this chat to the reminder, so it says what it was about"},
	tools.Prop{Name: "enabled", Type: tools.TypeBoolean, Description: "update: turn the job on or off"},
	tools.Prop{Name: "includeDisabled", Type: tools.TypeBoolean, Description: "list: show disabled jobs too"},
	tools.Prop{Name: "limit", Type: tools.TypeInteger, Description: "list: at most this many (1-200)"},
	tools.Prop{Name: "offset", Type: tools.TypeInteger, Description: "list: skip this many"},
	tools.Prop{Name: "runMode", Type: tools.TypeString, Enum: []string{"due", "force"}, Description: "run: due (default: only when it is due) or force (now)"},
	tools.Prop{Name: "text", Type: tools.TypeString, Description: "wake: the note"},
	tools.Prop{Name: "mode", Type: tools.TypeString, Enum: []string{"now", "next-heartbeat"}, Description: "wake: take it now or at the next heartbeat (default)"},
)

func (tool) Schema() json.RawMessage { return schema }

// Limits on what the model passes.
const (
	maxText = 16 << 10
	maxName = 200
)

func (tool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	r, err := parse(raw, time.Now())
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if env == nil || env.Crons == nil {
		return tools.Errorf("cron: this run cannot schedule jobs"), nil
	}
	r.Owner, r.Tools = env.Owner, env.ToolNames
	out, err := env.Crons.Cron(ctx, env.SessionKey, r)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("cron: %w", err)), nil
	}
	return tools.Result{Text: string(out)}, nil
}

var relative = regexp.MustCompile(`^(\d{1,6})([smhd])$`)

// parse checks the model's arguments and builds the request.
func parse(raw json.RawMessage, now time.Time) (tools.CronRequest, error) {
	var r tools.CronRequest
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return r, err
	}
	if r.Action, err = a.StringEnum("action", true, actions...); err != nil {
		return r, err
	}
	str := func(name string) (string, error) {
		v, err := a.String(name, false)
		v = strings.TrimSpace(v)
		if err == nil && len(v) > maxText {
			err = fmt.Errorf("cron: %s is over %d bytes", name, maxText)
		}
		return v, err
	}
	if r.JobID, err = str("jobId"); err != nil {
		return r, err
	}
	switch r.Action {
	case "get", "update", "remove", "run", "runs":
		if r.JobID == "" {
			return r, fmt.Errorf("cron: %s needs jobId", r.Action)
		}
	case "list":
		if a.Has("includeDisabled") {
			if r.IncludeDisabled, err = a.Bool("includeDisabled", false); err != nil {
				return r, err
			}
		}
		if a.Has("limit") {
			if r.Limit, err = a.Int("limit", false, 1, 200); err != nil {
				return r, err
			}
		}
		if a.Has("offset") {
			if r.Offset, err = a.Int("offset", false, 0, 1_000_000); err != nil {
				return r, err
			}
		}
	case "wake":
		if r.Text, err = str("text"); err != nil {
			return r, err
		}
		if r.Text == "" {
			return r, fmt.Errorf("cron: wake needs text")
		}
		if r.Mode, err = a.StringEnum("mode", false, "now", "next-heartbeat"); err != nil {
			return r, err
		}
	}
	if r.Action == "run" {
		if r.RunMode, err = a.StringEnum("runMode", false, "due", "force"); err != nil {
			return r, err
		}
		if r.RunMode == "" {
			r.RunMode = "due"
		}
	}
	if r.Action == "add" && a.Has("contextMessages") {
		if r.ContextMessages, err = a.Int("contextMessages", false, 0, automation.MaxContextMessages); err != nil {
			return r, err
		}
	}
	if r.Action == "add" || r.Action == "update" {
		job, err := jobOf(a, str, now, r.Action == "add")
		if err != nil {
			return r, err
		}
		if r.Job, err = json.Marshal(job); err != nil {
			return r, err
		}
	}
	return r, nil
}

// jobOf builds the job (add) or patch (update) of OpenClaw's job JSON
// from the flat arguments.
func jobOf(a tools.Args, str func(string) (string, error), now time.Time, add bool) (map[string]any, error) {
	job := map[string]any{}
	get := func(names ...string) (map[string]string, error) {
		out := map[string]string{}
		for _, n := range names {
			v, err := str(n)
			if err != nil {
				return nil, err
			}
			if v != "" {
				out[n] = v
			}
		}
		return out, nil
	}
	v, err := get("name", "at", "every", "cron", "tz", "message", "systemEvent", "deliver", "channel", "to")
	if err != nil {
		return nil, err
	}
	if n := v["name"]; n != "" {
		if len(n) > maxName {
			return nil, fmt.Errorf("cron: name is over %d bytes", maxName)
		}
		job["name"] = n
	} else if add {
		return nil, fmt.Errorf("cron: add needs name")
	}
	kinds := 0
	for _, k := range []string{"at", "every", "cron"} {
		if v[k] != "" {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return nil, fmt.Errorf("cron: give one of at, every and cron")
	case kinds == 0 && add:
		return nil, fmt.Errorf("cron: add needs a schedule: at, every or cron")
	case v["at"] != "":
		at := v["at"]
		if m := relative.FindStringSubmatch(at); m != nil {
			d, _ := time.ParseDuration(m[1] + map[string]string{"s": "s", "m": "m", "h": "h", "d": "h"}[m[2]])
			if m[2] == "d" {
				d *= 24
			}
			at = now.Add(d).UTC().Format(time.RFC3339)
		}
		job["schedule"] = map[string]any{"kind": "at", "at": at}
	case v["every"] != "":
		d, err := time.ParseDuration(v["every"])
		if err != nil || d < time.Second {
			return nil, fmt.Errorf("cron: every %q is not a duration of a second or more (such as 30m)", v["every"])
		}
		job["schedule"] = map[string]any{"kind": "every", "everyMs": d.Milliseconds()}
	case v["cron"] != "":
		s := map[string]any{"kind": "cron", "expr": v["cron"]}
		if v["tz"] != "" {
			s["tz"] = v["tz"]
		}
		job["schedule"] = s
	}
	switch {
	case v["message"] != "" && v["systemEvent"] != "":
		return nil, fmt.Errorf("cron: give message or systemEvent, not both")
	case v["message"] != "":
		p := map[string]any{"kind": "agentTurn", "message": v["message"]}
		if a.Has("tools") {
			list, err := a.StringList("tools", false)
			if err != nil {
				return nil, err
			}
			p["toolsAllow"] = list
		}
		job["payload"] = p
	case v["systemEvent"] != "":
		job["payload"] = map[string]any{"kind": "systemEvent", "text": v["systemEvent"]}
	case add:
		return nil, fmt.Errorf("cron: add needs message (an agent turn) or systemEvent (a note)")
	}
	if d := v["deliver"]; d != "" || v["channel"] != "" || v["to"] != "" {
		del := map[string]any{"mode": cmp(d, "announce")}
		if v["channel"] != "" {
			del["channel"] = v["channel"]
		}
		if v["to"] != "" {
			del["to"] = v["to"]
		}
		job["delivery"] = del
	}
	if a.Has("enabled") {
		on, err := a.Bool("enabled", false)
		if err != nil {
			return nil, err
		}
		job["enabled"] = on
	}
	return job, nil
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
