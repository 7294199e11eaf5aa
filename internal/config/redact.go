package config

import (
	"fmt"
	"strings"
)

// RedactedSentinel replaces secrets in config.get output. Clients send it
// back unchanged, and Restore puts the stored secret in its place.
const RedactedSentinel = "__OPENCLAW_REDACTED__"

// redactMode says what to hide in a subtree.
type redactMode uint8

const (
	showAll     redactMode = iota
	hideStrings            // a sensitive key's value: the string, or strings of an array
	hideAll                // inside an env object: every string at any depth
)

// Redact returns a copy of tree with sensitive non-empty strings replaced by
// RedactedSentinel. A string is sensitive when its key names a credential
// (see sensitiveKey) or when it lies anywhere under an object-valued "env"
// key (top-level env, plugins.entries.*.env, sandbox docker env), since
// those hold API keys under arbitrary names.
func Redact(tree *Value) *Value {
	return redact(tree, showAll)
}

func redact(v *Value, mode redactMode) *Value {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case String:
		if mode != showAll && v.Str != "" {
			return NewString(RedactedSentinel)
		}
	case Array:
		c := &Value{Kind: Array, Items: make([]*Value, len(v.Items))}
		for i, it := range v.Items {
			c.Items[i] = redact(it, mode)
		}
		return c
	case Object:
		c := &Value{Kind: Object, Members: make([]Member, len(v.Members))}
		for i, m := range v.Members {
			child := showAll
			switch {
			case mode == hideAll || m.Key == "env" && m.Value != nil && m.Value.Kind == Object:
				child = hideAll
			case sensitiveKey(m.Key):
				child = hideStrings
			}
			c.Members[i] = Member{Key: m.Key, Value: redact(m.Value, child)}
		}
		return c
	}
	return v.Clone()
}

var keySeparators = strings.NewReplacer("-", "", "_", "")

// sensitiveKey reports keys that name a credential: after lower-casing and
// dropping '-' and '_', they contain token (but not only as "tokens", which
// are counts like maxTokens), password, secret or apikey, end in privatekey,
// or are exactly key or authorization (an HTTP header holding a bearer token).
func sensitiveKey(key string) bool {
	k := keySeparators.Replace(strings.ToLower(key))
	switch {
	case k == "key", k == "authorization":
		return true
	case strings.HasSuffix(k, "privatekey"):
		return true
	case strings.Contains(k, "password"), strings.Contains(k, "secret"), strings.Contains(k, "apikey"):
		return true
	}
	return strings.Contains(strings.ReplaceAll(k, "tokens", ""), "token")
}

// Restore returns a copy of next with every RedactedSentinel string replaced
// by the value at the same path in onDisk, so a client can send back what
// config.get gave it. Object members match by key, arrays by index, and
// arrays whose elements all have an id (on both sides) by id, so reordering
// agents.list keeps each agent's secrets (unless ids repeat on disk). A sentinel with nothing stored at
// its path is an error: writing it would replace a secret with the
// placeholder text.
func Restore(next, onDisk *Value) (*Value, error) {
	return restore("", next, onDisk)
}

func restore(path string, next, disk *Value) (*Value, error) {
	if next == nil {
		return nil, nil
	}
	switch next.Kind {
	case String:
		if next.Str != RedactedSentinel {
			break
		}
		if disk.IsNull() {
			return nil, fmt.Errorf("config.patch: %s: redacted placeholder has no stored value to restore", showPath(path))
		}
		return disk.Clone(), nil
	case Array:
		var byID map[string]*Value
		// Ids redacted under env say nothing about which element is which:
		// only the index does.
		if disk != nil && disk.Kind == Array && allHaveID(next.Items) && allHaveID(disk.Items) && !redactedID(next.Items) {
			byID = make(map[string]*Value, len(disk.Items))
			for _, it := range disk.Items {
				byID[idOf(it)] = it
			}
			if len(byID) < len(disk.Items) {
				byID = nil // repeated ids on disk: only the index says which is which
			}
		}
		c := &Value{Kind: Array, Items: make([]*Value, len(next.Items))}
		for i, it := range next.Items {
			var d *Value
			switch {
			case byID != nil:
				d = byID[idOf(it)]
			case disk != nil && disk.Kind == Array && i < len(disk.Items):
				d = disk.Items[i]
			}
			r, err := restore(joinIndex(path, i), it, d)
			if err != nil {
				return nil, err
			}
			c.Items[i] = r
		}
		return c, nil
	case Object:
		stored := map[string]*Value{}
		if disk != nil && disk.Kind == Object {
			for _, m := range disk.Members {
				if _, dup := stored[m.Key]; !dup {
					stored[m.Key] = m.Value
				}
			}
		}
		c := &Value{Kind: Object, Members: make([]Member, len(next.Members))}
		for i, m := range next.Members {
			r, err := restore(joinKey(path, m.Key), m.Value, stored[m.Key])
			if err != nil {
				return nil, err
			}
			c.Members[i] = Member{Key: m.Key, Value: r}
		}
		return c, nil
	}
	return next.Clone(), nil
}

// redactedID reports whether an element's id is the redaction sentinel.
func redactedID(items []*Value) bool {
	for _, it := range items {
		if idOf(it) == RedactedSentinel {
			return true
		}
	}
	return false
}
