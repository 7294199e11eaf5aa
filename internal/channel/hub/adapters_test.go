package hub

import (
	"errors"
	"io"
	"testing"

	"talon/internal/channel"
	"talon/internal/channel/discord"
	"talon/internal/channel/slack"
	"talon/internal/channel/telegram"
)

// The hub tells a send the platform may have delivered apart from one
// that failed by channel.ErrUnconfirmed: every adapter's own form of it
// must be one, or a maybe-delivered chunk would count as failed.
func TestAdaptersUnconfirmedIsTheHubs(t *testing.T) {
	for name, err := range map[string]error{
		"telegram": telegram.ErrUnconfirmed,
		"discord":  discord.ErrUnconfirmed,
		"slack":    &slack.UnconfirmedError{Method: "chat.postMessage", Err: io.ErrUnexpectedEOF},
	} {
		if !errors.Is(err, channel.ErrUnconfirmed) {
			t.Errorf("%s: %v is not channel.ErrUnconfirmed", name, err)
		}
	}
	if !errors.Is(&slack.UnconfirmedError{Err: io.ErrUnexpectedEOF}, io.ErrUnexpectedEOF) {
		t.Error("slack's UnconfirmedError no longer unwraps to its cause")
	}
}

// Discord dedupes a chunk by its nonce, so the hub may resend one a crash
// interrupted within the window.
var _ Idempotent = (*discord.Bot)(nil)
