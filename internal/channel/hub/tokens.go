package hub

import (
	"crypto/sha256"
	"fmt"
	"sync"
)

// Tokens is the process's registry of bot tokens in use: a platform lets
// one poller or gateway connection per token work (Telegram answers a
// second getUpdates with 409, Discord runs one session per identify), so
// one token runs in one account of one tenant. It is shared by every
// tenant's hub; it holds hashes, never the tokens.
type Tokens struct {
	mu     sync.Mutex
	owners map[[32]byte]string
}

// NewTokens returns an empty registry.
func NewTokens() *Tokens { return &Tokens{owners: map[[32]byte]string{}} }

// Claim takes token for owner (a description such as `tenant "a",
// telegram account "default"`) until release is called. A token another
// owner holds is refused with an error naming that owner, never the
// token. An empty token needs no claim.
func (t *Tokens) Claim(channel, token, owner string) (release func(), err error) {
	if token == "" {
		return func() {}, nil
	}
	k := sha256.Sum256([]byte(channel + "\x00" + token))
	t.mu.Lock()
	defer t.mu.Unlock()
	if other, ok := t.owners[k]; ok {
		return nil, fmt.Errorf("starting %s: its bot token is already used by %s; a %s bot token can run in one account only", owner, other, channel)
	}
	t.owners[k] = owner
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.owners[k] == owner {
				delete(t.owners, k)
			}
		})
	}, nil
}
