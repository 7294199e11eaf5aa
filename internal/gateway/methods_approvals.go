package gateway

import (
	"encoding/json"
	"errors"
	"strings"

	"talon/internal/approval"
	"talon/protocol"
)

func init() {
	register("exec.approvals.get", protocol.ScopeAdmin, approvalsGet)
	register("exec.approvals.set", protocol.ScopeAdmin, approvalsSet)
	register("exec.approval.resolve", protocol.ScopeApprovals, approvalResolve)
	register("exec.approval.list", protocol.ScopeApprovals, approvalList)
}

func approvalsGet(s *Server, c *call) (any, error) {
	if err := c.params(&struct{}{}); err != nil {
		return nil, err
	}
	svc, err := c.t.approvalService(s)
	if err != nil {
		return nil, err
	}
	return svc.Store.Load().View(), nil
}

func approvalsSet(s *Server, c *call) (any, error) {
	var p struct {
		File     json.RawMessage `json:"file"`
		BaseHash any             `json:"baseHash"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if len(p.File) == 0 || string(p.File) == "null" {
		return nil, protocol.Errorf("invalid exec.approvals.set params: file is required")
	}
	f, warnings, err := approval.Parse(p.File)
	if err != nil {
		return nil, protocol.Errorf("invalid exec.approvals.set params: file: %v", err)
	}
	svc, err := c.t.approvalService(s)
	if err != nil {
		return nil, err
	}
	snap, err := svc.Store.Save(c.ctx, f, baseHash(p.BaseHash))
	if errors.Is(err, approval.ErrChanged) || errors.Is(err, approval.ErrBaseHashRequired) {
		return nil, protocol.Errorf("%v", err)
	}
	if err != nil {
		return nil, err
	}
	return snap.View(warnings...), nil
}

// baseHash reads a baseHash param as upstream does: anything but a
// non-blank string is absent.
func baseHash(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

func approvalResolve(s *Server, c *call) (any, error) {
	var p struct {
		ID       string `json:"id"`
		Decision string `json:"decision"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.ID) == "" {
		return nil, protocol.Errorf("invalid exec.approval.resolve params: id is required")
	}
	svc, err := c.t.approvalService(s)
	if err != nil {
		return nil, err
	}
	by := c.c.client.DisplayName
	if by == "" {
		by = c.c.client.ID
	}
	if err := svc.Resolve(c.ctx, p.ID, p.Decision, by); err != nil {
		return nil, protocol.Errorf("%v", err)
	}
	return map[string]any{"ok": true}, nil
}

func approvalList(s *Server, c *call) (any, error) {
	if err := c.params(&struct{}{}); err != nil {
		return nil, err
	}
	svc, err := c.t.approvalService(s)
	if err != nil {
		return nil, err
	}
	return map[string]any{"approvals": svc.Pending()}, nil
}
