package relay

import (
	"errors"
	"fmt"
	"testing"

	"talon/protocol"
)

func TestRefusal(t *testing.T) {
	refused := &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "unknown agent \"x\""}
	cases := []struct {
		name string
		err  error
		want string
		ok   bool
	}{
		{"a refused call", fmt.Errorf("chat.send to tenant %q: %w", "acme", refused), refused.Message, true},
		{"a refused connection", fmt.Errorf("connecting to the gateway for tenant %q: connect refused: %w", "acme", refused), refused.Message, true},
		{"a failed dial", fmt.Errorf("connecting to the gateway for tenant %q: dialing ws://127.0.0.1:1: %w", "acme", errors.New("connection refused")), "", false},
		{"closed", ErrClosed, "", false},
		{"nil", nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Refusal(c.err)
			if got != c.want || ok != c.ok {
				t.Errorf("Refusal(%v) = %q, %v; want %q, %v", c.err, got, ok, c.want, c.ok)
			}
		})
	}
}
