package config

import "strconv"

// Paths name a place in the tree the way people write it in docs and chat:
// agents.list[2].tools.allow, tools.byProvider["openai/gpt-5.2"]. The empty
// path is the whole document and is shown as "(root)".

const rootPath = "(root)"

func showPath(p string) string {
	if p == "" {
		return rootPath
	}
	return p
}

func joinKey(parent, key string) string {
	if !plainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func joinIndex(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// plainKey reports whether key can be written after a dot without being
// misread: ASCII letters, digits, '_', '$' and '-' only.
func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '$', c == '-':
		default:
			return false
		}
	}
	return true
}

// JoinKey is the path of member key under parent, as issues show it.
func JoinKey(parent, key string) string { return joinKey(parent, key) }

// JoinIndex is the path of item i of the array at parent.
func JoinIndex(parent string, i int) string { return joinIndex(parent, i) }
