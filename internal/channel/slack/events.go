package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// maxBody bounds an Events API request; Slack's event payloads are a few
// KB and at most about 40 KB of text.
const maxBody = 1 << 20

// maxSkew is how far X-Slack-Request-Timestamp may be from now (spec
// R12.2): an older signed request is a replay.
const maxSkew = 300 * time.Second

// Verify checks a request's Slack signature: the timestamp within five
// minutes of now and X-Slack-Signature equal to "v0=" + hex
// HMAC-SHA256(secret, "v0:<timestamp>:<body>"), compared in constant time.
func Verify(secret []byte, h http.Header, body []byte, now time.Time) error {
	tsHdr := h.Get("X-Slack-Request-Timestamp")
	ts, err := strconv.ParseInt(tsHdr, 10, 64)
	if err != nil {
		return errors.New("slack signature: X-Slack-Request-Timestamp is missing or not a number")
	}
	skew := now.Sub(time.Unix(ts, 0))
	if skew > maxSkew || skew < -maxSkew {
		return fmt.Errorf("slack signature: timestamp is %s from now, more than %s", skew.Round(time.Second), maxSkew)
	}
	got := h.Get("X-Slack-Signature")
	if got == "" {
		return errors.New("slack signature: X-Slack-Signature is missing")
	}
	if !hmac.Equal([]byte(got), []byte(Sign(secret, tsHdr, body))) {
		return errors.New("slack signature: X-Slack-Signature does not match")
	}
	return nil
}

// Sign is the X-Slack-Signature of body sent at timestamp ts.
func Sign(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// ServeHTTP is the Events API endpoint the gateway mounts at
// /channels/{tenant}/slack/{account} in http mode. A request must be
// signed (401 otherwise); url_verification is answered with its challenge;
// an event_callback is answered 200 only after Accept stored it, 500 when
// it did not (Slack retries, with the same event_id), 503 before Run has
// identified the bot.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if a.mode != ModeHTTP {
		http.Error(w, "this Slack account runs in socket mode", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if err := Verify(a.secret, r.Header, body, a.now()); err != nil {
		a.log.Warn("slack: refused an unsigned request", "err", err)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if payload := form.Get("payload"); err == nil && payload != "" {
			a.serveInteractive(w, r, []byte(payload))
			return
		}
		// A slash command: Slack shows this text to the person who
		// ran it.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Talon does not handle Slack slash commands yet.")
		return
	}
	cb, err := decodeCallback(body)
	if err != nil {
		http.Error(w, "malformed payload", http.StatusBadRequest)
		return
	}
	switch cb.Type {
	case "url_verification":
		a.answerChallenge(w, cb.Challenge)
	case "event_callback":
		a.serveCallback(w, r, body)
	default:
		// app_rate_limited and anything new: nothing to take.
		w.WriteHeader(http.StatusOK)
	}
}

func (a *App) answerChallenge(w http.ResponseWriter, challenge string) {
	if challenge == "" || len(challenge) > 256 {
		http.Error(w, "malformed challenge", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"challenge": challenge})
}

// serveInteractive answers an interactive payload (a button press) 200,
// with an empty body so Slack leaves the message as it is, once Accept
// stored it, or when there is nothing to take; 500 when Accept refused.
func (a *App) serveInteractive(w http.ResponseWriter, r *http.Request, payload []byte) {
	a.mu.Lock()
	accept := a.accept
	a.mu.Unlock()
	if accept == nil {
		http.Error(w, "not running yet", http.StatusServiceUnavailable)
		return
	}
	if err := a.handleInteractive(r.Context(), payload, accept); err != nil {
		a.log.Warn("slack: button press not taken", "err", err)
		http.Error(w, "press not stored", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (a *App) serveCallback(w http.ResponseWriter, r *http.Request, body []byte) {
	a.mu.Lock()
	accept := a.accept
	a.mu.Unlock()
	if accept == nil {
		http.Error(w, "not running yet", http.StatusServiceUnavailable)
		return
	}
	err := a.handleCallback(r.Context(), body, accept)
	switch {
	case errors.Is(err, errMalformed):
		a.log.Warn("slack: dropping a malformed event", "err", err)
		http.Error(w, "malformed event", http.StatusBadRequest)
	case err != nil:
		a.log.Warn("slack: event not taken; Slack will retry", "err", err, "retry", r.Header.Get("X-Slack-Retry-Num"))
		http.Error(w, "event not stored", http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusOK)
	}
}
