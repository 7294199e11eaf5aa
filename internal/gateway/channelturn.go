package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"talon/internal/agent"
	"talon/internal/approval"
	"talon/internal/llm"
	"talon/internal/store"
	"talon/protocol"
)

// channelRunTimeout bounds a channel turn as agents.defaults.timeoutSeconds
// would; the session's queue, not the adapter, owns waiting (spec
// channels.md R2.1 step 7).
const channelRunTimeout = 10 * time.Minute

// errChannelClosed ends a channel's run when its hub stops.
var errChannelClosed = errors.New("the channel account stopped")

// channelTurn runs one turn of a channel conversation as a chat run of
// the session: WS clients and Studio see its chat and agent events,
// chat.abort and a stop word end it, it waits for the session's other
// runs, /compact and /status are answered as in any chat, and a stop word
// aborts the session's runs. It returns
// the final text ("" when the run ended without one).
func (s *Server) channelTurn(ctx context.Context, t *tenant, agentID, key, text string) (string, error) {
	rt, err := t.current(s)
	if err != nil {
		return "", err
	}
	if isStopCommand(text) {
		// A stop word aborts the session's runs instead of starting one.
		if ids := abortRuns(ctx, s.runs.ofSession(t, key), errAbortStop); len(ids) > 0 {
			return "Stopped.", nil
		}
		return "Nothing is running.", nil
	}
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: text}}}
	r := s.prepareRun(t, rt, nil, "chat", "channel-"+store.NewID(), key, agentID, req, channelRunTimeout)
	if cmd, arg, ok := chatCommand(text); ok {
		r.cmd, r.arg = cmd, arg
	}
	runCtx, perr := s.runs.add(r, r.timeout)
	if perr != nil {
		r.abandon(perr)
		return "", fmt.Errorf("starting the run: %s", perr.Message)
	}
	stop := context.AfterFunc(ctx, func() { r.cancel(errChannelClosed) })
	defer stop()
	r.run(runCtx)
	out := r.out
	switch out.status {
	case "ok":
		if out.res == nil {
			return "", nil
		}
		return out.res.Text, nil
	case "aborted":
		return "", fmt.Errorf("the run was aborted (%s)", out.stopReason)
	}
	return "", fmt.Errorf("the run failed: %s", out.message)
}

// approvers counts who can answer an approval request of tenant t: its
// operator.approvals clients, and the approvers of the chat the run
// came from.
func (s *Server) approvers(t *tenant, req approval.Request) int {
	return s.hubs.count(t, protocol.ScopeApprovals) + s.chatApprovers(t, req)
}
