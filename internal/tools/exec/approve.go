package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"talon/internal/approval"
	"talon/internal/approval/analyze"
	"talon/internal/sandbox"
	"talon/internal/tools"
)

// EventTail is how much of an approved command's output its "Exec
// finished" system event carries: the last 4 KiB. The event stays in the
// session's history, which every later turn sends to the model.
const EventTail = 4 << 10

// gated is one command's approval decision and what it was made from.
type gated struct {
	command  string
	view     view
	eff      approval.Effective
	plan     *analyze.Plan
	verdict  approval.Verdict
	decision approval.Decision
	// uses are the allowlist entries a hit matched, to stamp when it runs.
	uses []approval.Use
	// corrupt says why the approvals file is unusable (policy deny-all).
	corrupt error
	envKeys []string
	agentID string
}

// gate decides what happens to the command of x in env (spec §4.3, §4.4):
// the requested policy with the call's own security/ask and the approvals
// file, resolved for where the command runs; the command analysed as that
// place would run it; the decision table. An error is a policy that cannot
// be resolved (a bad value in a layer, a host Talon does not have).
func gate(_ context.Context, env *tools.Env, x execArgs) (*gated, error) {
	g := &gated{command: x.command, view: viewOf(env, x.workdir)}
	if g.view.err != nil {
		return nil, fmt.Errorf("exec: %w; the command did not run", g.view.err)
	}
	g.view.env.Vars = x.env
	for _, kv := range x.env[1:] { // [0] is OPENCLAW_SHELL
		k, _, _ := strings.Cut(kv, "=")
		g.envKeys = append(g.envKeys, k)
	}
	file := approval.Empty() // no service: no file to tighten the policy
	if env.Approvals != nil {
		snap := env.Approvals.Store.Load()
		file, g.corrupt = snap.File, snap.Corrupt
	}
	in := env.ExecPolicy
	if in.AgentID == "" {
		in.AgentID = env.AgentID
	}
	g.agentID = in.AgentID
	in.File, in.CallSecurity, in.CallAsk, in.RunsOn = file, x.security, x.ask, g.view.host
	eff, err := approval.Resolve(in)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	if eff.RequestedHost == approval.HostNode {
		return nil, fmt.Errorf(`exec: host "node" (from %s) is not available: Talon has no node hosts; use "sandbox" or "gateway"`, eff.Sources["requestedHost"])
	}
	g.eff = eff
	g.plan = analyze.Analyze(x.command, g.view.env)
	g.verdict, g.uses = judge(g.plan, eff, g.view.env, x.command)
	g.decision = approval.Decide(eff, g.verdict, approval.DecideOptions{})
	return g, nil
}

// judge turns a plan into the Verdict the decision table reads: a hit when
// every segment's executable matches an allowlist entry (an entry with an
// argPattern is not matched: Talon does not implement argument patterns,
// and guessing would allow too much), the safe segments' paths for
// allow-always, the extra prompt triggers, and the exact-command marker.
// It also returns the entries to stamp as used.
func judge(plan *analyze.Plan, eff approval.Effective, env analyze.Env, command string) (approval.Verdict, []approval.Use) {
	v := approval.Verdict{Decidable: plan.Decidable()}
	var uses []approval.Use
	v.AllowlistHit = plan.Hit(func(s analyze.Segment) bool {
		for _, e := range eff.Allowlist {
			if e.ArgPattern != "" || strings.HasPrefix(e.Pattern, "=") {
				continue
			}
			if analyze.MatchPattern(e.Pattern, s.Path, env) {
				uses = append(uses, approval.Use{EntryID: e.ID, Command: command, ResolvedPath: s.Path})
				return true
			}
		}
		return false
	})
	if !v.AllowlistHit {
		uses = nil
	}
	for _, s := range plan.Segments {
		if len(s.Reasons) == 0 && strings.HasPrefix(s.Path, "/") {
			v.ResolvedPaths = append(v.ResolvedPaths, s.Path)
		}
	}
	for _, r := range plan.AllReasons() {
		switch r.Code {
		case analyze.CodeHeredoc:
			v.Heredoc = true
		case analyze.CodeControl, analyze.CodeNonASCII:
			// What a reviewer cannot see as it runs: invisible characters,
			// look-alike command names.
			v.Obfuscated = true
		case analyze.CodeConfigured:
			if v.Configured == "" {
				v.Configured = r.Detail
			}
		}
	}
	marker := approval.CommandMarker(command)
	for _, e := range eff.Allowlist {
		if e.Pattern == marker {
			v.ExactApproved = true
			if !v.AllowlistHit {
				uses = append(uses, approval.Use{EntryID: e.ID, Command: command, ResolvedPath: firstPath(plan)})
			}
			break
		}
	}
	return v, uses
}

func firstPath(plan *analyze.Plan) string {
	if len(plan.Segments) > 0 {
		return plan.Segments[0].Path
	}
	return ""
}

// policyLine says which policy decided, with the source of each value.
func (g *gated) policyLine() string {
	e := g.eff
	return fmt.Sprintf("host=%s security=%s (%s) ask=%s (%s) askFallback=%s (%s)", e.Host,
		e.Security, e.Sources["security"], e.Ask, e.Sources["ask"], e.AskFallback, e.Sources["askFallback"])
}

// why explains a miss: the analyser's reasons, or that nothing matched.
func (g *gated) why() string {
	if rs := g.plan.AllReasons(); len(rs) > 0 {
		parts := make([]string, 0, min(len(rs), 5))
		for _, r := range rs[:min(len(rs), 5)] {
			parts = append(parts, r.String())
		}
		more := ""
		if len(rs) > 5 {
			more = fmt.Sprintf("; and %d more", len(rs)-5)
		}
		return "the command analysis could not approve it: " + strings.Join(parts, "; ") + more
	}
	var paths []string
	for _, s := range g.plan.Segments {
		paths = append(paths, s.Path)
	}
	return "not every program it runs is on the allowlist (" + strings.Join(paths, ", ") + ")"
}

// hint says what an operator can change, for the place the command runs.
func (g *gated) hint() string {
	if g.view.host == approval.HostGateway {
		return `exec: this session has no isolating sandbox (sandbox backend "host"), so its commands run on the gateway host, ` +
			`where the exec approval policy decides what runs. To let this command run: add its program to the allowlist ` +
			`in exec-approvals.json (talon approvals set), approve it when exec asks (talon approvals resolve, or an operator client), ` +
			`set tools.exec.security to "full" (or agents.list[].tools.exec.security for one agent) to run every command on the host, ` +
			`or isolate commands instead with agents.defaults.sandbox.mode "all" and backend "bwrap" or "docker".`
	}
	return "The policy comes from the session's execSecurity/execAsk, agents.list[].tools.exec and tools.exec; exec-approvals.json can only tighten it."
}

// refusal is the result of a command the policy denies outright.
func (g *gated) refusal() tools.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\nPolicy: %s.\n", g.decision.Reason, g.command, g.policyLine())
	if g.corrupt != nil {
		b.WriteString(g.corrupt.Error() + "\n")
	} else if g.eff.Security == approval.SecurityAllowlist {
		b.WriteString("It was not asked about because ask is off; " + g.why() + ".\n")
	}
	b.WriteString(g.hint())
	return tools.Result{Text: b.String(), IsError: true}
}

// ask registers an approval for the command. When the outcome is known at
// once — nobody is connected to approve (the fallback applies), or an
// operator was quicker than this call — it returns run=true with a note
// to add to the command's result, or the refusal. Otherwise the command
// waits in the background (see afterApproval) and the result is
// approval-pending.
func (t *execTool) ask(ctx context.Context, env *tools.Env, g *gated, cmd sandbox.Command) (res tools.Result, run bool, err error) {
	m := &approval.Manager{} // nobody to ask: the fallback applies at once
	if env.Approvals != nil {
		m = env.Approvals.Manager
	}
	req := approval.Request{
		Command: g.command, Cwd: g.view.env.Dir, Host: g.eff.Host, Security: g.eff.Security, Ask: g.eff.Ask,
		AgentID: g.agentID, ResolvedPath: firstPath(g.plan), SessionKey: env.SessionKey, EnvKeys: g.envKeys,
		ResolvedPaths: g.verdict.ResolvedPaths, Hit: g.verdict.Hit(), AskFallback: g.eff.AskFallback, Timeout: env.ApprovalTimeout,
	}
	if g.verdict.Configured != "" {
		req.UnavailableDecisions, req.UnavailableWhy = []string{approval.DecisionAllowAlways}, g.verdict.Configured
	}
	p, err := m.Request(req)
	if err != nil {
		return tools.Errorf("exec: asking for approval: %v", err), false, nil
	}
	select {
	case <-p.Done():
		r := p.Result()
		if !r.Run {
			var b strings.Builder
			fmt.Fprintf(&b, "%s\nIt needed approval (%s) and %s.\nPolicy: %s.\n", deniedText(g.eff.Host, r.ID, r.Reason, g.command),
				g.decision.Reason, decidedHow(r, g.eff.AskFallback), g.policyLine())
			b.WriteString(g.hint())
			return tools.Result{Text: b.String(), IsError: true}, false, nil
		}
		return tools.Result{Text: fmt.Sprintf("[exec approval: it needed approval (%s) and %s]", g.decision.Reason, decidedHow(r, g.eff.AskFallback))}, true, nil
	default:
	}
	if err := env.Approvals.Go(func(bctx context.Context) { afterApproval(bctx, env, p, req, cmd) }); err != nil {
		// Shutting down: the Manager has already ended the approval.
		return tools.ErrorResult(fmt.Errorf("exec: %w; the command did not run", err)), false, nil
	}
	return pendingResult(p, req, g), false, nil
}

// decidedHow says how an approval decided at once came to its result.
func decidedHow(r approval.Result, fallback approval.Security) string {
	if r.Decision != "" {
		return "an operator decided " + r.Decision
	}
	if r.Reason == "gateway-shutdown" {
		return "the gateway is shutting down"
	}
	verb := "let it run"
	if !r.Run {
		verb = "denies it"
	}
	return fmt.Sprintf("no operator with operator.approvals is connected to approve it, so askFallback %q %s", fallback, verb)
}

// pendingDetails are approval-pending's details (spec §4.5).
type pendingDetails struct {
	Status       string        `json:"status"`
	ApprovalID   string        `json:"approvalId"`
	ApprovalSlug string        `json:"approvalSlug"`
	ExpiresAtMs  int64         `json:"expiresAtMs"`
	Host         approval.Host `json:"host"`
	Command      string        `json:"command"`
	Cwd          string        `json:"cwd"`
}

// pendingResult is what the model gets for a command that waits for an
// operator: a sentence saying so, then the details as one JSON line.
func pendingResult(p *approval.Pending, req approval.Request, g *gated) tools.Result {
	slug := approval.Slug(p.ID)
	d, _ := json.Marshal(pendingDetails{
		Status: "approval-pending", ApprovalID: p.ID, ApprovalSlug: slug, ExpiresAtMs: p.ExpiresAtMs,
		Host: req.Host, Command: req.Command, Cwd: req.Cwd,
	})
	wait := time.Duration(p.ExpiresAtMs-p.CreatedAtMs) * time.Millisecond
	decisions := "allow-once|allow-always|deny"
	if len(req.UnavailableDecisions) > 0 || req.Ask == approval.AskAlways {
		decisions = "allow-once|deny"
	}
	return tools.Result{Text: fmt.Sprintf("Approval required (id %s): %s. The command has not run: an operator must approve it within %s "+
		"(talon approvals resolve %s %s, or an operator client). Its outcome arrives in this session as a "+
		"system event, \"Exec finished …\" or \"Exec denied …\"; do not run it again meanwhile.\n%s", slug, g.decision.Reason, wait, slug, decisions, d)}
}

// afterApproval waits for the operator's decision (or the fallback), runs
// the command if allowed, and posts the outcome to the session as a
// system event. ctx ends when the approvals service closes: a command
// still running then is killed.
func afterApproval(ctx context.Context, env *tools.Env, p *approval.Pending, req approval.Request, cmd sandbox.Command) {
	svc := env.Approvals
	r, err := p.Wait(ctx)
	if err != nil {
		r = approval.Result{ID: p.ID, Reason: "gateway-shutdown"}
	}
	if !r.Run {
		svc.Post(req.AgentID, req.SessionKey, deniedText(req.Host, p.ID, r.Reason, req.Command))
		return
	}
	svc.Post(req.AgentID, req.SessionKey, runApproved(ctx, env, p.ID, r, req, cmd))
}

// runApproved runs an approved command to its end and returns its
// "Exec finished" event.
func runApproved(ctx context.Context, env *tools.Env, id string, r approval.Result, req approval.Request, cmd sandbox.Command) string {
	head := fmt.Sprintf("%s id=%s, session=%s", req.Host, id, req.SessionKey)
	out := newOutBuf(0, EventTail)
	cmd.Stdout, cmd.Stderr = out, out
	var b strings.Builder
	proc, err := env.Sandbox.Start(ctx, cmd)
	if err != nil {
		fmt.Fprintf(&b, "Exec failed (%s): starting the command: %v: %s", head, err, req.Command)
	} else if exit, err := proc.Wait(); err != nil {
		fmt.Fprintf(&b, "Exec failed (%s): the command's end could not be observed: %v: %s", head, err, req.Command)
	} else {
		label := fmt.Sprintf("code %d", exit.Code)
		switch {
		case ctx.Err() != nil:
			label = "killed: the gateway is shutting down"
		case exit.TimedOut:
			label = "timed out: killed with everything it started"
		case exit.Signal != "":
			label = "signal " + exit.Signal
		}
		fmt.Fprintf(&b, "Exec finished (%s, %s)", head, label)
		if text, _ := out.Render(0, 0, EventTail); text != "" {
			b.WriteString("\n" + strings.TrimSuffix(text, "\n"))
		}
	}
	if r.PersistErr != nil {
		fmt.Fprintf(&b, "\n[allow-always could not be saved, so it was allowed once: %v]", r.PersistErr)
	}
	return b.String()
}

// deniedText is the "Exec denied" event and refusal (spec §4.5).
func deniedText(host approval.Host, id, reason, command string) string {
	return fmt.Sprintf("Exec denied (%s id=%s, %s): %s", host, id, reason, command)
}
