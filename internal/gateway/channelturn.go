package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"talon/internal/agent"
	"talon/internal/approval"
	"talon/internal/channel"
	"talon/internal/channel/hub"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/store"
	"talon/internal/tools"
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
// aborts the session's runs. It returns the final text ("" when the run
// ended without one) and the model that wrote it ("" for a command).
func (s *Server) channelTurn(ctx context.Context, t *tenant, agentID, key, text string, chat *agent.Chat, owner bool, files []agent.InboundFile) (reply, model string, _ error) {
	rt, err := t.current(s)
	if err != nil {
		return "", "", err
	}
	if isStopCommand(text) {
		// A stop word aborts the session's runs instead of starting one.
		if ids := abortRuns(ctx, s.runs.ofSession(t, key), errAbortStop); len(ids) > 0 {
			return "Stopped.", "", nil
		}
		return "Nothing is running.", "", nil
	}
	if _, _, cmd := chatCommand(text); !cmd {
		if e := budgetRefusal(rt.admit(ctx)); e != nil {
			// The sender is told, once per message, rather than met with
			// silence: the refusal costs no model call.
			return budgetReply(e), "", nil
		}
	}
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: text}}}
	r := s.prepareRun(t, rt, nil, "chat", "channel-"+store.NewID(), key, agentID, req, channelRunTimeout)
	r.req.Owner, r.req.Chat, r.req.Files = owner, chat, files
	if cmd, arg, ok := chatCommand(text); ok {
		r.cmd, r.arg = cmd, arg
	}
	runCtx, perr := s.runs.add(r, r.timeout)
	if perr != nil {
		r.abandon(perr)
		return "", "", fmt.Errorf("starting the run: %s", perr.Message)
	}
	stop := context.AfterFunc(ctx, func() { r.cancel(errChannelClosed) })
	defer stop()
	r.run(runCtx)
	out := r.out
	switch out.status {
	case "ok":
		if out.res == nil {
			return "", "", nil
		}
		return out.res.Text, out.res.Model, nil
	case "aborted":
		return "", "", fmt.Errorf("the run was aborted (%s)", out.stopReason)
	}
	return "", "", fmt.Errorf("the run failed: %s", out.message)
}

// approvers counts who can answer an approval request of tenant t: its
// operator.approvals clients, and the approvers of the chat the run
// came from.
func (s *Server) approvers(t *tenant, req approval.Request) int {
	return s.hubs.count(t, protocol.ScopeApprovals) + s.chatApprovers(t, req)
}

// channelMessenger sends the message tool's messages of tenant t's runs
// through its channel hub (spec channels.md §9).
type channelMessenger struct {
	s *Server
	t *tenant
}

// Send resolves m against the conversation the session's turn came from
// — its channel, account and target when m leaves them out — and sends
// it. A message to another platform than that conversation's is refused
// (R9.4: Talon does not cross providers).
func (m channelMessenger) Send(ctx context.Context, sessionKey string, out tools.OutMessage) (json.RawMessage, error) {
	h := m.t.hub()
	if h == nil {
		return nil, noChat("no chat channel is configured (channels.telegram, channels.slack or channels.discord)")
	}
	chat, inChat := h.ChatOf(ctx, sessionKey)
	var cross = config.MessageTool{}.CrossContext
	if rt := m.t.runtimeNow(); rt != nil {
		cross = rt.file.Config.Tools.Message.CrossContext
	}
	ch := strings.ToLower(out.Channel)
	switch {
	case ch == "" && !inChat:
		return nil, noChat("this session did not come from a chat: give channel and target")
	case ch == "":
		ch = chat.Channel
	case channelLabels[ch] == "":
		return nil, fmt.Errorf("channel %q is not one Talon runs (telegram, slack, discord)", ch)
	case inChat && ch != chat.Channel && !reads(out.Action) && !on(cross.AllowAcrossProviders, false):
		return nil, fmt.Errorf("this conversation is on %s: sending to %s from it is not allowed (tools.message.crossContext.allowAcrossProviders is off)", chat.Channel, ch)
	}
	account := out.AccountID
	if account == "" && inChat && ch == chat.Channel {
		account = chat.AccountID
	}
	if account != "" {
		account = config.NormalizeAccountID(account)
	}
	var target channel.Target
	if out.Target == "" {
		if !inChat {
			return nil, errors.New("no target: give one in the channel's form")
		}
		target = chat.Target
		if out.ThreadID != "" {
			target.ThreadID = out.ThreadID
		}
	} else {
		var err error
		if target, err = parseTarget(ch, out.Target, out.ThreadID); err != nil {
			return nil, fmt.Errorf("target %q: %w", out.Target, err)
		}
		if inChat && ch == chat.Channel && target.Peer != chat.Target.Peer && !reads(out.Action) && !on(cross.AllowWithinProvider, true) {
			return nil, errors.New("only this conversation can be reached from it (tools.message.crossContext.allowWithinProvider is off)")
		}
	}
	if err := h.Allowed(ch, account, out.Action); err != nil {
		return nil, err
	}
	if out.DryRun {
		return json.Marshal(map[string]any{"dryRun": true, "action": out.Action, "channel": ch, "accountId": account, "target": target})
	}
	var err error
	switch out.Action {
	case "react":
		err = h.React(ctx, ch, account, target, out.MessageID, out.Emoji, out.Remove)
	case "edit":
		err = h.Edit(ctx, ch, account, target, out.MessageID, out.Text)
	case "delete":
		err = h.Delete(ctx, ch, account, target, out.MessageID)
	case "reactions":
		rs, err := h.Reactions(ctx, ch, account, target, out.MessageID)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"ok": true, "channel": ch, "messageId": out.MessageID, "reactions": nonNil(rs)})
	case "read":
		q := channel.ReadQuery{Limit: out.Read.Limit, Before: out.Read.Before, After: out.Read.After, Around: out.Read.Around}
		msgs, err := h.Read(ctx, ch, account, target, q)
		if err != nil {
			return nil, err
		}
		// What chat members wrote is data for the model, not instructions.
		return json.Marshal(map[string]any{"ok": true, "channel": ch, "target": target, "untrusted": true, "messages": nonNil(msgs)})
	case "poll":
		p := channel.Poll{Question: out.Poll.Question, Options: out.Poll.Options, Duration: out.Poll.Duration, Multi: out.Poll.Multi}
		sent, err := h.SendPoll(ctx, ch, account, target, p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"ok": true, "action": "poll", "channel": ch, "target": target, "messageId": sent.MessageID})
	case "sendAttachment":
		f := channel.File{Name: out.File.Name, MIME: out.File.MIME, Data: out.File.Data, Voice: out.File.Voice}
		sent, err := h.SendFile(ctx, ch, account, target, f, out.Text, out.ReplyTo)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"ok": true, "action": "sendAttachment", "channel": ch, "target": target, "messageId": sent.MessageID,
			"file": map[string]any{"name": f.Name, "contentType": f.MIME, "bytes": len(f.Data)}})
	default:
		res, err := h.Send(ctx, hub.SendRequest{Channel: ch, AccountID: account, Target: target, Text: out.Text, ReplyTo: out.ReplyTo,
			IdempotencyKey: "tool:" + store.NewID()})
		if err != nil {
			return nil, err
		}
		h.NoteToolSend(sessionKey, ch, target, out.Text) // an answer to the same chat is not sent twice (R9.6)
		return json.Marshal(map[string]any{"ok": true, "channel": res.Channel, "accountId": res.AccountID, "target": target, "messageIds": res.MessageIDs, "unconfirmed": res.Unconfirmed})
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"ok": true, "action": out.Action, "channel": ch, "messageId": out.MessageID})
}

// noChat is Send's error when there is no chat to default to: it is
// tools.ErrNoChat, in words for the message tool's model.
type noChat string

func (e noChat) Error() string { return string(e) }

func (noChat) Is(target error) bool { return target == tools.ErrNoChat }

// reads says action only reads: the cross-context policy guards the
// actions that change a chat, not reads (R9.4).
func reads(action string) bool { return action == "read" || action == "reactions" }

// nonNil is s, or an empty list for JSON's [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// on is a config flag's value, def when unset.
func on(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}
