package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"talon/internal/approval"
	"talon/internal/channel"
	"talon/internal/channel/hub"
)

// Exec approvals in a chat (OpenClaw's same-chat approval forwarding): a
// run a channel message started that needs an approval posts the request
// in its conversation, and an approver of that chat answers it there with
// /approve <id> allow-once|allow-always|deny, as operators do over WS.

// isChannelControl says a channel message must not wait behind its
// conversation's turn: a stop word, or /approve for the turn that waits.
func isChannelControl(text string) bool {
	return isStopCommand(text) || approveCommand(text)
}

func approveCommand(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	return t == "/approve" || strings.HasPrefix(t, "/approve ")
}

// approveUsage is the answer to an /approve the chat cannot act on.
const approveUsage = "Usage: /approve <id> allow-once | allow-always | deny (the id is in the approval request)."

// chatApprove answers /approve from a channel sender: only an approver of
// the chat (Chat.Approvers), only for an approval of the chat's own
// session.
func (s *Server) chatApprove(ctx context.Context, t *tenant, r hub.TurnRequest) string {
	fields := strings.Fields(r.Text)
	if len(fields) != 3 {
		return approveUsage
	}
	id, decision := strings.ToLower(fields[1]), strings.ToLower(fields[2])
	h := t.hub()
	svc := t.approvalsNow()
	if h == nil || svc == nil {
		return "No approval is waiting here."
	}
	chat, ok := h.ChatOf(ctx, r.SessionKey)
	if !ok || !chat.IsApprover(r.Envelope.Sender.ID) {
		return "You cannot approve commands here: only the approvers of this chat can (the account's allowFrom entries and the owners in commands.ownerAllowFrom)."
	}
	var match *approval.RequestedPayload
	for _, p := range svc.Pending() {
		if strings.HasPrefix(p.ID, id) && p.Request.SessionKey == r.SessionKey {
			if match != nil {
				return "More than one approval starts with " + id + ": give more of the id."
			}
			match = &p
		}
	}
	if match == nil {
		return "No approval of this conversation has the id " + id + " (it may have been answered or expired)."
	}
	by := fmt.Sprintf("%s:%s", chat.Channel, r.Envelope.Sender.ID)
	if err := svc.Resolve(ctx, match.ID, decision, by); err != nil {
		return "Not resolved: " + err.Error()
	}
	return fmt.Sprintf("%s: %s", decision, match.Request.Command)
}

// forwardApproval posts an approval request of a channel session in its
// conversation. It runs beside the approval: Emit must not block.
func (s *Server) forwardApproval(t *tenant, e approval.Event) {
	if e.Name != approval.EventRequested {
		return
	}
	p, ok := e.Payload.(approval.RequestedPayload)
	if !ok {
		return
	}
	h := t.hub()
	if h == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		slug := approval.Slug(p.ID)
		expires := time.UnixMilli(p.ExpiresAtMs).UTC().Format("15:04 UTC")
		text := fmt.Sprintf("Approval needed to run:\n```\n%s\n```\nin %s (agent %s). An approver of this chat replies:\n`/approve %s allow-once`, `/approve %s allow-always` or `/approve %s deny` — before %s.",
			p.Request.Command, p.Request.Cwd, p.Request.AgentID, slug, slug, slug, expires)
		if err := h.Notify(ctx, p.Request.SessionKey, text, "approval:"+p.ID, approvalButtons(slug)...); err != nil {
			s.log.Warn("forwarding an exec approval to its chat", "tenant", t.id, "session", p.Request.SessionKey, "err", err)
		}
	}()
}

// approvalButtons answer an approval with one press; a press arrives as
// the /approve command it stands for, from the presser, and is checked
// as a typed one is.
func approvalButtons(slug string) []channel.Button {
	return []channel.Button{
		{Label: "Allow once", Data: "/approve " + slug + " allow-once"},
		{Label: "Always allow", Data: "/approve " + slug + " allow-always"},
		{Label: "Deny", Data: "/approve " + slug + " deny"},
	}
}

// chatApprovers is 1 when the chat a request's session came from has
// approvers who can answer it there, else 0.
func (s *Server) chatApprovers(t *tenant, req approval.Request) int {
	h := t.hub()
	if h == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, ok := h.ChatOf(ctx, req.SessionKey); ok && len(c.Approvers) > 0 {
		return 1
	}
	return 0
}

// hub is the tenant's channel hub, nil when it has none.
func (t *tenant) hub() *hub.Hub {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.channels
}

// approvalsNow is the tenant's approvals service, nil before the first
// load.
func (t *tenant) approvalsNow() *approval.Service {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.approvals
}
