package relay

import (
	"errors"

	"talon/protocol"
)

// Refusal is the gateway's own message when err is the gateway refusing a
// call or a connection: a protocol.Error, which the gateway writes for its
// caller. Anything else (a dial that failed, a connection that dropped, an
// answer that did not decode) is Talon's own text, with addresses and
// file paths in it: it goes to the log, and the caller gets a fixed
// sentence.
func Refusal(err error) (string, bool) {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Message, true
	}
	return "", false
}
