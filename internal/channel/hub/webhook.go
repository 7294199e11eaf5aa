package hub

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrNoWebhook is Webhook's answer for an account that receives no
// webhooks (long polling, Socket Mode, Discord's gateway) or is not
// running.
var ErrNoWebhook = errors.New("this channel account takes no webhook")

// Webhook is the HTTP handler of an account whose platform posts its
// events (Telegram's webhook mode, Slack's Events API): the running
// adapter, which checks the platform's signature or secret itself. The
// gateway mounts it at /channels/{tenant}/{channel}/{account}.
func (h *Hub) Webhook(channelID, accountID string) (http.Handler, error) {
	acc, err := h.account(channelID, accountID)
	if err != nil {
		return nil, err
	}
	hd, ok := acc.transport().(http.Handler)
	if !ok || !acc.isRunning() {
		return nil, fmt.Errorf("%s account %q: %w", channelID, accountID, ErrNoWebhook)
	}
	return hd, nil
}
