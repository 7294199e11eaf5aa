// Package message is the message tool (spec channels.md §9): the agent
// sends text or a file to a chat, posts a poll, reads the chat's recent
// messages or a message's reactions, or reacts to, edits or deletes a
// message there, through its tenant's Telegram, Slack and Discord
// accounts — by default in the conversation its turn came from. The
// gateway resolves and delivers it (tools.Messenger); this package checks
// what the model asked and reads the file it names (a workspace path
// through tools.FilePath, base64 bytes, or a public URL through
// internal/netguard). Safe for concurrent use.
package message

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

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
		"Actions: send; thread-reply (send into a thread: give threadId); sendAttachment (a file: media = a workspace path or an https URL, or buffer = base64 with filename; message is the caption); " +
		"poll (pollQuestion, pollOption: 2-12 options, pollDurationSeconds, pollMulti; Telegram and Discord); read (the latest messages: limit, before/after/around a message id; Slack and Discord); " +
		"react (messageId, emoji; remove to take the bot's off); reactions (messageId: who reacted with what; Slack and Discord); edit (messageId, message: one of the bot's messages); delete (messageId)."
}

// maxText bounds a message: the channel cuts it into chunks, and one call
// is not to flood a chat.
const maxText = 20_000

// actions are the actions Talon implements; the other actions of
// OpenClaw's vocabulary are refused by name.
var actions = []string{"send", "thread-reply", "sendAttachment", "poll", "read", "react", "reactions", "edit", "delete"}

// Limits on what the model passes.
const (
	// MaxFile is the largest file sendAttachment reads; each platform
	// has its own limit below it (Discord 25 MB, Telegram 50 MB).
	MaxFile = 50 << 20
	// maxPollDuration is R9.1's bound on pollDurationSeconds: a week.
	maxPollDuration = 604_800
	maxPollText     = 300
	maxRead         = 100
)

var schema = tools.Object(
	tools.Prop{Name: "action", Type: tools.TypeString, Required: true, Enum: actions, Description: "send; thread-reply (into threadId); sendAttachment; poll; read; react, reactions, edit or delete the message messageId"},
	tools.Prop{Name: "message", Type: tools.TypeString, Description: "the text, Markdown (the channel renders it): for send, thread-reply and edit; the caption of sendAttachment"},
	tools.Prop{Name: "messageId", Type: tools.TypeString, Description: "the platform id of the message to react to, list the reactions of, edit or delete"},
	tools.Prop{Name: "emoji", Type: tools.TypeString, Description: "for react: the emoji (Slack: its name, such as thumbsup)"},
	tools.Prop{Name: "remove", Type: tools.TypeBoolean, Description: "for react: take the bot's reaction off"},
	tools.Prop{Name: "media", Type: tools.TypeString, Description: "for sendAttachment: the file, a path in the workspace or an http(s) URL"},
	tools.Prop{Name: "buffer", Type: tools.TypeString, Description: "for sendAttachment: the file's bytes, base64 (with filename), instead of media"},
	tools.Prop{Name: "filename", Type: tools.TypeString, Description: "for sendAttachment: the file name shown in the chat"},
	tools.Prop{Name: "contentType", Type: tools.TypeString, Description: "for sendAttachment: the MIME type, such as application/pdf; default: from the content"},
	tools.Prop{Name: "pollQuestion", Type: tools.TypeString, Description: "for poll: the question"},
	tools.Prop{Name: "pollOption", Type: tools.TypeArray, Description: "for poll: the answers, 2 to 12"},
	tools.Prop{Name: "pollDurationSeconds", Type: tools.TypeInteger, Description: "for poll: how long it stays open (at most 604800; Telegram at most 600)"},
	tools.Prop{Name: "pollMulti", Type: tools.TypeBoolean, Description: "for poll: voters may choose several answers"},
	tools.Prop{Name: "limit", Type: tools.TypeInteger, Description: "for read: how many messages, 1 to 100 (default 20)"},
	tools.Prop{Name: "before", Type: tools.TypeString, Description: "for read: messages before this message id"},
	tools.Prop{Name: "after", Type: tools.TypeString, Description: "for read: messages after this message id"},
	tools.Prop{Name: "around", Type: tools.TypeString, Description: "for read: messages around this message id (Discord)"},
	tools.Prop{Name: "channel", Type: tools.TypeString, Enum: []string{"telegram", "slack", "discord"}, Description: "the chat platform; default: this conversation's"},
	tools.Prop{Name: "target", Type: tools.TypeString, Description: "where, in the channel's form: Telegram a chat id (with :topic:<id>), Slack channel:<C…> or user:<U…>, Discord channel:<id> or user:<id>; default: this conversation"},
	tools.Prop{Name: "accountId", Type: tools.TypeString, Description: "the channel account; default: the conversation's, else the channel's default"},
	tools.Prop{Name: "threadId", Type: tools.TypeString, Description: "a thread to post into or read (Slack thread_ts); required for thread-reply"},
	tools.Prop{Name: "replyTo", Type: tools.TypeString, Description: "the platform id of a message to reply to"},
	tools.Prop{Name: "dryRun", Type: tools.TypeBoolean, Description: "check and resolve the message without sending it"},
)

func (tool) Schema() json.RawMessage { return schema }

func (tool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	m, ref, err := parse(raw)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if env == nil || env.Messenger == nil {
		return tools.Errorf("message: this run has no chat channels to send through"), nil
	}
	if m.Action == "sendAttachment" {
		if m.File, err = load(ctx, env, ref); err != nil {
			return tools.ErrorResult(fmt.Errorf("message: sendAttachment: %w", err)), nil
		}
	}
	out, err := env.Messenger.Send(ctx, env.SessionKey, m)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("message: %w", err)), nil
	}
	return tools.Result{Text: string(out)}, nil
}

// fileRef is where sendAttachment's file is: a path or URL (media) or
// base64 bytes (buffer), with the name and type the model gave.
type fileRef struct {
	media, buffer, name, mime string
}

// parse checks what the model asked for.
func parse(raw json.RawMessage) (tools.OutMessage, fileRef, error) {
	var m tools.OutMessage
	var ref fileRef
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return m, ref, err
	}
	action, err := a.String("action", true)
	if err != nil {
		return m, ref, err
	}
	m.Action = strings.TrimSpace(action)
	if !slices.Contains(actions, m.Action) {
		return m, ref, fmt.Errorf("message: unsupported action %q: Talon's message tool can %s", action, strings.Join(actions, ", "))
	}
	texted := m.Action == "send" || m.Action == "thread-reply" || m.Action == "edit"
	if m.Text, err = a.String("message", texted); err != nil {
		return m, ref, err
	}
	switch {
	case texted && strings.TrimSpace(m.Text) == "":
		return m, ref, fmt.Errorf("message: the message is empty")
	case len(m.Text) > maxText:
		return m, ref, fmt.Errorf("message: the message is over %d characters; send less", maxText)
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"channel", &m.Channel}, {"target", &m.Target}, {"accountId", &m.AccountID}, {"threadId", &m.ThreadID}, {"replyTo", &m.ReplyTo},
		{"messageId", &m.MessageID}, {"emoji", &m.Emoji}, {"media", &ref.media}, {"filename", &ref.name}, {"contentType", &ref.mime}} {
		if *f.to, err = a.String(f.name, false); err != nil {
			return m, ref, err
		}
		*f.to = strings.TrimSpace(*f.to)
		if len(*f.to) > 256 && f.name != "media" || len(*f.to) > 4096 {
			return m, ref, fmt.Errorf("message: %s is too long", f.name)
		}
	}
	if ref.buffer, err = a.String("buffer", false); err != nil {
		return m, ref, err
	}
	switch {
	case m.Action == "thread-reply" && m.ThreadID == "":
		return m, ref, fmt.Errorf("message: thread-reply needs threadId")
	case (m.Action == "react" || m.Action == "reactions" || m.Action == "edit" || m.Action == "delete") && m.MessageID == "":
		return m, ref, fmt.Errorf("message: %s needs messageId", m.Action)
	case m.Action == "react" && m.Emoji == "":
		return m, ref, fmt.Errorf("message: react needs emoji")
	case m.Action == "sendAttachment" && (ref.media == "") == (ref.buffer == ""):
		return m, ref, fmt.Errorf("message: sendAttachment needs one of media (a workspace path or a URL) and buffer (base64)")
	case m.Action == "sendAttachment" && ref.buffer != "" && ref.name == "":
		return m, ref, fmt.Errorf("message: sendAttachment with buffer needs filename")
	}
	if a.Has("remove") {
		if m.Remove, err = a.Bool("remove", false); err != nil {
			return m, ref, err
		}
	}
	if a.Has("dryRun") {
		if m.DryRun, err = a.Bool("dryRun", false); err != nil {
			return m, ref, err
		}
	}
	switch m.Action {
	case "poll":
		m.Poll, err = parsePoll(a)
	case "read":
		m.Read, err = parseRead(a)
	}
	return m, ref, err
}

// parsePoll checks a poll's question, options and duration (R9.1).
func parsePoll(a tools.Args) (*tools.Poll, error) {
	q, err := a.String("pollQuestion", true)
	if err != nil {
		return nil, err
	}
	p := &tools.Poll{Question: strings.TrimSpace(q)}
	if p.Question == "" || len(p.Question) > maxPollText {
		return nil, fmt.Errorf("message: pollQuestion must have 1 to %d characters", maxPollText)
	}
	if p.Options, err = a.StringList("pollOption", true); err != nil {
		return nil, err
	}
	if n := len(p.Options); n < 2 || n > 12 {
		return nil, fmt.Errorf("message: a poll has 2 to 12 options (got %d)", n)
	}
	for i, o := range p.Options {
		if p.Options[i] = strings.TrimSpace(o); p.Options[i] == "" || len(p.Options[i]) > maxPollText {
			return nil, fmt.Errorf("message: pollOption[%d] must have 1 to %d characters", i, maxPollText)
		}
	}
	if a.Has("pollDurationSeconds") {
		secs, err := a.Int("pollDurationSeconds", false, 1, maxPollDuration)
		if err != nil {
			return nil, err
		}
		p.Duration = time.Duration(secs) * time.Second
	}
	if a.Has("pollMulti") {
		if p.Multi, err = a.Bool("pollMulti", false); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// parseRead checks read's window.
func parseRead(a tools.Args) (*tools.ReadQuery, error) {
	q := &tools.ReadQuery{Limit: 20}
	var err error
	if a.Has("limit") {
		if q.Limit, err = a.Int("limit", false, 1, maxRead); err != nil {
			return nil, err
		}
	}
	n := 0
	for _, f := range []struct {
		name string
		to   *string
	}{{"before", &q.Before}, {"after", &q.After}, {"around", &q.Around}} {
		if *f.to, err = a.String(f.name, false); err != nil {
			return nil, err
		}
		if *f.to = strings.TrimSpace(*f.to); *f.to != "" {
			n++
		}
		if len(*f.to) > 256 {
			return nil, fmt.Errorf("message: %s is too long", f.name)
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("message: give at most one of before, after and around")
	}
	return q, nil
}
