package slack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"talon/internal/channel"
)

var _ channel.Reader = (*App)(nil)

const (
	// defaultReadLimit is how many messages a read with no limit returns.
	defaultReadLimit = 20
	// maxReadLimit is the most one read returns.
	maxReadLimit = 100
	// maxHistory bounds one history answer: up to 200 messages of up to
	// 40,000 characters each, with their files and reactions.
	maxHistory = 32 << 20
	// threadPage and maxThreadPages bound the walk through a thread,
	// which Slack returns oldest first, to find its newest replies.
	threadPage     = 200
	maxThreadPages = 10
	// maxUsers bounds the users listed for one reaction.
	maxUsers = 100
)

// histMessage is a message as conversations.history, conversations.replies
// and reactions.get return it. Every field is untrusted.
type histMessage struct {
	Type        string     `json:"type"`
	Subtype     string     `json:"subtype"`
	User        string     `json:"user"`
	BotID       string     `json:"bot_id"`
	Username    string     `json:"username"`
	Text        string     `json:"text"`
	TS          string     `json:"ts"`
	ThreadTS    string     `json:"thread_ts"`
	Files       []file     `json:"files"`
	Reactions   []reaction `json:"reactions"`
	UserProfile *struct {
		DisplayName string `json:"display_name"`
		RealName    string `json:"real_name"`
	} `json:"user_profile"`
}

// reaction is one emoji on a message, as Slack lists it.
type reaction struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Users []string `json:"users"`
}

// history is one page of conversations.history or conversations.replies.
type history struct {
	Messages []histMessage `json:"messages"`
	HasMore  bool          `json:"has_more"`
	Meta     struct {
		NextCursor string `json:"next_cursor"`
	} `json:"response_metadata"`
}

// readArgs validates q and turns it into the call's arguments without the
// channel: conversations.replies (ts = the thread) when t is a thread,
// else conversations.history. It returns the limit to keep.
func readArgs(t channel.Target, q channel.ReadQuery) (method string, args url.Values, limit int, err error) {
	limit = q.Limit
	switch {
	case limit == 0:
		limit = defaultReadLimit
	case limit < 0 || limit > maxReadLimit:
		return "", nil, 0, fmt.Errorf("limit %d is outside 1–%d", q.Limit, maxReadLimit)
	}
	if !validID(t.Peer.ID) {
		return "", nil, 0, fmt.Errorf("target %q is not a Slack channel or user id", clip(t.Peer.ID, 80))
	}
	args = url.Values{}
	set := 0
	for _, p := range []struct{ key, val, name string }{{"latest", q.Before, "before"}, {"oldest", q.After, "after"}, {"", q.Around, "around"}} {
		if p.val == "" {
			continue
		}
		set++
		if !tsRE.MatchString(p.val) {
			return "", nil, 0, fmt.Errorf("%s %q is not a Slack message ts", p.name, clip(p.val, 80))
		}
		if p.key == "" {
			return "", nil, 0, errors.New("around is not supported: Slack reads history only before or after a message")
		}
		args.Set(p.key, p.val)
	}
	if set > 1 {
		return "", nil, 0, errors.New("give at most one of before, after and around")
	}
	args.Set("inclusive", "false")
	if t.ThreadID == "" {
		args.Set("limit", strconv.Itoa(limit))
		return "conversations.history", args, limit, nil
	}
	if !tsRE.MatchString(t.ThreadID) {
		return "", nil, 0, fmt.Errorf("thread %q is not a Slack ts", clip(t.ThreadID, 80))
	}
	args.Set("ts", t.ThreadID)
	args.Set("limit", strconv.Itoa(threadPage))
	return "conversations.replies", args, limit, nil
}

// Read returns up to q.Limit messages of t, newest first: the
// conversation's (conversations.history, scopes channels:history,
// groups:history, im:history, mpim:history) or, when t.ThreadID is set,
// the thread's, its parent included (conversations.replies). After
// returns the newest messages after the given one, as Slack does; Around
// is refused.
func (a *App) Read(ctx context.Context, t channel.Target, q channel.ReadQuery) ([]channel.Message, error) {
	method, args, limit, err := readArgs(t, q)
	if err != nil {
		return nil, fmt.Errorf("slack read: %w", err)
	}
	ch, err := a.conversation(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("slack read: %w", err)
	}
	args.Set("channel", ch)
	var got []histMessage
	for page := 0; page < maxThreadPages; page++ {
		var h history
		err := a.offer(ctx, method, func() error { return a.callUpTo(ctx, method, a.botToken, args, &h, maxHistory) })
		if err != nil {
			a.report(ctx, err)
			return nil, fmt.Errorf("slack read: %w", err)
		}
		got = append(got, h.Messages...)
		// History comes newest first, so its first page is the answer;
		// a thread comes oldest first and is walked to its end.
		if method == "conversations.history" || !h.HasMore || h.Meta.NextCursor == "" {
			break
		}
		args.Set("cursor", h.Meta.NextCursor)
	}
	return newest(messages(got), limit), nil
}

// messages maps what Slack returned, leaving out an entry without a valid
// ts (nothing could refer to it) and any repeat.
func messages(hs []histMessage) []channel.Message {
	seen := map[string]bool{}
	var out []channel.Message
	for _, h := range hs {
		if !tsRE.MatchString(h.TS) || seen[h.TS] {
			continue
		}
		seen[h.TS] = true
		m := channel.Message{
			ID:    h.TS,
			IsBot: h.BotID != "" || h.Subtype == "bot_message",
			Text:  cleanText(h.Text, maxText),
			Time:  tsTime(h.TS),
			Media: mediaOf(h.Files),
		}
		if validID(h.User) {
			m.SenderID = h.User
		} else if validID(h.BotID) {
			m.SenderID = h.BotID
		}
		if p := h.UserProfile; p != nil {
			m.SenderName = cleanText(cmpOr(p.DisplayName, p.RealName), 200)
		}
		m.SenderName = cmp.Or(m.SenderName, cleanText(h.Username, 200))
		if tsRE.MatchString(h.ThreadTS) {
			m.ThreadID = h.ThreadTS
		}
		for _, md := range m.Media {
			m.Attachments = append(m.Attachments, cmp.Or(md.Name, "file"))
		}
		out = append(out, m)
	}
	return out
}

// newest sorts ms newest first and keeps limit of them.
func newest(ms []channel.Message, limit int) []channel.Message {
	slices.SortStableFunc(ms, func(x, y channel.Message) int { return y.Time.Compare(x.Time) })
	if len(ms) > limit {
		ms = ms[:limit]
	}
	return ms
}

// Reactions lists the emoji on the message messageID (its ts) with
// reactions.get (scope reactions:read). Emoji are Slack's names.
func (a *App) Reactions(ctx context.Context, t channel.Target, messageID string) ([]channel.Reaction, error) {
	if err := messageRef(t, messageID); err != nil {
		return nil, fmt.Errorf("slack reactions: %w", err)
	}
	ch, err := a.conversation(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("slack reactions: %w", err)
	}
	var out struct {
		Message histMessage `json:"message"`
	}
	args := url.Values{"channel": {ch}, "timestamp": {messageID}, "full": {"true"}}
	err = a.offer(ctx, "reactions.get", func() error { return a.call(ctx, "reactions.get", a.botToken, args, &out) })
	if err != nil {
		a.report(ctx, err)
		return nil, fmt.Errorf("slack reactions: %w", err)
	}
	return reactions(out.Message.Reactions, a.botIdentity().UserID), nil
}

// reactions maps Slack's list, leaving out a name that is not an emoji
// name and any id that is not one.
func reactions(rs []reaction, bot string) []channel.Reaction {
	var out []channel.Reaction
	for _, r := range rs {
		if len(r.Name) > 120 || !emojiRE.MatchString(r.Name) {
			continue
		}
		c := channel.Reaction{Emoji: r.Name, Count: max(r.Count, 0)}
		for _, u := range r.Users {
			if !validID(u) {
				continue
			}
			if u == bot {
				c.Me = true
			}
			if len(c.Users) < maxUsers {
				c.Users = append(c.Users, u)
			}
		}
		out = append(out, c)
	}
	return out
}
