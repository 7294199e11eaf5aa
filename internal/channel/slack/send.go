package slack

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"talon/internal/channel"
)

// maxPostAttempts bounds how often one chunk is offered to Slack when it
// keeps answering 429.
const maxPostAttempts = 3

// postMessage is chat.postMessage's request.
type postMessage struct {
	Channel     string `json:"channel"`
	Text        string `json:"text"`
	ThreadTS    string `json:"thread_ts,omitempty"`
	Mrkdwn      bool   `json:"mrkdwn"`
	UnfurlLinks bool   `json:"unfurl_links"`
	UnfurlMedia bool   `json:"unfurl_media"`
	// Blocks carry the text and the buttons when there are buttons;
	// Text is then the notification's fallback.
	Blocks []block `json:"blocks,omitempty"`
}

// Send posts one chunk with chat.postMessage and returns its ts. The text
// is mrkdwn; the thread is Target.ThreadID, else ReplyTo (Slack's only
// native reply is a thread under the message). See the package doc for why
// nothing but a 429 is retried.
func (a *App) Send(ctx context.Context, m channel.Outbound) (channel.Sent, error) {
	req, err := buildPost(m)
	if err != nil {
		return channel.Sent{}, err
	}
	var out struct {
		TS string `json:"ts"`
	}
	if err := a.write(ctx, "chat.postMessage", req, &out); err != nil {
		a.report(ctx, err)
		return channel.Sent{}, fmt.Errorf("slack send: %w", err)
	}
	if !tsRE.MatchString(out.TS) {
		return channel.Sent{}, fmt.Errorf("slack send: %w", &UnconfirmedError{Method: "chat.postMessage", Err: errors.New("the answer has no valid ts")})
	}
	if req.ThreadTS != "" {
		a.threads.put(req.Channel+"/"+req.ThreadTS, struct{}{})
	}
	a.mu.Lock()
	a.st.LastOutboundAt = a.now()
	a.mu.Unlock()
	return channel.Sent{MessageID: out.TS}, nil
}

// write makes a call that changes something in Slack: one request, offered
// again only after a 429, which Slack answers before doing anything. Any
// other failure may have been done and is returned as it is.
func (a *App) write(ctx context.Context, method string, body, out any) error {
	return a.offer(ctx, method, func() error { return a.call(ctx, method, a.botToken, body, out) })
}

// offer makes a call with do, again after each 429 up to maxPostAttempts
// times while Retry-After is at most maxRetryAfter.
func (a *App) offer(ctx context.Context, method string, do func() error) error {
	for attempt := 1; ; attempt++ {
		err := do()
		var rl *RateLimitError
		if !errors.As(err, &rl) || attempt >= maxPostAttempts || rl.RetryAfter > maxRetryAfter {
			return err
		}
		if werr := a.wait(ctx, rl.RetryAfter); werr != nil {
			return fmt.Errorf("slack %s: waiting out a rate limit: %w", method, werr)
		}
	}
}

// report records a failed write in Status, and a refused token as an
// issue; a call cut short by its own context is not the account's fault.
func (a *App) report(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	a.failed(err)
	if isPermanent(err) {
		a.authIssue("botToken", err)
	}
}

// buildPost validates m and turns it into chat.postMessage's arguments.
func buildPost(m channel.Outbound) (postMessage, error) {
	if !validID(m.Peer.ID) {
		return postMessage{}, fmt.Errorf("slack send: target %q is not a Slack channel or user id", clip(m.Peer.ID, 80))
	}
	thread := m.ThreadID
	if thread == "" {
		thread = m.ReplyTo
	}
	if thread != "" && !tsRE.MatchString(thread) {
		return postMessage{}, fmt.Errorf("slack send: thread %q is not a Slack ts", clip(thread, 80))
	}
	text := m.Text
	if text == "" {
		text = m.Plain
	}
	if err := checkText(text); err != nil {
		return postMessage{}, fmt.Errorf("slack send: %w", err)
	}
	// A DM peer's id is the user's: chat.postMessage posts to the bot's
	// DM with a user given the user id.
	p := postMessage{Channel: m.Peer.ID, Text: text, ThreadTS: thread, Mrkdwn: true}
	if len(m.Buttons) > 0 {
		blocks, err := buttonBlocks(text, m.Buttons)
		if err != nil {
			return postMessage{}, fmt.Errorf("slack send: %w", err)
		}
		p.Blocks = blocks
	}
	return p, nil
}

// checkText refuses a text Slack would refuse or cut.
func checkText(text string) error {
	switch {
	case text == "":
		return errors.New("the chunk has no text")
	case !utf8.ValidString(text):
		return errors.New("the chunk is not valid UTF-8")
	case utf8.RuneCountInString(text) > 40000:
		return errors.New("the chunk is longer than Slack's 40,000 characters; chunk it first")
	}
	return nil
}
