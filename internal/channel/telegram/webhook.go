package telegram

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"time"

	"talon/internal/channel"
)

const (
	maxWebhookBody = 1 << 20 // R11.2
	webhookRead    = 30 * time.Second
	secretHeader   = "X-Telegram-Bot-Api-Secret-Token"
)

// serveWebhook registers the webhook, then leaves the updates to
// ServeHTTP until ctx ends. The webhook stays set when Run returns, so
// Telegram keeps the updates that arrive meanwhile and retries them.
func (b *Bot) serveWebhook(ctx context.Context, accept channel.Accept) error {
	params := map[string]any{
		"url":             b.webhook.URL,
		"secret_token":    b.webhook.Secret,
		"allowed_updates": allowedUpdates,
	}
	for n := 0; ; n++ {
		err := b.api.call(ctx, "setWebhook", params, nil)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if perr := b.permanent(err); perr != nil {
			return perr
		}
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == 400 {
			// A URL Telegram refuses (not https, a bad port) is a
			// configuration error that no retry mends.
			b.setIssue(issueHook, channel.Issue{Kind: "config", Message: issueHook + ": " + ae.Description,
				Fix: "Set channels.telegram.webhookUrl to a public https URL on port 443, 80, 88 or 8443 that reaches this gateway"})
			b.update(func(s *channel.Status) { s.LastError = ae.Error() })
			return err
		}
		b.failed("setWebhook", err)
		if !b.timing.sleep(ctx, b.timing.backoff(n)) {
			return nil
		}
	}
	b.clearIssue(issueHook)
	b.accept.Store(&accept)
	defer b.accept.Store(nil)
	b.connected()
	<-ctx.Done()
	return nil
}

// ServeHTTP takes one update Telegram posts in webhook mode. It answers
// 200 only after accept stored the update; any other answer makes
// Telegram deliver it again.
func (b *Bot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "telegram webhook: only POST", http.StatusMethodNotAllowed)
		return
	}
	if b.webhook == nil {
		http.Error(w, "telegram webhook: this account polls", http.StatusNotFound)
		return
	}
	// Comparing digests keeps the secret's length out of the timing too.
	got, want := sha256.Sum256([]byte(r.Header.Get(secretHeader))), sha256.Sum256([]byte(b.webhook.Secret))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		w.Header().Set("Connection", "close")
		http.Error(w, "telegram webhook: secret token mismatch", http.StatusUnauthorized)
		return
	}
	accept := b.accept.Load()
	if accept == nil {
		http.Error(w, "telegram webhook: account not running", http.StatusServiceUnavailable)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(webhookRead))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "telegram webhook: body larger than 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "telegram webhook: read body", http.StatusBadRequest)
		return
	}
	u, err := decodeUpdate(body)
	if u.UpdateID == 0 {
		http.Error(w, "telegram webhook: body is not a Telegram update", http.StatusBadRequest)
		return
	}
	if err != nil {
		// Telegram would redeliver it forever; it cannot be read better.
		b.log.Warn("telegram update dropped", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := b.handle(r.Context(), u, *accept); err != nil {
		b.log.Warn("telegram webhook update not accepted; Telegram will retry", "err", err)
		b.update(func(s *channel.Status) { s.LastError = err.Error() })
		http.Error(w, "telegram webhook: update not stored", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}
