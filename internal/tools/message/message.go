// Package message is the message tool (spec channels.md §9): the agent
// sends text to a chat, or reacts to, edits or deletes a message there, through its tenant's Telegram, Slack and Discord
// accounts — by default to the conversation its turn came from. The
// gateway resolves and delivers it (tools.Messenger); this package checks
// what the model asked. Safe for concurrent use.
package message

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"talon/internal/tools"
)

// New returns the message tool.
func New() tools.Tool { return tool{} }

type tool struct{}

var _ tools.Tool = tool{}

func (tool) Name() string { return "message" }

func (tool) Description() string {
	return "Send a message to a chat (Telegram, Slack, Discord) through this agent's channel accounts. " +
		"Without channel and target it goes to the conversation this turn came from; an ordinary answer needs no tool. " +
		"Actions: send; thread-reply (send into a thread: give threadId); react (messageId, emoji; remove to take the bot's off); edit (messageId, message: one of the bot's messages); delete (messageId)."
}

// maxText bounds a message: the channel cuts it into chunks, and one call
// is not to flood a chat.
const maxText = 20_000

// actions are the actions Talon implements; the other actions of
// OpenClaw's vocabulary are refused by name.
var actions = []string{"send", "thread-reply", "react", "edit", "delete"}

var schema = tools.Object(
	tools.Prop{Name: "action", Type: tools.TypeString, Required: true, Enum: actions, Description: "send; thread-reply (into threadId); react, edit or delete the message messageId"},
	tools.Prop{Name: "message", Type: tools.TypeString, Description: "the text, Markdown (the channel renders it): for send, thread-reply and edit"},
	tools.Prop{Name: "messageId", Type: tools.TypeString, Description: "the platform id of the message to react to, edit or delete"},
	tools.Prop{Name: "emoji", Type: tools.TypeString, Description: "for react: the emoji (Slack: its name, such as thumbsup)"},
	tools.Prop{Name: "remove", Type: tools.TypeBoolean, Description: "for react: take the bot's reaction off"},
	tools.Prop{Name: "channel", Type: tools.TypeString, Enum: []string{"telegram", "slack", "discord"}, Description: "the chat platform; default: this conversation's"},
	tools.Prop{Name: "target", Type: tools.TypeString, Description: "where, in the channel's form: Telegram a chat id (with :topic:<id>), Slack channel:<C…> or user:<U…>, Discord channel:<id> or user:<id>; default: this conversation"},
	tools.Prop{Name: "accountId", Type: tools.TypeString, Description: "the channel account; default: the conversation's, else the channel's default"},
	tools.Prop{Name: "threadId", Type: tools.TypeString, Description: "a thread to post into (Slack thread_ts); required for thread-reply"},
	tools.Prop{Name: "replyTo", Type: tools.TypeString, Description: "the platform id of a message to reply to"},
	tools.Prop{Name: "dryRun", Type: tools.TypeBoolean, Description: "check and resolve the message without sending it"},
)

func (tool) Schema() json.RawMessage { return schema }

func (tool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	m, err := parse(raw)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if env == nil || env.Messenger == nil {
		return tools.Errorf("message: this run has no chat channels to send through"), nil
	}
	out, err := env.Messenger.Send(ctx, env.SessionKey, m)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("message: %w", err)), nil
	}
	return tools.Result{Text: string(out)}, nil
}

// parse checks what the model asked for.
func parse(raw json.RawMessage) (tools.OutMessage, error) {
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return tools.OutMessage{}, err
	}
	var m tools.OutMessage
	action, err := a.String("action", true)
	if err != nil {
		return m, err
	}
	m.Action = strings.ToLower(strings.TrimSpace(action))
	if !slices.Contains(actions, m.Action) {
		return m, fmt.Errorf("message: unsupported action %q: Talon's message tool can %s", action, strings.Join(actions, ", "))
	}
	if m.Text, err = a.String("message", m.Action == "send" || m.Action == "thread-reply" || m.Action == "edit"); err != nil {
		return m, err
	}
	switch {
	case m.Action != "react" && m.Action != "delete" && strings.TrimSpace(m.Text) == "":
		return m, fmt.Errorf("message: the message is empty")
	case len(m.Text) > maxText:
		return m, fmt.Errorf("message: the message is over %d characters; send less", maxText)
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"channel", &m.Channel}, {"target", &m.Target}, {"accountId", &m.AccountID}, {"threadId", &m.ThreadID}, {"replyTo", &m.ReplyTo},
		{"messageId", &m.MessageID}, {"emoji", &m.Emoji}} {
		if *f.to, err = a.String(f.name, false); err != nil {
			return m, err
		}
		*f.to = strings.TrimSpace(*f.to)
		if len(*f.to) > 256 {
			return m, fmt.Errorf("message: %s is too long", f.name)
		}
	}
	switch {
	case m.Action == "thread-reply" && m.ThreadID == "":
		return m, fmt.Errorf("message: thread-reply needs threadId")
	case (m.Action == "react" || m.Action == "edit" || m.Action == "delete") && m.MessageID == "":
		return m, fmt.Errorf("message: %s needs messageId", m.Action)
	case m.Action == "react" && m.Emoji == "":
		return m, fmt.Errorf("message: react needs emoji")
	}
	if a.Has("remove") {
		if m.Remove, err = a.Bool("remove", false); err != nil {
			return m, err
		}
	}
	if a.Has("dryRun") {
		if m.DryRun, err = a.Bool("dryRun", false); err != nil {
			return m, err
		}
	}
	return m, nil
}
