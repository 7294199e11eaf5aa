package exec

import (
	"time"

	"talon/internal/approval"
	"talon/internal/config"
	"talon/internal/session"
)

// Policy is the exec policy a run of agentID in the session whose entry is
// entry requests (spec §4.3), and how long its approvals wait: the entry's
// execHost/execSecurity/execAsk, then the agent's agents.list[].tools.exec,
// then the global tools.exec; the timeout is the agent's
// tools.exec.approvalTimeoutMs, else the global one, else 0 (the approvals
// Manager's default). The runner puts both in tools.Env.
//
// A session's elevatedLevel is not read: Talon has no elevated mode, so
// nothing bypasses approvals.
func Policy(cfg *config.Config, agentID string, entry session.Entry) (approval.PolicyInput, time.Duration) {
	in := approval.PolicyInput{
		AgentID: agentID,
		Session: approval.ExecSettings{Host: entry.ExecHost, Security: entry.ExecSecurity, Ask: entry.ExecAsk},
	}
	if cfg == nil {
		return in, 0
	}
	var timeoutMs *int
	if x := cfg.Tools.Exec; x != nil {
		in.Global = approval.ExecSettings{Host: x.Host, Security: x.Security, Ask: x.Ask}
		timeoutMs = x.ApprovalTimeoutMs
	}
	if a, _ := cfg.Agent(agentID); a != nil && a.Tools.Exec != nil {
		x := a.Tools.Exec
		in.Agent = approval.ExecSettings{Host: x.Host, Security: x.Security, Ask: x.Ask}
		if x.ApprovalTimeoutMs != nil {
			timeoutMs = x.ApprovalTimeoutMs
		}
	}
	var timeout time.Duration
	if timeoutMs != nil && *timeoutMs > 0 {
		timeout = time.Duration(*timeoutMs) * time.Millisecond
	}
	return in, timeout
}
