package gateway

import (
	"strings"
	"time"

	"talon/internal/policy"
	"talon/protocol"
)

// The system-event method (spec automation.md §11): an operator queues a
// notice for a session's next turn. wake, which also starts a turn, is
// with the heartbeats.

func init() {
	register("system-event", protocol.ScopeAdmin, systemEvent)
}

// eventTarget is the session a system event or wake goes to: the key
// given, else the main session of agentId or of the default agent.
func (c *call) eventTarget(key, agentID string) (sessionTarget, error) {
	cfg := c.rt.file.Config
	if strings.TrimSpace(key) != "" {
		tgt, err := c.target("sessionKey", key)
		if err != nil {
			return tgt, err
		}
		return tgt, c.configuredAgent(tgt)
	}
	agentID = strings.TrimSpace(agentID)
	if agentID == "" {
		agentID = cfg.DefaultAgentID()
	}
	if !cfg.HasAgent(agentID) {
		return sessionTarget{}, protocol.Errorf("invalid %s params: unknown agent %q", c.req.Method, agentID)
	}
	return sessionTarget{agent: agentID, key: policy.MainSessionKey(cfg, agentID)}, nil
}

func systemEvent(s *Server, c *call) (any, error) {
	var p struct {
		Text       string `json:"text"`
		SessionKey string `json:"sessionKey"`
		AgentID    string `json:"agentId"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, protocol.Errorf("invalid system-event params: text is required")
	}
	tgt, err := c.eventTarget(p.SessionKey, p.AgentID)
	if err != nil {
		return nil, err
	}
	out, err := c.t.events().add(tgt.key, p.Text, time.Now())
	if err != nil {
		return nil, protocol.Errorf("invalid system-event params: %v", err)
	}
	return map[string]any{"ok": true, "sessionKey": tgt.key, "eventOutcome": out}, nil
}
