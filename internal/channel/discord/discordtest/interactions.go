package discordtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// Press is a user pressing a button under one of the bot's messages.
type Press struct {
	MessageID string
	CustomID  string
	// From is the presser; UserID when empty.
	From string
	// Strip removes these top-level fields from the INTERACTION_CREATE
	// payload ("message", "member", "user", "channel_id"), for tests of a
	// press a client cannot map.
	Strip []string
}

// Callback is an interaction response the bot sent.
type Callback struct {
	InteractionID string
	Type          int
}

// pending is an interaction Discord waits to see answered.
type pending struct {
	token    string
	answered bool
}

// Press dispatches INTERACTION_CREATE (type 3, MESSAGE_COMPONENT) for a
// press of a button the bot posted, as Discord does: only for a button
// that is on the message. It returns the interaction id.
func (s *Server) Press(p Press) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[p.MessageID]
	if !ok || m.Author.ID != BotID {
		return "", fmt.Errorf("discordtest: no bot message %s", p.MessageID)
	}
	btns, _ := buttons(m.Components)
	if !slices.ContainsFunc(btns, func(b Button) bool { return b.CustomID == p.CustomID && b.Style != 5 }) {
		return "", fmt.Errorf("discordtest: message %s has no button %q", p.MessageID, p.CustomID)
	}
	from := p.From
	if from == "" {
		from = UserID
	}
	u := user{ID: from, Username: "user" + from[len(from)-2:], GlobalName: "User " + from[len(from)-2:]}
	ch := s.channels[m.ChannelID]
	tok := make([]byte, 48)
	rand.Read(tok)
	id := s.id()
	s.pending[id] = &pending{token: "aW50ZXJhY3Rpb246" + base64.RawURLEncoding.EncodeToString(tok)}
	in := map[string]any{
		"id": id, "application_id": BotID, "type": 3, "version": 1, "token": s.pending[id].token,
		"channel_id": m.ChannelID, "channel": map[string]any{"id": ch.ID, "type": ch.Type},
		"message": s.render(m), "data": map[string]any{"custom_id": p.CustomID, "component_type": 2},
		"app_permissions": "2248473465835073", "locale": "en-US", "entitlements": []any{},
	}
	if ch.GuildID != "" {
		in["guild_id"], in["guild_locale"], in["context"] = ch.GuildID, "en-US", 0
		in["member"] = map[string]any{"user": u, "roles": []string{}, "permissions": "2248473465835073", "joined_at": m.Timestamp}
	} else {
		in["user"], in["context"] = u, 1
	}
	for _, k := range p.Strip {
		delete(in, k)
	}
	s.emit("INTERACTION_CREATE", in)
	s.change()
	return id, nil
}

// Callbacks is every interaction response the bot sent, in order.
func (s *Server) Callbacks() []Callback {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Callback(nil), s.callbacks...)
}

// WaitCallbacks waits until the bot sent n interaction responses.
func (s *Server) WaitCallbacks(ctx context.Context, n int) ([]Callback, error) {
	err := s.wait(ctx, fmt.Sprintf("%d interaction responses", n), func() bool { return len(s.callbacks) >= n })
	return s.Callbacks(), err
}

// callback is POST /interactions/{id}/{token}/callback. It needs no bot
// token (the interaction's own token is the credential), answers 204,
// and refuses an unknown interaction or a second response as Discord
// does.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Type *int `json:"type"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil || in.Type == nil {
		fail(w, http.StatusBadRequest, 50035, "Invalid Form Body: type: This field is required")
		return
	}
	if !slices.Contains([]int{4, 5, 6, 7, 9, 10}, *in.Type) {
		fail(w, http.StatusBadRequest, 50035, "Invalid Form Body: type: Value must be a valid interaction callback type for a component.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+strings.TrimPrefix(r.URL.Path, "/api/v10"))
	s.change()
	p, ok := s.pending[r.PathValue("id")]
	switch {
	case !ok || p.token != r.PathValue("token"):
		fail(w, http.StatusNotFound, 10062, "Unknown interaction")
		return
	case p.answered:
		fail(w, http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
		return
	}
	p.answered = true
	s.callbacks = append(s.callbacks, Callback{InteractionID: r.PathValue("id"), Type: *in.Type})
	w.WriteHeader(http.StatusNoContent)
}
