package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/automation"
	"talon/internal/config"
)

// `talon cron …` is OpenClaw's cron CLI (spec automation.md §11) over the
// running gateway's cron.* methods; only import works offline, on the
// database.

// cronConnHelp says where the cron and system commands connect.
const cronConnHelp = `It calls the running gateway over WebSocket, found as talon gateway call finds it:
--url, else the local gateway of --state-dir/--config; the secret from --token,
--password, $TALON_GATEWAY_TOKEN, $TALON_GATEWAY_PASSWORD, else the config's. A
refusal prints CODE: message and exits 1; bad flags exit 2.`

// gatewayFlags are connFlags and --state-dir: the flags of a command that
// only calls the gateway.
func gatewayFlags(cmd *cobra.Command, f *callFlags) {
	connFlags(cmd, f)
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "state directory whose config gives the default URL and secret (default ~/.talon)")
}

func newCronCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cron",
		Aliases: []string{"automations"},
		Short:   "Manage the running gateway's cron jobs (OpenClaw's cron CLI), or import OpenClaw's",
		Long: `Lists, adds, edits, runs and removes the scheduled jobs of the running gateway (a
tenant's with --tenant). get, add, edit, enable, disable, remove, run, runs and status
print the gateway's JSON answer, as OpenClaw's do; list and show print a table and key
facts unless --json. import reads OpenClaw's cron files into the database offline.

` + cronConnHelp,
	}
	cmd.AddCommand(newCronStatusCmd(), newCronListCmd(), newCronGetCmd("get", true), newCronGetCmd("show", false),
		newCronAddCmd(), newCronEditCmd(), newCronToggleCmd("enable", true), newCronToggleCmd("disable", false),
		newCronRunCmd(), newCronRunsCmd(), newCronRemoveCmd(), newCronImportCmd())
	return cmd
}

// printCall makes one call and prints its payload as JSON.
func printCall(cmd *cobra.Command, f callFlags, method string, params any) error {
	raw, err := callGateway(cmd, f, method, params)
	if err != nil {
		return err
	}
	return printPayload(cmd.OutOrStdout(), raw)
}

// jobID is the one argument naming a job.
func jobID(what string, args []string) (string, error) {
	id := strings.TrimSpace(args[0])
	if id == "" {
		return "", fmt.Errorf("cron %s: empty job id (talon cron list shows them)", what)
	}
	return id, nil
}

func newCronStatusCmd() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the scheduler's status: enabled, how many jobs, the next wake",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return printCall(cmd, f, "cron.status", nil) },
	}
	gatewayFlags(cmd, &f)
	cmd.Flags().Bool("json", true, "print JSON (the default; accepted for OpenClaw's spelling)")
	return cmd
}

func newCronListCmd() *cobra.Command {
	var f callFlags
	var all bool
	var agent string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the enabled jobs (--all: every job) with their schedule, next run and last status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			jobs, raw, err := listJobs(cmd, f, all, strings.TrimSpace(agent))
			if err != nil {
				return err
			}
			if f.asJSON {
				return printPayload(cmd.OutOrStdout(), raw)
			}
			printJobs(cmd.OutOrStdout(), jobs, time.Now())
			return nil
		},
	}
	gatewayFlags(cmd, &f)
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "include disabled jobs")
	fl.StringVar(&agent, "agent", "", "only the jobs of this agent")
	fl.BoolVar(&f.asJSON, "json", false, "print the gateway's answer as JSON")
	return cmd
}

// listJobs reads every page of cron.list. raw is the answer as one page
// ({jobs, total, …}) when there was one page, else the jobs gathered.
func listJobs(cmd *cobra.Command, f callFlags, all bool, agent string) ([]automation.Job, json.RawMessage, error) {
	var jobs []automation.Job
	var first json.RawMessage
	offset := 0
	for {
		params := map[string]any{"includeDisabled": all, "limit": 200, "offset": offset}
		if agent != "" {
			params["agentId"] = agent
		}
		raw, err := callGateway(cmd, f, "cron.list", params)
		if err != nil {
			return nil, nil, err
		}
		var page struct {
			Jobs       []automation.Job `json:"jobs"`
			NextOffset *int             `json:"nextOffset"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, nil, exitError{code: 1, msg: fmt.Sprintf("cron list: the gateway's answer is not a job list: %v", err)}
		}
		if first == nil {
			first = raw
		}
		jobs = append(jobs, page.Jobs...)
		// A page that does not advance would loop forever.
		if page.NextOffset == nil || *page.NextOffset <= offset || len(jobs) > automation.MaxJobs {
			break
		}
		offset = *page.NextOffset
	}
	if offset == 0 {
		return jobs, first, nil
	}
	raw, err := json.Marshal(map[string]any{"jobs": jobs, "total": len(jobs)})
	return jobs, raw, err
}

func newCronGetCmd(use string, asJSON bool) *cobra.Command {
	var f callFlags
	short := "Print a job as the gateway stores it (JSON)"
	if !asJSON {
		short = "Show a job's key facts: schedule, session, payload, delivery, next and last run"
	}
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID(use, args)
			if err != nil {
				return err
			}
			raw, err := callGateway(cmd, f, "cron.get", map[string]string{"id": id})
			if err != nil {
				return err
			}
			if f.asJSON {
				return printPayload(cmd.OutOrStdout(), raw)
			}
			var j automation.Job
			if err := json.Unmarshal(raw, &j); err != nil {
				return exitError{code: 1, msg: fmt.Sprintf("cron %s: the gateway's answer is not a job: %v", use, err)}
			}
			printJob(cmd.OutOrStdout(), j, time.Now())
			return nil
		},
	}
	gatewayFlags(cmd, &f)
	cmd.Flags().BoolVar(&f.asJSON, "json", asJSON, "print the job as JSON")
	return cmd
}

func newCronAddCmd() *cobra.Command {
	var f callFlags
	var jf jobFlags
	cmd := &cobra.Command{
		Use:     "add",
		Aliases: []string{"create"},
		Short:   "Add a job: a schedule, a system event or an agent turn, and where its result goes",
		Long: `add creates a job on the running gateway and prints it (with its deliveryPreview).
One schedule: --at (an ISO time, UTC without an offset unless --tz names a zone, or a
delay such as 20m, which becomes an absolute UTC time), --every (10m, 1h, 1d) or --cron
(5 or 6 fields, in --tz, else the gateway's zone; --exact or --stagger 30s). One payload:
--system-event TEXT (for the main session) or --message TEXT (an agent turn, isolated by
default, announcing its answer unless --webhook or --no-deliver).

` + cronConnHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			job, err := jf.fields(cmd.Flags().Changed, time.Now(), false)
			if err != nil {
				return fmt.Errorf("cron add: %w", err)
			}
			return printCall(cmd, f, "cron.add", job)
		},
	}
	gatewayFlags(cmd, &f)
	jf.register(cmd, false)
	cmd.Flags().Bool("json", true, "print JSON (the default; accepted for OpenClaw's spelling)")
	return cmd
}

func newCronEditCmd() *cobra.Command {
	var f callFlags
	var jf jobFlags
	cmd := &cobra.Command{
		Use:     "edit ID",
		Aliases: []string{"update"},
		Short:   "Change a job: the flags of add that are given, and the --clear-… ones",
		Long: `edit changes only what its flags name and prints the job. A new schedule flag
replaces the schedule; --tz, --exact or --stagger alone change the stored cron schedule.
--model, --thinking, --tools and --timeout-seconds change the stored agent turn.

` + cronConnHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID("edit", args)
			if err != nil {
				return err
			}
			patch, err := jf.fields(cmd.Flags().Changed, time.Now(), true)
			if err != nil {
				return fmt.Errorf("cron edit: %w", err)
			}
			if len(patch) == 0 {
				return errors.New("cron edit: nothing to change: pass at least one flag (talon cron edit --help)")
			}
			return printCall(cmd, f, "cron.update", map[string]any{"id": id, "patch": patch})
		},
	}
	gatewayFlags(cmd, &f)
	jf.register(cmd, true)
	cmd.Flags().Bool("json", true, "print JSON (the default; accepted for OpenClaw's spelling)")
	return cmd
}

func newCronToggleCmd(use string, enabled bool) *cobra.Command {
	var f callFlags
	short := "Enable a job: its next run is computed from now"
	if !enabled {
		short = "Disable a job: it keeps its definition and history but does not run on schedule"
	}
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID(use, args)
			if err != nil {
				return err
			}
			return printCall(cmd, f, "cron.update", map[string]any{"id": id, "patch": map[string]any{"enabled": enabled}})
		},
	}
	gatewayFlags(cmd, &f)
	cmd.Flags().Bool("json", true, "print JSON (the default; accepted for OpenClaw's spelling)")
	return cmd
}

func newCronRemoveCmd() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:     "remove ID",
		Aliases: []string{"rm", "delete"},
		Short:   "Remove a job (its run history is kept); an unknown id exits 1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID("remove", args)
			if err != nil {
				return err
			}
			raw, err := callGateway(cmd, f, "cron.remove", map[string]string{"id": id})
			if err != nil {
				return err
			}
			if err := printPayload(cmd.OutOrStdout(), raw); err != nil {
				return err
			}
			var res struct {
				Removed bool `json:"removed"`
			}
			if err := json.Unmarshal(raw, &res); err != nil || !res.Removed {
				return exitError{code: 1, msg: "cron remove: unknown cron job id: " + id}
			}
			return nil
		},
	}
	gatewayFlags(cmd, &f)
	cmd.Flags().Bool("json", true, "print JSON (the default; accepted for OpenClaw's spelling)")
	return cmd
}

func newCronRunsCmd() *cobra.Command {
	var f callFlags
	var id, runID, query, sortDir string
	var statuses, deliveries []string
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "runs [ID]",
		Short: "Print a job's run history (newest first) as JSON",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if id != "" && id != args[0] {
					return fmt.Errorf("cron runs: job %q and --id %q: name the job once", args[0], id)
				}
				id = args[0]
			}
			if id = strings.TrimSpace(id); id == "" {
				return errors.New("cron runs: name the job: talon cron runs ID (or --id ID)")
			}
			if limit < 1 || limit > 200 {
				return fmt.Errorf("cron runs: --limit %d: want 1 to 200", limit)
			}
			if offset < 0 {
				return fmt.Errorf("cron runs: --offset %d: must not be negative", offset)
			}
			p := map[string]any{"id": id, "limit": limit, "offset": offset}
			if runID != "" {
				p["runId"] = runID
			}
			if query != "" {
				p["query"] = query
			}
			if sortDir != "" {
				p["sortDir"] = sortDir
			}
			if st := withoutAll(statuses); len(st) > 0 {
				p["statuses"] = st
			}
			if len(deliveries) > 0 {
				p["deliveryStatuses"] = deliveries
			}
			return printCall(cmd, f, "cron.runs", p)
		},
	}
	gatewayFlags(cmd, &f)
	fl := cmd.Flags()
	fl.StringVar(&id, "id", "", "the job (instead of the argument)")
	fl.IntVar(&limit, "limit", 50, "at most this many runs (1 to 200)")
	fl.IntVar(&offset, "offset", 0, "skip this many runs (the previous page's nextOffset)")
	fl.StringVar(&runID, "run-id", "", "only this run (the runId talon cron run printed)")
	fl.StringSliceVar(&statuses, "status", nil, "only runs with these statuses: all, ok, error, skipped")
	fl.StringSliceVar(&deliveries, "delivery-status", nil, "only runs with these delivery statuses: delivered, not-delivered, unknown, not-requested")
	fl.StringVar(&query, "query", "", "only runs whose summary or error contains this text")
	fl.StringVar(&sortDir, "sort", "", "asc (oldest first) or desc (newest first, the default)")
	fl.Bool("json", true, "print JSON (the default; accepted for OpenClaw's spelling)")
	return cmd
}

// withoutAll drops OpenClaw's --status all, which is no filter.
func withoutAll(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "all" {
			out = append(out, v)
		}
	}
	return out
}

func newCronRunCmd() *cobra.Command {
	var f callFlags
	var due, wait bool
	var waitTimeout, pollInterval string
	cmd := &cobra.Command{
		Use:   "run ID",
		Short: "Run a job now (--due: only if it is due); --wait for its outcome",
		Long: `run asks the gateway to run the job now, even when it is disabled (--due: only when
it is due), and prints {ok, enqueued, runId}. With --wait it then polls cron.runs for that
run until it finishes (at most --wait-timeout, every --poll-interval) and prints its
run-log entry; it exits 0 only when the run's completionStatus is succeeded, and 1 when
it failed, was not enqueued, or did not finish in time.

` + cronConnHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID("run", args)
			if err != nil {
				return err
			}
			limit, every, err := waitBounds(wait, waitTimeout, pollInterval)
			if err != nil {
				return err
			}
			mode := "force"
			if due {
				mode = "due"
			}
			raw, err := callGateway(cmd, f, "cron.run", map[string]string{"id": id, "mode": mode})
			if err != nil {
				return err
			}
			if !wait {
				return printPayload(cmd.OutOrStdout(), raw)
			}
			return waitRun(cmd, f, id, raw, limit, every)
		},
	}
	gatewayFlags(cmd, &f)
	fl := cmd.Flags()
	fl.BoolVar(&due, "due", false, "run only if the job is due")
	fl.BoolVar(&wait, "wait", false, "wait for the run to finish; exit 0 only if it succeeded")
	fl.StringVar(&waitTimeout, "wait-timeout", "10m", "with --wait, how long to wait")
	fl.StringVar(&pollInterval, "poll-interval", "2s", "with --wait, how often to ask")
	fl.Bool("json", true, "print JSON (the default; accepted for OpenClaw's spelling)")
	return cmd
}

// waitBounds checks --wait-timeout and --poll-interval.
func waitBounds(wait bool, timeout, interval string) (time.Duration, time.Duration, error) {
	if !wait {
		return 0, 0, nil
	}
	limit, err := config.ParseDuration(timeout, time.Millisecond)
	if err != nil || limit <= 0 {
		return 0, 0, fmt.Errorf("cron run: --wait-timeout %q: want a duration such as 10m", timeout)
	}
	every, err := config.ParseDuration(interval, time.Millisecond)
	if err != nil || every <= 0 {
		return 0, 0, fmt.Errorf("cron run: --poll-interval %q: want a duration greater than 0, such as 2s", interval)
	}
	return limit, every, nil
}

// waitRun polls cron.runs for the run cron.run answered with until its
// entry appears (the run log holds finished runs only) or limit passes.
func waitRun(cmd *cobra.Command, f callFlags, id string, started json.RawMessage, limit, every time.Duration) error {
	var res struct {
		Enqueued bool   `json:"enqueued"`
		RunID    string `json:"runId"`
		Reason   string `json:"reason"`
	}
	if err := json.Unmarshal(started, &res); err != nil || !res.Enqueued || res.RunID == "" {
		if err := printPayload(cmd.OutOrStdout(), started); err != nil {
			return err
		}
		return exitError{code: 1, msg: "cron run: not run: " + strings.TrimPrefix(orElse(res.Reason, "no run id in the answer"), "cron run: ")}
	}
	deadline := time.Now().Add(limit)
	for {
		raw, err := callGateway(cmd, f, "cron.runs", map[string]any{"id": id, "runId": res.RunID, "limit": 1})
		if err != nil {
			return err
		}
		var page struct {
			Entries []json.RawMessage `json:"entries"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return exitError{code: 1, msg: fmt.Sprintf("cron run: the gateway's run history is not JSON: %v", err)}
		}
		if len(page.Entries) > 0 {
			return finishedRun(cmd, page.Entries[0])
		}
		if !time.Now().Add(every).Before(deadline) {
			return exitError{code: 1, msg: fmt.Sprintf("cron run: run %s did not finish within %v (--wait-timeout); talon cron runs %s --run-id %s shows it later",
				res.RunID, limit, id, res.RunID)}
		}
		select {
		case <-cmd.Context().Done():
			return exitError{code: 1, msg: "cron run: " + cmd.Context().Err().Error()}
		case <-time.After(every):
		}
	}
}

// finishedRun prints a run-log entry and exits 0 only for a succeeded one.
func finishedRun(cmd *cobra.Command, entry json.RawMessage) error {
	if err := printPayload(cmd.OutOrStdout(), entry); err != nil {
		return err
	}
	var r automation.Run
	if err := json.Unmarshal(entry, &r); err != nil {
		return exitError{code: 1, msg: fmt.Sprintf("cron run: the run-log entry is not a run: %v", err)}
	}
	if r.CompletionStatus == automation.CompletionSucceeded {
		return nil
	}
	msg := fmt.Sprintf("cron run: run %s ended %s, completion %s", r.RunID, r.Status, orElse(r.CompletionStatus, "unknown"))
	if e := orElse(r.Error, r.DeliveryError); e != "" {
		msg += ": " + e
	}
	return exitError{code: 1, msg: msg}
}

// orElse is a, else b.
func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// jobFlags are add's and edit's flags; fields turns the ones given into
// cron.add's job or cron.update's patch.
type jobFlags struct {
	name, description                    string
	at, every, cron, tz, stagger         string
	exact                                bool
	systemEvent, message                 string
	session, wake                        string
	announce, noDeliver                  bool
	channel, to, account, threadID       string
	webhook                              string
	bestEffort, noBestEffort             bool
	model, thinking, tools               string
	timeoutSeconds                       int
	deleteAfterRun, keepAfterRun         bool
	agent                                string
	disabled                             bool
	clearModel, clearAgent, clearChannel bool
	clearTo, clearAccount, clearThreadID bool
	clearThinking                        bool
}

func (jf *jobFlags) register(cmd *cobra.Command, edit bool) {
	fl := cmd.Flags()
	fl.StringVar(&jf.name, "name", "", "the job's name (required for add)")
	fl.StringVar(&jf.description, "description", "", "a description")
	fl.StringVar(&jf.at, "at", "", "run once at an ISO-8601 time (UTC without an offset, unless --tz) or after a delay such as 20m")
	fl.StringVar(&jf.every, "every", "", "run every interval, such as 10m, 1h or 1d")
	fl.StringVar(&jf.cron, "cron", "", "run on a cron expression (5 or 6 fields), such as \"0 7 * * 1-5\"")
	fl.StringVar(&jf.tz, "tz", "", "IANA zone of --cron, or of an --at time without an offset")
	fl.BoolVar(&jf.exact, "exact", false, "run a top-of-hour --cron exactly on time (no stagger)")
	fl.StringVar(&jf.stagger, "stagger", "", "spread a --cron schedule's runs over this window, such as 30s")
	fl.StringVar(&jf.systemEvent, "system-event", "", "queue this text as a system event (main-session job)")
	fl.StringVar(&jf.message, "message", "", "run an agent turn with this prompt")
	fl.StringVar(&jf.session, "session", "", "session target: main, isolated, current or session:KEY")
	fl.StringVar(&jf.wake, "wake", "", "wake mode of a main-session job: now or next-heartbeat")
	fl.BoolVar(&jf.announce, "announce", false, "post the final answer to a chat (--channel, --to)")
	fl.BoolVar(&jf.announce, "deliver", false, "deprecated OpenClaw spelling of --announce")
	_ = fl.MarkHidden("deliver")
	fl.StringVar(&jf.channel, "channel", "", "channel to announce on (telegram, slack, discord or last)")
	fl.StringVar(&jf.to, "to", "", "chat to announce to")
	fl.StringVar(&jf.account, "account", "", "channel account to announce from")
	fl.StringVar(&jf.threadID, "thread-id", "", "thread or topic to announce in")
	fl.StringVar(&jf.webhook, "webhook", "", "POST the finished run to this URL instead")
	fl.BoolVar(&jf.noDeliver, "no-deliver", false, "send the result nowhere")
	fl.BoolVar(&jf.bestEffort, "best-effort-deliver", false, "a failed delivery does not fail the run")
	fl.StringVar(&jf.model, "model", "", "model of the agent turn (provider/model)")
	fl.StringVar(&jf.thinking, "thinking", "", "thinking level of the agent turn")
	fl.StringVar(&jf.tools, "tools", "", "tools the agent turn may use, comma-separated (\"\" for none)")
	fl.IntVar(&jf.timeoutSeconds, "timeout-seconds", 0, "the agent turn's time limit in seconds (0: none)")
	fl.BoolVar(&jf.deleteAfterRun, "delete-after-run", false, "delete the job after a successful run (default for --at)")
	fl.BoolVar(&jf.keepAfterRun, "keep-after-run", false, "keep an --at job after it ran")
	fl.StringVar(&jf.agent, "agent", "", "agent that owns the job (default: the default agent)")
	if !edit {
		fl.BoolVar(&jf.disabled, "disabled", false, "create the job disabled")
		return
	}
	fl.BoolVar(&jf.noBestEffort, "no-best-effort-deliver", false, "a failed delivery fails the run again")
	fl.BoolVar(&jf.clearModel, "clear-model", false, "remove the job's model (the agent's applies)")
	fl.BoolVar(&jf.clearThinking, "clear-thinking", false, "remove the job's thinking level")
	fl.BoolVar(&jf.clearAgent, "clear-agent", false, "remove the job's agent (the default agent owns it)")
	fl.BoolVar(&jf.clearChannel, "clear-channel", false, "remove the delivery channel")
	fl.BoolVar(&jf.clearTo, "clear-to", false, "remove the delivery recipient")
	fl.BoolVar(&jf.clearAccount, "clear-account", false, "remove the delivery account")
	fl.BoolVar(&jf.clearThreadID, "clear-thread-id", false, "remove the delivery thread")
}

// fields is the job (edit false) or patch (edit true) the flags given
// (set) describe; now turns a relative --at into a time.
func (jf *jobFlags) fields(set func(string) bool, now time.Time, edit bool) (map[string]any, error) {
	m := map[string]any{}
	if err := exclusive(set, [][2]string{{"delete-after-run", "keep-after-run"}, {"agent", "clear-agent"},
		{"model", "clear-model"}, {"thinking", "clear-thinking"}, {"channel", "clear-channel"}, {"to", "clear-to"},
		{"account", "clear-account"}, {"thread-id", "clear-thread-id"}, {"best-effort-deliver", "no-best-effort-deliver"},
		{"system-event", "message"}, {"exact", "stagger"}}); err != nil {
		return nil, err
	}
	switch name := strings.TrimSpace(jf.name); {
	case set("name") && name == "":
		return nil, errors.New("--name: empty")
	case set("name"):
		m["name"] = name
	case !edit:
		return nil, errors.New("--name is required")
	}
	if set("description") {
		m["description"] = jf.description
	}
	s, err := jf.schedule(set, now, edit)
	if err != nil {
		return nil, err
	}
	if s != nil {
		m["schedule"] = s
	}
	p, err := jf.payload(set, edit)
	if err != nil {
		return nil, err
	}
	if p != nil {
		m["payload"] = p
	}
	if err := jf.target(set, m); err != nil {
		return nil, err
	}
	d, err := jf.delivery(set, edit)
	if err != nil {
		return nil, err
	}
	if d != nil {
		m["delivery"] = d
	}
	switch {
	case set("delete-after-run"):
		m["deleteAfterRun"] = true
	case set("keep-after-run"):
		m["deleteAfterRun"] = false
	}
	if set("disabled") {
		m["enabled"] = false
	}
	return m, nil
}

// exclusive refuses two flags of a pair given together.
func exclusive(set func(string) bool, pairs [][2]string) error {
	for _, p := range pairs {
		if set(p[0]) && set(p[1]) {
			return fmt.Errorf("--%s and --%s exclude each other", p[0], p[1])
		}
	}
	return nil
}

// schedule is the schedule the flags give: nil when none is (edit), a
// partial one when only --tz, --exact or --stagger is (edit).
func (jf *jobFlags) schedule(set func(string) bool, now time.Time, edit bool) (map[string]any, error) {
	var kinds []string
	for _, k := range []string{"at", "every", "cron"} {
		if set(k) {
			kinds = append(kinds, "--"+k)
		}
	}
	if len(kinds) > 1 {
		return nil, fmt.Errorf("%s: give one schedule", strings.Join(kinds, " and "))
	}
	if set("tz") {
		if _, err := automation.Zone(strings.TrimSpace(jf.tz)); err != nil || strings.TrimSpace(jf.tz) == "" {
			return nil, fmt.Errorf("--tz %q: want an IANA zone such as Europe/Vienna", jf.tz)
		}
	}
	staggered := set("exact") || set("stagger")
	s := map[string]any{}
	switch {
	case set("at"):
		if staggered {
			return nil, errors.New("--exact and --stagger apply to --cron schedules, not --at")
		}
		at, err := parseAtFlag(jf.at, strings.TrimSpace(jf.tz), now)
		if err != nil {
			return nil, err
		}
		return map[string]any{"kind": automation.KindAt, "at": at}, nil
	case set("every"):
		if set("tz") || staggered {
			return nil, errors.New("--tz, --exact and --stagger apply to --cron schedules, not --every")
		}
		d, err := config.ParseDuration(jf.every, 0)
		if err != nil || d < time.Millisecond {
			return nil, fmt.Errorf("--every %q: want an interval such as 10m, 1h or 1d", jf.every)
		}
		return map[string]any{"kind": automation.KindEvery, "everyMs": d.Milliseconds()}, nil
	case set("cron"):
		expr := strings.TrimSpace(jf.cron)
		if expr == "" {
			return nil, errors.New(`--cron: empty: want an expression such as "0 7 * * 1-5"`)
		}
		s["kind"], s["expr"] = automation.KindCron, expr
	case !edit:
		return nil, errors.New("a schedule is required: --at, --every or --cron")
	}
	if set("tz") {
		s["tz"] = strings.TrimSpace(jf.tz)
	}
	if set("exact") {
		s["staggerMs"] = 0
	}
	if set("stagger") {
		d, err := config.ParseDuration(jf.stagger, time.Millisecond)
		if err != nil || d > automation.MaxStaggerMs*time.Millisecond {
			return nil, fmt.Errorf("--stagger %q: want a window such as 30s or 5m, at most a day", jf.stagger)
		}
		s["staggerMs"] = d.Milliseconds()
	}
	if len(s) == 0 {
		return nil, nil
	}
	return s, nil
}

// parseAtFlag is --at as an absolute UTC ISO time: a delay (20m, 2h)
// from now, or an ISO time read in tz when it has no offset.
func parseAtFlag(s, tz string, now time.Time) (string, error) {
	s = strings.TrimSpace(s)
	if d, err := config.ParseDuration(strings.TrimPrefix(s, "+"), 0); err == nil && !isAllDigits(s) {
		if d <= 0 {
			return "", fmt.Errorf("--at %q: a delay must be more than 0", s)
		}
		return now.Add(d).UTC().Format(time.RFC3339), nil
	}
	t, err := automation.ParseAt(s)
	if err != nil {
		return "", fmt.Errorf("--at: %v, or a delay such as 20m", err)
	}
	if tz != "" && !isAllDigits(s) && !hasOffset(s) {
		loc, _ := automation.Zone(tz)
		t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}

// hasOffset says an ISO time names its zone (Z or ±hh:mm after the date).
func hasOffset(s string) bool {
	return len(s) > 10 && strings.ContainsAny(s[10:], "Zz+-")
}

func isAllDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// turnFlags are the flags that change an agent turn's payload.
var turnFlags = []string{"model", "thinking", "tools", "timeout-seconds", "clear-model", "clear-thinking"}

// payload is the payload the flags give: a whole one for --system-event
// or --message, else (edit) the agent turn's fields to merge.
func (jf *jobFlags) payload(set func(string) bool, edit bool) (map[string]any, error) {
	p := map[string]any{}
	switch {
	case set("system-event"):
		if strings.TrimSpace(jf.systemEvent) == "" {
			return nil, errors.New("--system-event: empty text")
		}
		for _, k := range turnFlags {
			if set(k) {
				return nil, fmt.Errorf("--%s applies to --message (agent turn) jobs, not --system-event", k)
			}
		}
		return map[string]any{"kind": automation.PayloadSystemEvent, "text": jf.systemEvent}, nil
	case set("message"):
		if strings.TrimSpace(jf.message) == "" {
			return nil, errors.New("--message: empty prompt")
		}
		p["kind"], p["message"] = automation.PayloadAgentTurn, jf.message
	case !edit:
		return nil, errors.New("a payload is required: --system-event TEXT or --message TEXT")
	}
	for _, s := range []struct {
		flag, key, v string
		clear        string
	}{{"model", "model", jf.model, "clear-model"}, {"thinking", "thinking", jf.thinking, "clear-thinking"}} {
		switch v := strings.TrimSpace(s.v); {
		case set(s.flag) && v == "":
			return nil, fmt.Errorf("--%s: empty (--clear-%s removes it)", s.flag, s.flag)
		case set(s.flag):
			p[s.key] = v
		case set(s.clear):
			p[s.key] = nil
		}
	}
	if set("tools") {
		tools := []string{}
		for t := range strings.SplitSeq(jf.tools, ",") {
			if t = strings.TrimSpace(t); t != "" {
				tools = append(tools, t)
			}
		}
		p["toolsAllow"] = tools
	}
	if set("timeout-seconds") {
		if jf.timeoutSeconds < 0 || jf.timeoutSeconds > automation.MaxTimeoutSecs {
			return nil, fmt.Errorf("--timeout-seconds %d: want 0 (none) to %d", jf.timeoutSeconds, automation.MaxTimeoutSecs)
		}
		p["timeoutSeconds"] = jf.timeoutSeconds
	}
	if len(p) == 0 {
		return nil, nil
	}
	return p, nil
}

// target sets sessionTarget, wakeMode and agentId.
func (jf *jobFlags) target(set func(string) bool, m map[string]any) error {
	if set("session") {
		s := strings.TrimSpace(jf.session)
		key, named := strings.CutPrefix(s, automation.TargetSessionPrefix)
		switch {
		case s == automation.TargetMain, s == automation.TargetIsolated, s == automation.TargetCurrent:
		case named && strings.TrimSpace(key) != "":
		default:
			return fmt.Errorf("--session %q: want main, isolated, current or session:KEY", jf.session)
		}
		m["sessionTarget"] = s
	}
	if set("wake") {
		if jf.wake != automation.WakeNow && jf.wake != automation.WakeNextHeartbeat {
			return fmt.Errorf("--wake %q: want now or next-heartbeat", jf.wake)
		}
		m["wakeMode"] = jf.wake
	}
	switch a := strings.TrimSpace(jf.agent); {
	case set("agent") && a == "":
		return errors.New("--agent: empty (--clear-agent removes it)")
	case set("agent"):
		m["agentId"] = a
	case set("clear-agent"):
		m["agentId"] = nil
	}
	return nil
}

// chatFlags are the flags of an announce delivery.
var chatFlags = []string{"announce", "deliver", "channel", "to", "account", "thread-id",
	"clear-channel", "clear-to", "clear-account", "clear-thread-id"}

// delivery is the delivery the flags give, or the fields to merge (edit).
func (jf *jobFlags) delivery(set func(string) bool, edit bool) (map[string]any, error) {
	var chat []string
	for _, k := range chatFlags {
		if set(k) {
			chat = append(chat, "--"+k)
		}
	}
	switch {
	case set("webhook") && (len(chat) > 0 || set("no-deliver")):
		return nil, errors.New("--webhook excludes --announce, --no-deliver, --channel, --to, --account and --thread-id")
	case set("no-deliver") && len(chat) > 0:
		return nil, fmt.Errorf("--no-deliver excludes %s", strings.Join(chat, ", "))
	}
	d := map[string]any{}
	switch {
	case set("webhook"):
		u, err := url.Parse(strings.TrimSpace(jf.webhook))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--webhook %q: want an http:// or https:// URL", jf.webhook)
		}
		d["mode"], d["to"] = automation.DeliverWebhook, u.String()
		if edit { // a chat route left over would not apply
			d["channel"], d["accountId"], d["threadId"] = nil, nil, nil
		}
	case set("no-deliver"):
		d["mode"] = automation.DeliverNone
	}
	for _, s := range []struct{ flag, key, v string }{{"channel", "channel", jf.channel}, {"to", "to", jf.to}, {"account", "accountId", jf.account}} {
		switch v := strings.TrimSpace(s.v); {
		case set(s.flag) && v == "":
			return nil, fmt.Errorf("--%s: empty (--clear-%s removes it)", s.flag, s.flag)
		case set(s.flag):
			d[s.key] = v
		case set("clear-" + s.flag):
			d[s.key] = nil
		}
	}
	switch t := strings.TrimSpace(jf.threadID); {
	case set("thread-id") && t == "":
		return nil, errors.New("--thread-id: empty (--clear-thread-id removes it)")
	case set("thread-id") && isAllDigits(t):
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--thread-id %q: too large", t)
		}
		d["threadId"] = n
	case set("thread-id"):
		d["threadId"] = t
	case set("clear-thread-id"):
		d["threadId"] = nil
	}
	if set("announce") || set("deliver") || set("channel") || set("to") || set("account") || set("thread-id") {
		d["mode"] = automation.DeliverAnnounce
	}
	switch {
	case set("best-effort-deliver"):
		d["bestEffort"] = true
	case set("no-best-effort-deliver"):
		d["bestEffort"] = false
	}
	if len(d) == 0 {
		return nil, nil
	}
	if _, ok := d["mode"]; !ok && !edit {
		d["mode"] = automation.DeliverAnnounce // --best-effort-deliver alone: of the default delivery
	}
	return d, nil
}

// printJobs writes list's table: id, name, schedule with its zone, next
// run in local time and relative, last status.
func printJobs(w io.Writer, jobs []automation.Job, now time.Time) {
	if len(jobs) == 0 {
		fmt.Fprintln(w, "No cron jobs.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCHEDULE\tNEXT RUN\tLAST")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.ID, clip(oneLine(j.Name), 40), scheduleText(j.Schedule), nextText(j, now), lastText(j.State))
	}
	tw.Flush()
}

// printJob writes show's key facts.
func printJob(w io.Writer, j automation.Job, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("id", j.ID)
	row("name", oneLine(j.Name))
	if j.Description != "" {
		row("description", oneLine(j.Description))
	}
	row("enabled", strconv.FormatBool(j.Enabled))
	row("agent", orElse(j.AgentID, "(the default agent)"))
	row("schedule", scheduleText(j.Schedule))
	session := j.SessionTarget
	if j.SessionTarget == automation.TargetMain {
		session += ", wake " + j.WakeMode
	}
	row("session", session)
	row("payload", payloadText(j.Payload))
	row("delivery", deliveryText(j.Delivery))
	if j.DeleteAfterRun {
		row("after run", "deleted when it succeeds")
	}
	row("next run", nextText(j, now))
	st := j.State
	if st.LastRunAtMs != nil {
		last := fmt.Sprintf("%s at %s", lastText(st), whenText(*st.LastRunAtMs, now))
		if st.LastDurationMs != nil {
			last += fmt.Sprintf(", took %v", (time.Duration(*st.LastDurationMs) * time.Millisecond).Round(time.Millisecond))
		}
		row("last run", last)
	}
	if st.LastError != "" {
		row("last error", clip(oneLine(st.LastError), 200))
	}
	if st.LastDeliveryStatus != "" {
		d := st.LastDeliveryStatus
		if st.LastDeliveryError != "" {
			d += ": " + clip(oneLine(st.LastDeliveryError), 200)
		}
		row("last delivery", d)
	}
	if a := st.AutoDisabled; a != nil {
		row("auto-disabled", fmt.Sprintf("%s, at %s", a.Reason, whenText(a.AtMs, now)))
	}
	tw.Flush()
}

// scheduleText is a schedule in one line, a cron one with its zone.
func scheduleText(s automation.Schedule) string {
	switch s.Kind {
	case automation.KindAt:
		if t, err := automation.ParseAt(s.At); err == nil {
			return "at " + t.UTC().Format(time.RFC3339)
		}
		return "at " + s.At
	case automation.KindEvery:
		return "every " + shortDuration(time.Duration(s.EveryMs)*time.Millisecond)
	case automation.KindCron:
		out := fmt.Sprintf("cron %s (%s)", s.Expr, orElse(s.TZ, "gateway zone"))
		if s.StaggerMs != nil && *s.StaggerMs > 0 {
			out += ", stagger " + shortDuration(time.Duration(*s.StaggerMs)*time.Millisecond)
		}
		return out
	}
	return s.Kind
}

// nextText is when a job runs next, in local time and relative to now.
func nextText(j automation.Job, now time.Time) string {
	switch {
	case j.State.RunningAtMs != nil:
		return "running since " + whenText(*j.State.RunningAtMs, now)
	case !j.Enabled:
		return "disabled"
	case j.State.NextRunAtMs == nil:
		return "-"
	}
	return whenText(*j.State.NextRunAtMs, now)
}

// whenText is a time in local time, and how far from now.
func whenText(ms int64, now time.Time) string {
	t := time.UnixMilli(ms).Local()
	return t.Format("2006-01-02 15:04 MST") + " (" + relative(t.Sub(now)) + ")"
}

// relative is "in 1h5m" or "3m ago", to the minute past a minute.
func relative(d time.Duration) string {
	a := d.Abs()
	var s string
	switch {
	case a < time.Minute:
		s = a.Round(time.Second).String()
	case a < 48*time.Hour:
		s = shortDuration(a.Round(time.Minute))
	default:
		s = fmt.Sprintf("%dd%dh", a/(24*time.Hour), a%(24*time.Hour)/time.Hour)
	}
	if d < 0 {
		return s + " ago"
	}
	return "in " + s
}

// shortDuration drops a duration's zero tail: 10m, not 10m0s.
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

// lastText is the last run's status, with a streak of errors counted.
func lastText(st automation.JobState) string {
	switch {
	case st.LastRunStatus == "":
		return "-"
	case st.LastRunStatus == automation.StatusError && st.ConsecutiveErrors > 1:
		return fmt.Sprintf("error (%d in a row)", st.ConsecutiveErrors)
	case st.LastRunStatus == automation.StatusOK && st.LastDeliveryStatus == automation.NotDelivered:
		return "ok (not delivered)"
	}
	return st.LastRunStatus
}

func payloadText(p automation.Payload) string {
	if p.Kind == automation.PayloadSystemEvent {
		return "system event " + strconv.Quote(clip(p.Text, 80))
	}
	out := "agent turn " + strconv.Quote(clip(p.Message, 80))
	var extra []string
	if p.Model != "" {
		extra = append(extra, "model "+p.Model)
	}
	if p.Thinking != "" {
		extra = append(extra, "thinking "+p.Thinking)
	}
	if p.ToolsAllow != nil {
		extra = append(extra, "tools "+orElse(strings.Join(p.ToolsAllow, ","), "none"))
	}
	if p.TimeoutSeconds != nil {
		extra = append(extra, fmt.Sprintf("timeout %ds", *p.TimeoutSeconds))
	}
	if len(extra) > 0 {
		out += " (" + strings.Join(extra, ", ") + ")"
	}
	return out
}

func deliveryText(d *automation.Delivery) string {
	if d == nil {
		return "none"
	}
	out := d.Mode
	switch d.Mode {
	case automation.DeliverAnnounce:
		out += " on " + orElse(d.Channel, "the last channel")
		if d.To != "" {
			out += " to " + d.To
		}
		if d.AccountID != "" {
			out += " as " + d.AccountID
		}
		if len(d.ThreadID) > 0 {
			out += " thread " + strings.Trim(string(d.ThreadID), `"`)
		}
	case automation.DeliverWebhook:
		out += " " + d.To
	}
	if d.BestEffort {
		out += " (best effort)"
	}
	return out
}

// clip cuts s to n runes, marked.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
