package api

import (
	"net/http"
	"strings"

	"talon/internal/platform/relay"
	"talon/internal/sse"
)

// maxMessage caps a chat message; the body cap holds the request, this
// says which field is at fault.
const maxMessage = 256 << 10

type chatReq struct {
	User    string `json:"user"`
	Message string `json:"message"`
}

func (q *chatReq) check() error {
	u := q.User
	switch {
	case u == "":
		return badField("user", "is required")
	case len(u) > 128 || strings.ContainsAny(u, ": \t\r\n"):
		return badField("user", "%q is invalid: 1-128 characters, no spaces or colons", u)
	case strings.TrimSpace(q.Message) == "":
		return badField("message", "is required")
	case len(q.Message) > maxMessage:
		return badField("message", "is longer than %d bytes", maxMessage)
	}
	return nil
}

// chat sends the message to the tenant's employee and streams the run's
// events as SSE: "event: <kind>" and "data: <relay.Event as JSON>", each
// flushed as it comes, the last one final, aborted or error. Until the
// first event nothing is written, so a refusal (not installed, no chat,
// gateway down) is an ordinary JSON error with its status; after it, a
// failure is an error event. The request's context is the run's: a client
// that goes away stops the wait (the run itself finishes in the gateway
// and lands in the session's history).
func (s *server) chat(w http.ResponseWriter, r *http.Request) error {
	var q chatReq
	if err := decode(r, &q); err != nil {
		return err
	}
	if err := q.check(); err != nil {
		return err
	}
	var out *sse.Stream
	send := func(ev relay.Event) {
		if out == nil {
			out = sse.Start(w)
		}
		// A client gone ends the stream; the wait ends with its context.
		out.JSON(ev.Kind, ev)
	}
	_, err := s.p.Chat(r.Context(), r.PathValue("id"), r.PathValue("slug"), q.User, q.Message, send)
	switch {
	case err == nil:
		return nil
	case out != nil:
		if r.Context().Err() == nil {
			e := gatewayFailed(err)
			send(relay.Event{Kind: "error", Error: s.logFailure(r, e, err)})
		}
		return nil
	}
	if e := classify(err); e.status != http.StatusInternalServerError {
		return e
	}
	// Past the checks above the platform's own refusals are classified;
	// what is left is reaching the gateway.
	return gatewayFailed(err)
}
