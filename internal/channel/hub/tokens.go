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
	owners map[[32]byte]Owner
}

// Owner is an account holding a token.
type Owner struct{ Tenant, Channel, Account string }

func (o Owner) String() string {
	return fmt.Sprintf("tenant %q, %s account %q", o.Tenant, o.Channel, o.Account)
}

// NewTokens returns an empty registry.
func NewTokens() *Tokens { return &Tokens{owners: map[[32]byte]Owner{}} }

// Claim takes token for owner until release is called. A token another
// account holds is refused with an error naming that account when it is
// the same tenant's, and only as "another tenant's account" otherwise
// (the error is shown to the tenant, which must not learn others'
// names); never the token. An empty token needs no claim.
func (t *Tokens) Claim(token string, owner Owner) (release func(), err error) {
	if token == "" {
		return func() {}, nil
	}
	k := sha256.Sum256([]byte(owner.Channel + "\x00" + token))
	t.mu.Lock()
	defer t.mu.Unlock()
	if other, ok := t.owners[k]; ok {
		holder := "an account of another tenant"
		if other.Tenant == owner.Tenant {
			holder = fmt.Sprintf("%s account %q", other.Channel, other.Account)
		}
		return nil, fmt.Errorf("starting %s: its bot token is already used by %s; a %s bot token can run in one account only",
			owner, holder, owner.Channel)
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
