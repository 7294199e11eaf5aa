package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"talon/internal/channel"
)

// message handles MESSAGE_CREATE: map it to an envelope and hand it to
// accept, retrying until accept takes it or the connection ends (then
// the event is replayed by the RESUME). A malformed or skipped message is
// handled by dropping it: no retry could change it.
func (g *gwConn) message(ctx context.Context, d json.RawMessage) error {
	b := g.bot
	var m message
	if err := json.Unmarshal(d, &m); err != nil {
		b.log.Warn("discord: dropping an undecodable MESSAGE_CREATE", "err", err)
		return nil
	}
	if err := validate(&m); err != nil {
		b.log.Warn("discord: dropping a MESSAGE_CREATE", "err", err)
		return nil
	}
	botID := b.self()
	if m.Author.ID == botID {
		return nil // our own message: no lookup needed
	}
	var info chanInfo
	err := b.retry(ctx, "looking up the channel", func() error {
		var err error
		info, err = b.channelInfo(ctx, m.ChannelID, m.GuildID)
		return err
	})
	if err != nil {
		return err
	}
	if m.GuildID == "" && info.typ == chanDM {
		b.cache.setDM(m.Author.ID, m.ChannelID)
	}
	e, err := toEnvelope(&m, where{account: b.account, botID: botID, botRoles: b.cache.botRoles(m.GuildID), ch: info})
	if errors.Is(err, errSkip) {
		b.log.Debug("discord: message skipped", "id", m.ID, "why", err)
		return nil
	}
	if err != nil {
		return err
	}
	b.update(func(s *channel.Status) { s.LastInboundAt = b.now() })
	return b.retry(ctx, "accepting message "+m.ID, func() error { return g.accept(ctx, e) })
}

// channelInfo is the shape of the message's channel: from the cache the
// gateway fills, else asked once (GET /channels/{id}) and cached. A
// channel Discord will not show (403, 404) is taken as a plain room, or
// for a message outside a guild as a DM.
func (b *Bot) channelInfo(ctx context.Context, chID, guildID string) (chanInfo, error) {
	if info, ok := b.cache.channel(chID); ok {
		return info, nil
	}
	var ch channelObj
	err := b.call(ctx, http.MethodGet, "/channels/"+chID, nil, &ch)
	if api := (*APIError)(nil); errors.As(err, &api) && api.Status < 500 && api.Status != http.StatusTooManyRequests {
		ch = channelObj{ID: chID, Type: chanGuildText}
		if guildID == "" {
			ch.Type = chanDM
		}
	} else if err != nil {
		return chanInfo{}, err
	}
	if ch.ID != chID {
		return chanInfo{}, fmt.Errorf("GET /channels/%s answered for channel %q", chID, ch.ID)
	}
	b.cache.addChannel(ch)
	if info, ok := b.cache.channel(chID); ok {
		return info, nil
	}
	return chanInfo{typ: ch.Type}, nil // a parent_id that is no snowflake is dropped
}

// retry calls f until it succeeds or ctx ends, waiting longer each time
// (up to 5 s); each failure is logged and shown in Status.
func (b *Bot) retry(ctx context.Context, step string, f func() error) error {
	wait := b.timing.acceptRetry
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		err = fmt.Errorf("%s: %w", step, err)
		b.log.Warn("discord: retrying", "err", err, "in", wait)
		b.setError(err)
		if err := b.sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		wait = min(wait*2, maxAcceptWait)
	}
}

// maxAcceptWait caps the pause between two tries of a failing accept.
const maxAcceptWait = 5 * time.Second
