package studio

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"talon/internal/sandbox"
)

// setRole applies an execution role: exec.approvals.set, config.patch
// and sessions.patch, each against the base it read. Everything is read
// and computed before the first write; when a later write fails the
// earlier ones are put back, so a role is applied whole or not at all
// (the page says so when putting back fails too).
func (s *Server) setRole(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, 16<<10)
	role, ok := roleByID(q.r.PostFormValue("role"))
	if !ok {
		s.showAgent(q, http.StatusBadRequest, fmt.Sprintf("%q is not an execution role: choose conservative, collaborative or autonomous.", q.r.PostFormValue("role")), nil)
		return
	}
	a, _, ok := s.pathAgent(q)
	if !ok {
		return
	}
	plan, err := s.planRole(q, a.ID, role)
	if err != nil {
		s.showAgent(q, http.StatusBadGateway, "Nothing changed: "+s.errText(q, err), nil)
		return
	}
	if changed, err := s.applyRole(q, plan); err != nil {
		s.showAgent(q, http.StatusBadGateway, err.Error(), nil)
	} else {
		s.showAgent(q, http.StatusOK, "", changed)
	}
}

// rolePlan is the three writes of a role, with what undoes each.
type rolePlan struct {
	role Role
	// approvals: the file to write and the one to put back.
	approvals, approvalsBefore map[string]any
	approvalsHash              string
	approvalsChange            bool
	// config: the merge patches of the agent's tools, and of putting
	// them back.
	toolsPatch, toolsUndo string
	configHash            string
	configChange          bool
	// session: the main session's patch; it is the last write, so
	// nothing needs putting back after it.
	session map[string]any
}

func (s *Server) planRole(q *req, id string, role Role) (*rolePlan, error) {
	p := &rolePlan{role: role}
	var ap approvalsSnapshot
	if err := s.call(q, "exec.approvals.get", nil, &ap); err != nil {
		return nil, err
	}
	var err error
	if p.approvalsBefore, err = object(ap.File, "the approvals file"); err != nil {
		return nil, err
	}
	if p.approvals, err = object(ap.File, "the approvals file"); err != nil {
		return nil, err
	}
	p.approvalsHash = ap.Hash
	agents, _ := p.approvals["agents"].(map[string]any)
	if agents == nil {
		agents = map[string]any{}
		p.approvals["agents"] = agents
	}
	entry, _ := agents[id].(map[string]any)
	if entry == nil {
		entry = map[string]any{}
	}
	if entry["security"] != role.Security || entry["ask"] != role.Ask {
		entry["security"], entry["ask"] = role.Security, role.Ask
		agents[id] = entry
		p.approvalsChange = true
	}

	var snap configSnapshot
	if err := s.call(q, "config.get", nil, &snap); err != nil {
		return nil, err
	}
	if !snap.Valid {
		return nil, fmt.Errorf("the config at %s is not valid; fix it first (talon doctor says how)", snap.Path)
	}
	before, err := snap.tree()
	if err != nil {
		return nil, err
	}
	after, err := snap.tree()
	if err != nil {
		return nil, err
	}
	p.configHash = snap.Hash
	var toolsBefore map[string]any
	if e := agentEntry(before, id); e != nil {
		toolsBefore, _ = e["tools"].(map[string]any)
	}
	e := agentEntry(after, id)
	if e == nil {
		// The implicit default agent gets an entry of its own.
		e = map[string]any{"id": id}
	}
	p.configChange = applyRoleTools(e, role)
	toolsAfter, _ := e["tools"].(map[string]any)
	p.toolsPatch = entryPatch(id, "tools", diffKeys(toolsBefore, toolsAfter))
	p.toolsUndo = entryPatch(id, "tools", diffKeys(toolsAfter, toolsBefore))

	var sx sandbox.Explanation
	if err := s.call(q, "sandbox.explain", map[string]string{"agentId": id}, &sx); err != nil {
		return nil, err
	}
	// Seed 002: a sandboxed agent's commands stay in the sandbox whatever
	// the role; the others run on the gateway host under the approvals
	// policy.
	host := "gateway"
	if sx.Plan.Sandboxed {
		host = "sandbox"
	}
	key := sx.Plan.MainSessionKey
	p.session = map[string]any{"key": key, "execHost": host, "execSecurity": role.Security, "execAsk": role.Ask}
	return p, nil
}

// applyRole makes the writes and returns what changed, one line each.
func (s *Server) applyRole(q *req, p *rolePlan) ([]string, error) {
	var done []string
	var undo []func() error
	fail := func(step string, err error) error {
		var lost []string
		for i := len(undo) - 1; i >= 0; i-- {
			if uerr := undo[i](); uerr != nil {
				lost = append(lost, s.errText(q, uerr))
			}
		}
		if len(lost) > 0 {
			return fmt.Errorf("%s failed (%s), and putting back what was already written failed too: %s. Written: %s",
				step, s.errText(q, err), strings.Join(lost, "; "), strings.Join(done, "; "))
		}
		return fmt.Errorf("Nothing changed: %s failed: %s", step, s.errText(q, err))
	}
	if p.approvalsChange {
		var res struct {
			Hash string `json:"hash"`
		}
		if err := s.call(q, "exec.approvals.set", map[string]any{"file": p.approvals, "baseHash": p.approvalsHash}, &res); err != nil {
			return nil, fail("writing the exec approvals", err)
		}
		done = append(done, fmt.Sprintf("exec approvals: security %s, ask %s", p.role.Security, p.role.Ask))
		undo = append(undo, func() error {
			return s.call(q, "exec.approvals.set", map[string]any{"file": p.approvalsBefore, "baseHash": res.Hash}, nil)
		})
	}
	if p.configChange {
		var res struct {
			Hash string `json:"hash"`
		}
		if err := s.call(q, "config.patch", map[string]any{"raw": p.toolsPatch, "baseHash": p.configHash}, &res); err != nil {
			return nil, fail("changing the agent's tools in the config", err)
		}
		verb := "granted"
		if !p.role.Runtime {
			verb = "denied"
		}
		done = append(done, "runtime tools (exec, process): "+verb+" ("+runtimeGroup+")")
		undo = append(undo, func() error {
			return s.call(q, "config.patch", map[string]any{"raw": p.toolsUndo, "baseHash": res.Hash}, nil)
		})
	}
	if err := s.call(q, "sessions.patch", p.session, nil); err != nil {
		return nil, fail("setting the main session's exec settings", err)
	}
	done = append(done, fmt.Sprintf("main session %s: execHost %s, execSecurity %s, execAsk %s", p.session["key"], p.session["execHost"], p.role.Security, p.role.Ask))
	return done, nil
}

// entryPatch is a config merge patch of one agents.list entry: the
// gateway merges list elements by id, so the patch names the entry and
// only the key it changes; a nil value in v deletes that key.
func entryPatch(id, key string, v map[string]any) string {
	b, _ := json.Marshal(map[string]any{"agents": map[string]any{"list": []any{map[string]any{"id": id, key: v}}}})
	return string(b)
}

// diffKeys is the merge patch that turns object a into b, one level
// deep: keys b changes or adds with b's value, keys it drops as null.
func diffKeys(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k := range a {
		if _, ok := b[k]; !ok {
			out[k] = nil
		}
	}
	for k, v := range b {
		if old, ok := a[k]; !ok || !sameJSON(old, v) {
			out[k] = v
		}
	}
	return out
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// ensureRepair runs the sandbox allow-list repair once per tenant and
// Studio process, on the first page of the tenant, and returns the
// notices of what it changed (kept, so every page of the tenant shows
// them).
func (s *Server) ensureRepair(q *req) []string {
	o := s.repair.of(q.tenant)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ran {
		return o.Notices
	}
	var snap configSnapshot
	if err := s.call(q, "config.get", nil, &snap); err != nil || !snap.Valid {
		return nil // tried again on the next page
	}
	cfg, err := snap.tree()
	if err != nil {
		return nil
	}
	ids := sandboxRepairs(cfg)
	if len(ids) > 0 {
		if err := s.call(q, "config.patch", map[string]any{"raw": repairPatch(ids), "baseHash": snap.Hash}, nil); err != nil {
			s.log.Warn("studio: sandbox allow-list repair", "tenant", q.tenant, "err", err)
			return []string{"Studio could not repair the empty sandbox allow lists of " + strings.Join(ids, ", ") + ": " + s.errText(q, err)}
		}
		for _, id := range ids {
			o.Notices = append(o.Notices, repairNotice(id))
		}
	}
	o.ran = true
	return o.Notices
}
