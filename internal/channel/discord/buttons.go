package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"talon/internal/channel"
)

// Discord's component limits and numbers.
const (
	componentRow    = 1
	componentButton = 2
	maxRowButtons   = 5
	maxButtonLabel  = 80
	maxCustomID     = 100

	stylePrimary   = 1
	styleSecondary = 2
	styleDanger    = 4

	interactionComponent = 3
	// callbackDeferredUpdate acknowledges a press without changing the
	// message (DEFERRED_UPDATE_MESSAGE).
	callbackDeferredUpdate = 6
	// maxInteractionToken bounds the token that goes into the callback's
	// path (Discord's are a few hundred characters).
	maxInteractionToken = 1000
)

// buttonRow is the one action row of Outbound.Buttons, checked against
// Discord's limits. The first button is primary, one whose data ends in
// deny, reject or cancel is red (danger), the rest secondary: the exec
// approval's allow-once / allow-always / deny read as Discord users
// expect.
func buttonRow(buttons []channel.Button) ([]component, error) {
	if len(buttons) == 0 {
		return nil, nil
	}
	if len(buttons) > maxRowButtons {
		return nil, fmt.Errorf("%d buttons: one Discord row holds %d", len(buttons), maxRowButtons)
	}
	row := component{Type: componentRow}
	seen := map[string]bool{}
	for i, bt := range buttons {
		switch n := utf8.RuneCountInString(bt.Label); {
		case strings.TrimSpace(bt.Label) == "" || n > maxButtonLabel:
			return nil, fmt.Errorf("button %d: the label must be 1–%d characters, not %d", i+1, maxButtonLabel, n)
		case bt.Data == "" || utf8.RuneCountInString(bt.Data) > maxCustomID:
			return nil, fmt.Errorf("button %d: the data must be 1–%d characters", i+1, maxCustomID)
		case seen[bt.Data]:
			return nil, fmt.Errorf("button %d: the data %q is on another button too", i+1, bt.Data)
		}
		seen[bt.Data] = true
		row.Components = append(row.Components, component{Type: componentButton, Style: buttonStyle(i, bt.Data),
			Label: bt.Label, CustomID: bt.Data})
	}
	return []component{row}, nil
}

func buttonStyle(i int, data string) int {
	fields := strings.Fields(strings.ToLower(data))
	if n := len(fields); n > 0 {
		switch fields[n-1] {
		case "deny", "reject", "cancel":
			return styleDanger
		}
	}
	if i == 0 {
		return stylePrimary
	}
	return styleSecondary
}

// interaction handles INTERACTION_CREATE. A button press (type 3) is
// handed to accept as an envelope from the presser in the button's
// conversation, retried as a message is, and acknowledged to Discord
// (DEFERRED_UPDATE_MESSAGE) only once accept took it. A press that maps
// to no conversation is acknowledged and dropped; other interactions
// (slash commands) are not Talon's: they are left unanswered.
func (g *gwConn) interaction(ctx context.Context, d json.RawMessage) error {
	b := g.bot
	var in interaction
	if err := json.Unmarshal(d, &in); err != nil {
		b.log.Warn("discord: dropping an undecodable INTERACTION_CREATE", "err", err)
		return nil
	}
	if in.Type != interactionComponent {
		return nil
	}
	if !snowflake(in.ID) || !interactionToken(in.Token) {
		b.log.Warn("discord: dropping a press without a valid id or token", "id", in.ID)
		return nil
	}
	m, err := pressMessage(&in)
	if err != nil {
		b.log.Warn("discord: acknowledging and dropping a press", "id", in.ID, "err", err)
		b.ackPress(ctx, &in)
		return nil
	}
	var info chanInfo
	if err := b.retry(ctx, "looking up the channel", func() error {
		info, err = b.channelInfo(ctx, m.ChannelID, m.GuildID)
		return err
	}); err != nil {
		return err
	}
	botID := b.self()
	e, err := toEnvelope(&m, where{account: b.account, botID: botID, botRoles: b.cache.botRoles(m.GuildID), ch: info})
	if err != nil {
		b.log.Debug("discord: press skipped", "id", in.ID, "why", err)
		b.ackPress(ctx, &in)
		return nil
	}
	e.Pressed, e.Mentioned, e.MentionsOthers, e.ReplyTo = true, true, false, nil
	b.update(func(s *channel.Status) { s.LastInboundAt = b.now() })
	if err := b.retry(ctx, "accepting press "+in.ID, func() error { return g.accept(ctx, e) }); err != nil {
		return err
	}
	b.ackPress(ctx, &in)
	return nil
}

// pressMessage is a press as the message it stands for: written by the
// presser, in the button's channel, whose id is the interaction's and
// whose text is the button's custom_id.
func pressMessage(in *interaction) (message, error) {
	u := in.User
	if in.Member != nil && in.Member.User != nil {
		u = in.Member.User
	}
	switch {
	case u == nil:
		return message{}, errors.New("no user")
	case in.Message == nil || !snowflake(in.Message.ID):
		return message{}, errors.New("no message")
	case in.Data.ComponentType != componentButton:
		return message{}, fmt.Errorf("component type %d is not a button", in.Data.ComponentType)
	case in.Data.CustomID == "" || utf8.RuneCountInString(in.Data.CustomID) > maxCustomID:
		return message{}, errors.New("no custom_id")
	}
	chID := in.ChannelID
	if chID == "" {
		chID = in.Message.ChannelID
	}
	m := message{ID: in.ID, ChannelID: chID, GuildID: in.GuildID, Author: *u, Member: in.Member,
		Content: in.Data.CustomID, Type: msgDefault}
	return m, validate(&m)
}

// interactionToken says t can go into a URL path as it is.
func interactionToken(t string) bool {
	if t == "" || len(t) > maxInteractionToken {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// ackPress answers the interaction with DEFERRED_UPDATE_MESSAGE. Discord
// waits 3 s for it; a late or failed answer shows the presser "This
// interaction failed" but loses nothing (the press was stored), so it is
// logged, not retried.
func (b *Bot) ackPress(ctx context.Context, in *interaction) {
	path := "/interactions/" + in.ID + "/" + in.Token + "/callback"
	if err := b.call(ctx, http.MethodPost, path, map[string]int{"type": callbackDeferredUpdate}, nil); err != nil {
		err = fmt.Errorf("acknowledging press %s: %w", in.ID, redact(err, in.Token))
		b.log.Warn("discord: press not acknowledged", "err", err)
		b.setError(err)
	}
}
