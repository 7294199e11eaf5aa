package discord

import (
	"sync"
)

// maxCached bounds each cache: a bot in many guilds keeps at most this
// many channels, DM channels and guilds' roles; an entry pushed out is
// looked up again (GET /channels/{id}) when a message needs it.
const maxCached = 4096

// maxNameLen is Discord's longest channel name; a longer one from the
// wire is cut so a hostile payload cannot grow the cache.
const maxNameLen = 100

// chanInfo is what a peer's shape needs to know about a channel.
type chanInfo struct {
	typ    int
	parent string // a thread's channel
	name   string
}

func (c chanInfo) thread() bool {
	return c.typ == chanPublicThread || c.typ == chanPrivateThread || c.typ == chanAnnouncementThread
}

// cache holds what the gateway told the bot about channels and its own
// roles, so a message maps to its peer without a request. Safe for
// concurrent use (the gateway loop writes, Send reads DM channels).
type cache struct {
	mu       sync.Mutex
	channels map[string]chanInfo
	dms      map[string]string   // user id → DM channel id
	roles    map[string][]string // guild id → the bot's roles there
}

func newCache() *cache {
	return &cache{channels: map[string]chanInfo{}, dms: map[string]string{}, roles: map[string][]string{}}
}

// put adds to m, first dropping an arbitrary entry when m is full: the
// caches are hints, so losing one costs a lookup, never correctness.
func put[V any](m map[string]V, k string, v V) {
	if _, ok := m[k]; !ok && len(m) >= maxCached {
		for old := range m {
			delete(m, old)
			break
		}
	}
	m[k] = v
}

func (c *cache) channel(id string) (chanInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.channels[id]
	return info, ok
}

// addChannel records a channel object from the wire; one with an
// invalid id is ignored.
func (c *cache) addChannel(ch channelObj) {
	if !snowflake(ch.ID) || (ch.ParentID != "" && !snowflake(ch.ParentID)) {
		return
	}
	name := ch.Name
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	put(c.channels, ch.ID, chanInfo{typ: ch.Type, parent: ch.ParentID, name: name})
}

func (c *cache) removeChannel(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.channels, id)
}

func (c *cache) dm(userID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.dms[userID]
	return id, ok
}

func (c *cache) setDM(userID, channelID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	put(c.dms, userID, channelID)
}

func (c *cache) botRoles(guildID string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roles[guildID]
}

func (c *cache) setBotRoles(guildID string, roles []string) {
	valid := make([]string, 0, len(roles))
	for _, r := range roles {
		if snowflake(r) {
			valid = append(valid, r)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	put(c.roles, guildID, valid)
}

func (c *cache) forgetGuild(guildID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.roles, guildID)
}

// snowflake says s is a Discord id: decimal digits, at most 20 (a
// uint64). Every id from the wire and every target is checked with it
// before it reaches a URL path or an envelope.
func snowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
