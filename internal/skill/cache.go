package skill

import (
	"crypto/sha256"
	"sync"
)

// A run loads its workspace's skills every turn; parsing YAML is the
// costly part (a hostile file can take tens of milliseconds), so parses
// are kept by the hash of the file's name and bytes. An edited file hashes
// differently and is parsed again. The cache is dropped whole when full.
// A cached Skill shares its Metadata bytes: callers must not modify them.
const maxParsed = 1024

var parsed struct {
	mu sync.Mutex
	m  map[[32]byte]parseResult
}

type parseResult struct {
	s   Skill
	err error
}

// parseCached is Parse, remembered by content.
func parseCached(file string, data []byte) (Skill, error) {
	h := sha256.New()
	h.Write([]byte(file))
	h.Write([]byte{0})
	h.Write(data)
	var key [32]byte
	h.Sum(key[:0])
	parsed.mu.Lock()
	r, ok := parsed.m[key]
	parsed.mu.Unlock()
	if ok {
		return r.s, r.err
	}
	s, err := Parse(file, data)
	parsed.mu.Lock()
	if parsed.m == nil || len(parsed.m) >= maxParsed {
		parsed.m = make(map[[32]byte]parseResult)
	}
	parsed.m[key] = parseResult{s, err}
	parsed.mu.Unlock()
	return s, err
}
