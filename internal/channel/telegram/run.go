package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"talon/internal/channel"
)

// ErrUnauthorized is Run's error when Telegram refuses the token.
var ErrUnauthorized = errors.New("telegram: the bot token was refused (401 Unauthorized)")

const (
	pollLimit  = 50 // updates per getUpdates
	issueAuth  = "Telegram refused the bot token"
	issuePoll  = "Another getUpdates poller"
	issueHook  = "setWebhook failed"
	issueMoved = "Group "
)

// Run implements channel.Transport: getMe, then long polling or the
// webhook until ctx ends.
func (b *Bot) Run(ctx context.Context, accept channel.Accept) error {
	if accept == nil {
		return errors.New("telegram: run: accept is nil")
	}
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("telegram: run: this bot is already running")
	}
	defer b.running.Store(false)
	defer b.update(func(s *channel.Status) { s.Connected = false })
	if err := b.getMe(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var err error
	if b.webhook != nil {
		err = b.serveWebhook(ctx, accept)
	} else {
		err = b.poll(ctx, accept)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// getMe learns who the bot is, retrying transient failures; a refused
// token is permanent (R11.1: do not poll with it).
func (b *Bot) getMe(ctx context.Context) error {
	for n := 0; ; n++ {
		err := b.whoAmI(ctx)
		if err == nil {
			return nil
		}
		if err := b.permanent(err); err != nil {
			return err
		}
		b.failed("getMe", err)
		if !b.timing.sleep(ctx, b.timing.backoff(n)) {
			return ctx.Err()
		}
	}
}

// whoAmI is one getMe: who the bot is and whether privacy mode is on.
func (b *Bot) whoAmI(ctx context.Context) error {
	var me user
	err := b.api.call(ctx, "getMe", struct{}{}, &me)
	if err == nil && me.ID == 0 {
		err = errors.New("telegram getMe: answer without a bot id")
	}
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.info = Info{ID: me.ID, Username: me.Username, Name: me.FirstName,
		CanReadAllGroupMessages: me.CanReadAllGroupMessages, HasTopicsEnabled: me.HasTopicsEnabled}
	b.status.BotID = strconv.FormatInt(me.ID, 10)
	b.status.BotName = me.Username
	b.mu.Unlock()
	b.clearIssue(issueAuth)
	return nil
}

// Probe asks Telegram again who the bot is (channels.status with probe):
// a privacy mode turned off in BotFather since the start shows at once.
func (b *Bot) Probe(ctx context.Context) error {
	if err := b.whoAmI(ctx); err != nil {
		return fmt.Errorf("telegram probe: %w", err)
	}
	return nil
}

// permanent turns a refused token into Run's error and the auth issue.
func (b *Bot) permanent(err error) error {
	var ae *APIError
	if !errors.As(err, &ae) || !ae.unauthorized() {
		return nil
	}
	b.setIssue(issueAuth, channel.Issue{
		Kind:    "auth",
		Message: issueAuth + " (" + ae.Method + " answered " + strconv.Itoa(ae.Code) + ")",
		Fix:     "Copy the token again from @BotFather (or /revoke and take the new one) into channels.telegram.botToken, tokenFile or accounts.<id>.botToken, then restart the channel",
	})
	b.update(func(s *channel.Status) { s.LastError = ae.Error() })
	return fmt.Errorf("%w: %s", ErrUnauthorized, ae.Error())
}

// poll is long polling. The offset moves past an update only once accept
// took it (durable ingress, R11.3): a refused update is fetched again,
// and so is everything after it, in order.
func (b *Bot) poll(ctx context.Context, accept channel.Accept) error {
	// A webhook left behind makes getUpdates fail with 409. A transient
	// failure here is not fatal: the 409 would show it.
	if err := b.api.call(ctx, "deleteWebhook", map[string]any{"drop_pending_updates": false}, nil); err != nil {
		if perr := b.permanent(err); perr != nil {
			return perr
		}
		b.log.Warn("telegram deleteWebhook failed; polling anyway", "err", err)
	} else {
		b.connected()
	}
	var offset int64
	fails := 0
	for ctx.Err() == nil {
		ups, err := b.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if perr := b.permanent(err); perr != nil {
				return perr
			}
			if !b.timing.sleep(ctx, b.pollFailed(err, fails)) {
				return nil
			}
			fails++
			continue
		}
		fails = 0
		b.connected()
		next, err := b.deliver(ctx, ups, offset, accept)
		offset = next
		if err != nil {
			// The store refused: the connection is fine, the update
			// waits at Telegram until the next try.
			b.log.Warn("telegram update not accepted; it will be fetched again", "err", err)
			b.update(func(s *channel.Status) { s.LastError = err.Error() })
			if !b.timing.sleep(ctx, b.timing.backoff(0)) {
				return nil
			}
		}
	}
	return nil
}

// getUpdates is one long poll, abandoned when it has not completed after
// the stall limit (a connection that died silently).
func (b *Bot) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	timeout := b.timing.pollTimeout
	if ct := b.api.http.Timeout; ct > 0 && ct-5*time.Second < timeout {
		// The caller's client would cut the long poll short.
		timeout = max(ct-5*time.Second, time.Second)
	}
	pctx, cancel := context.WithTimeoutCause(ctx, b.timing.stall, errStall)
	defer cancel()
	params := map[string]any{
		"offset":          offset,
		"limit":           pollLimit,
		"timeout":         int(timeout / time.Second),
		"allowed_updates": allowedUpdates,
	}
	// Each update is decoded on its own, so that one Talon cannot read
	// does not hold up the others.
	var ups []json.RawMessage
	err := b.api.call(pctx, "getUpdates", params, &ups)
	if err != nil && ctx.Err() == nil && context.Cause(pctx) == errStall {
		return nil, errStall
	}
	return ups, err
}

var errStall = errors.New("telegram getUpdates: no answer within the stall limit; restarting the poll")

// pollFailed records a failed getUpdates and says how long to wait: 429
// says so itself; 409 means another poller (or a webhook) has the token.
func (b *Bot) pollFailed(err error, fails int) time.Duration {
	b.failed("getUpdates", err)
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case 429:
			if ae.RetryAfter > 0 {
				return ae.RetryAfter
			}
		case 409:
			b.setIssue(issuePoll, channel.Issue{
				Kind:    "runtime",
				Message: issuePoll + " or a webhook uses this bot token (409 Conflict: " + ae.Description + ")",
				Fix:     "Run one poller per token: stop the other process or gateway using this bot (or the webhook set on it), or give each a bot token of its own",
			})
		}
	}
	return b.timing.backoff(fails)
}

func (b *Bot) connected() {
	b.clearIssue(issuePoll)
	b.update(func(s *channel.Status) {
		if !s.Connected {
			s.LastConnectedAt = time.Now()
		}
		s.Connected = true
		s.LastError = ""
	})
}

// deliver hands each update to accept in order and returns the offset
// that acknowledges what was taken; it stops at the first refusal.
func (b *Bot) deliver(ctx context.Context, ups []json.RawMessage, offset int64, accept channel.Accept) (int64, error) {
	for _, raw := range ups {
		u, err := decodeUpdate(raw)
		if u.UpdateID < offset {
			continue // already acknowledged, or without an id to acknowledge
		}
		if err != nil {
			b.log.Warn("telegram update dropped", "err", err)
		} else if err := b.handle(ctx, u, accept); err != nil {
			return u.UpdateID, err
		}
		offset = u.UpdateID + 1
	}
	return offset, nil
}

// decodeUpdate reads one update. An update whose id can be read but not
// the rest is returned with its id and an error: it is acknowledged and
// dropped, since no retry would read it better.
func decodeUpdate(raw []byte) (update, error) {
	var u update
	err := json.Unmarshal(raw, &u)
	if err == nil && u.UpdateID > 0 {
		return u, nil
	}
	var id struct {
		UpdateID int64 `json:"update_id"`
	}
	if json.Unmarshal(raw, &id) != nil || id.UpdateID <= 0 {
		return update{}, errors.New("telegram: an update without a valid update_id")
	}
	return update{UpdateID: id.UpdateID}, fmt.Errorf("telegram: update %d: %w", id.UpdateID, err)
}

// handle passes one update to accept, or records what it says about the
// chat (a migration); the rest is acknowledged unread.
func (b *Bot) handle(ctx context.Context, u update, accept channel.Accept) error {
	if m := u.Message; m != nil && m.MigrateToChatID != 0 {
		b.migrated(m.Chat.ID, m.MigrateToChatID)
	}
	if q := u.CallbackQuery; q != nil {
		return b.press(ctx, u.UpdateID, q, accept)
	}
	e, ok := toEnvelope(u, b.Info(), b.accountID)
	if !ok {
		b.log.Debug("telegram update ignored", "update_id", u.UpdateID)
		return nil
	}
	return b.take(ctx, u.UpdateID, e, accept)
}

// take passes one envelope to accept.
func (b *Bot) take(ctx context.Context, id int64, e channel.Envelope, accept channel.Accept) error {
	if err := accept(ctx, e); err != nil {
		return fmt.Errorf("update %d: %w", id, err)
	}
	b.update(func(s *channel.Status) { s.LastInboundAt = time.Now() })
	return nil
}

// press hands a button press to accept and answers it once stored; one
// that cannot be placed is answered and dropped. A refused one is not
// answered: it comes again, and is answered then.
func (b *Bot) press(ctx context.Context, id int64, q *callbackQuery, accept channel.Accept) error {
	e, ok := pressEnvelope(id, q, b.Info(), b.accountID, time.Now())
	if ok {
		if err := b.take(ctx, id, e, accept); err != nil {
			return err
		}
	} else {
		b.log.Debug("telegram button press dropped", "update_id", id)
	}
	if q.ID != "" {
		b.answerPress(ctx, q.ID)
	}
	return nil
}

// migrated reports a group that became a supergroup (R11.7): its id in
// the config no longer receives anything. Rewriting the config is the
// hub's job; this makes it visible.
func (b *Bot) migrated(from, to int64) {
	f, t := strconv.FormatInt(from, 10), strconv.FormatInt(to, 10)
	b.log.Warn("telegram group migrated to a supergroup", "from", f, "to", t)
	b.setIssue(issueMoved+f, channel.Issue{
		Kind:    "config",
		Message: issueMoved + f + " was upgraded to supergroup " + t + "; messages now come from the new id",
		Fix:     "Replace " + f + " by " + t + " in channels.telegram.groups and in any binding or allowlist that names it",
	})
}
