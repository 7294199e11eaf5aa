package config

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// RedactedSentinel replaces secrets in config.get output. Clients send it
// back unchanged, and Restore puts the stored secret in its place.
const RedactedSentinel = "__OPENCLAW_REDACTED__"

// redactMode says what to hide in a subtree.
type redactMode uint8

const (
	showAll     redactMode = iota // only credentials inside URLs
	hideStrings                   // a sensitive key's value: the string, or strings of an array
	hideAll                       // inside an env or credentials object: every string at any depth
	headerMap                     // a headers object: values of secret header names
	argList                       // an args array: secret flag values and KEY=value words
	webhook                       // a webhook key's value: a URL is hidden whole
)

// Redact returns a copy of tree with its secrets replaced by
// RedactedSentinel. Whole strings are hidden when their key names a
// credential (see secretKey), under an object-valued "env" key (top-level
// env, plugins.entries.*.env, mcp.servers.*.env, sandbox docker env) or a
// credentials key, as a secret header's value in a "headers" object, as
// a webhook key's URL, and as the Slack, Discord or Teams webhook URL
// they are anywhere. Parts of strings are hidden where the rest stays
// useful to read: the password of a URL's userinfo, secret query
// parameters and a Telegram bot token in any URL-valued string, and in an
// "args" array the value of a secret flag (--token X, --token=X) or of a
// KEY=value word with a secret key. Restore undoes each form.
func Redact(tree *Value) *Value {
	return redact(tree, showAll)
}

// RedactedJSON is Redact(tree) as JSON, compact. JSON5 allows Infinity
// and NaN, which JSON cannot carry; like JSON.stringify in OpenClaw, a
// tree holding them is written indented with them as null rather than
// not at all.
func RedactedJSON(tree *Value) []byte {
	r := Redact(tree)
	if b, err := r.MarshalJSON(); err == nil {
		return b
	}
	return r.Indented()
}

// RedactText hides the secrets of a config file in raw, its text, whose
// parsed tree is tree. Each string Redact hides is replaced wherever it
// appears; the result is taken only if it reads back as exactly the
// redacted tree, so that a secret written with escapes, or one equal to
// some other text of the file, can never leak or mislead. Otherwise the
// redacted tree itself is returned, as indented JSON.
func RedactText(raw []byte, tree *Value) string {
	red := Redact(tree)
	secrets := map[string]bool{}
	collectSecrets(tree, red, secrets)
	text := string(raw)
	if len(secrets) > 0 {
		// Where several secrets match at one position, strings.Replacer
		// takes the one passed first: longest first, so that a secret
		// that begins with another is replaced whole.
		olds := slices.SortedFunc(maps.Keys(secrets), func(a, b string) int {
			return cmp.Or(len(b)-len(a), strings.Compare(a, b))
		})
		pairs := make([]string, 0, 2*len(olds))
		for _, s := range olds {
			pairs = append(pairs, s, RedactedSentinel)
		}
		text = strings.NewReplacer(pairs...).Replace(text)
	}
	if back, err := ParseJSON5([]byte(text)); err == nil && Equal(back, red) {
		return text
	}
	return string(red.Indented())
}

// collectSecrets gathers the strings of orig that Redact replaced in red.
func collectSecrets(orig, red *Value, out map[string]bool) {
	if orig == nil || red == nil {
		return
	}
	switch orig.Kind {
	case String:
		if red.Kind == String && red.Str == RedactedSentinel && orig.Str != RedactedSentinel {
			out[orig.Str] = true
		}
	case Array:
		for i := range min(len(orig.Items), len(red.Items)) {
			collectSecrets(orig.Items[i], red.Items[i], out)
		}
	case Object:
		for i := range min(len(orig.Members), len(red.Members)) {
			collectSecrets(orig.Members[i].Value, red.Members[i].Value, out)
		}
	}
}

func redact(v *Value, mode redactMode) *Value {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case String:
		if r := redactString(v.Str, mode); r != v.Str {
			return NewString(r)
		}
	case Array:
		if mode == argList {
			return redactArgValues(v)
		}
		c := &Value{Kind: Array, Items: make([]*Value, len(v.Items))}
		for i, it := range v.Items {
			c.Items[i] = redact(it, mode)
		}
		return c
	case Object:
		c := &Value{Kind: Object, Members: make([]Member, len(v.Members))}
		for i, m := range v.Members {
			c.Members[i] = Member{Key: m.Key, Value: redact(m.Value, memberMode(mode, m))}
		}
		return c
	}
	return v.Clone()
}

// memberMode is the mode of an object member's value.
func memberMode(parent redactMode, m Member) redactMode {
	kind := Null
	if m.Value != nil {
		kind = m.Value.Kind
	}
	switch {
	case parent == hideAll:
		return hideAll
	case parent == headerMap:
		if secretHeader(m.Key) {
			return hideStrings
		}
		return showAll
	case m.Key == "env" && kind == Object, credentialKey(m.Key):
		return hideAll
	case secretKey(m.Key):
		return hideStrings
	case webhookKey(m.Key):
		return webhook
	case normName(m.Key) == "headers" && kind == Object:
		return headerMap
	case m.Key == "args" && kind == Array:
		return argList
	}
	return showAll
}

// redactString is a string's redacted form in mode.
func redactString(s string, mode redactMode) string {
	switch {
	case s == "":
		return s
	case mode == hideStrings, mode == hideAll, mode == webhook && isURL(s):
		return RedactedSentinel
	}
	return redactURL(s)
}

// redactArgValues redacts an args array. A word that is not a string is
// redacted as any other value and parts a flag from what follows.
func redactArgValues(v *Value) *Value {
	c := &Value{Kind: Array, Items: make([]*Value, len(v.Items))}
	start := 0
	flush := func(end int) {
		words := make([]string, 0, end-start)
		for _, it := range v.Items[start:end] {
			words = append(words, it.Str)
		}
		for i, w := range redactArgs(words) {
			c.Items[start+i] = NewString(w)
		}
	}
	for i, it := range v.Items {
		if it == nil || it.Kind != String {
			flush(i)
			c.Items[i] = redact(it, showAll)
			start = i + 1
		}
	}
	flush(len(v.Items))
	return c
}

// Restore returns a copy of next with the redaction undone from onDisk,
// so a client can send back what config.get gave it. A string that is
// RedactedSentinel takes the value at the same path in onDisk. A string
// with the sentinel inside (a URL whose password was hidden) takes the
// stored string only when it is exactly what Redact made of it: a client
// that edits such a string must send it whole, so a password can never
// follow a URL to a new host. An args array with a sentinel is restored
// whole, and only when it is exactly what Redact made of the stored one,
// since a word's meaning depends on the words before it (as OpenClaw
// restores MCP args). Object members match by key, arrays by index, and
// arrays whose elements all have an id (on both sides) by id, so
// reordering agents.list keeps each agent's secrets (unless ids repeat
// on disk). A sentinel with nothing stored at its path is an error:
// writing it would replace a secret with the placeholder text. Errors are
// *RestoreError.
func Restore(next, onDisk *Value) (*Value, error) {
	return restore("", next, stored{onDisk, Redact(onDisk)})
}

// RestoreError is a value Restore cannot undo the redaction of: the
// client sent a placeholder with nothing stored for it, or changed a
// value it was shown only in part. Path is the value's config path
// ("(root)" for the whole tree) and Reason says what the client must do
// differently; neither holds a secret, so both may be shown to it.
type RestoreError struct {
	Path   string
	Reason string
}

func (e *RestoreError) Error() string {
	return "restoring redacted values: " + e.Path + ": " + e.Reason
}

func restoreErr(path, reason string) error {
	return &RestoreError{Path: showPath(path), Reason: reason}
}

// stored is the value on disk at a path, and what Redact made of it.
type stored struct{ disk, red *Value }

// item and member are the stored value of an array element or object
// member; red has the shape of disk, so one index or key serves both.
func (s stored) item(i int) stored {
	if s.disk == nil || s.disk.Kind != Array || i >= len(s.disk.Items) {
		return stored{}
	}
	return stored{s.disk.Items[i], s.red.Items[i]}
}

func (s stored) member(key string) stored {
	if s.disk == nil || s.disk.Kind != Object {
		return stored{}
	}
	for i, m := range s.disk.Members {
		if m.Key == key {
			return stored{m.Value, s.red.Members[i].Value}
		}
	}
	return stored{}
}

func restore(path string, next *Value, st stored) (*Value, error) {
	if next == nil {
		return nil, nil
	}
	switch next.Kind {
	case String:
		switch {
		case next.Str == RedactedSentinel:
			if st.disk.IsNull() {
				return nil, restoreErr(path, "redacted placeholder has no stored value to restore")
			}
			return st.disk.Clone(), nil
		case strings.Contains(next.Str, RedactedSentinel):
			if st.red == nil || st.red.Kind != String || st.red.Str != next.Str {
				return nil, restoreErr(path, "a value with a redacted part was changed or has none stored; send it whole")
			}
			return st.disk.Clone(), nil
		}
	case Array:
		return restoreArray(path, next, st)
	case Object:
		c := &Value{Kind: Object, Members: make([]Member, len(next.Members))}
		for i, m := range next.Members {
			at := joinKey(path, m.Key)
			var (
				r   *Value
				err error
			)
			if m.Key == "args" && m.Value != nil && m.Value.Kind == Array && hasSentinel(m.Value) {
				r, err = restoreArgs(at, m.Value, st.member(m.Key))
			} else {
				r, err = restore(at, m.Value, st.member(m.Key))
			}
			if err != nil {
				return nil, err
			}
			c.Members[i] = Member{Key: m.Key, Value: r}
		}
		return c, nil
	}
	return next.Clone(), nil
}

func restoreArray(path string, next *Value, st stored) (*Value, error) {
	var byID map[string]int
	// Ids redacted under env say nothing about which element is which:
	// only the index does.
	if d := st.disk; d != nil && d.Kind == Array && allHaveID(next.Items) && allHaveID(d.Items) && !redactedID(next.Items) {
		byID = make(map[string]int, len(d.Items))
		for i, it := range d.Items {
			byID[idOf(it)] = i
		}
		if len(byID) < len(d.Items) {
			byID = nil // repeated ids on disk: only the index says which is which
		}
	}
	c := &Value{Kind: Array, Items: make([]*Value, len(next.Items))}
	for i, it := range next.Items {
		var s stored
		switch {
		case byID != nil:
			if j, ok := byID[idOf(it)]; ok {
				s = st.item(j)
			}
		default:
			s = st.item(i)
		}
		r, err := restore(joinIndex(path, i), it, s)
		if err != nil {
			return nil, err
		}
		c.Items[i] = r
	}
	return c, nil
}

// restoreArgs restores an args array that holds a sentinel: whole, from
// disk, when it is exactly what config.get showed.
func restoreArgs(path string, next *Value, st stored) (*Value, error) {
	if st.red == nil || !Equal(next, st.red) {
		return nil, restoreErr(path, "redacted placeholders in args that differ from the stored args cannot be restored; send every redacted value again to change args")
	}
	return st.disk.Clone(), nil
}

// hasSentinel reports whether a string of v holds RedactedSentinel.
func hasSentinel(v *Value) bool {
	if v == nil {
		return false
	}
	switch v.Kind {
	case String:
		return strings.Contains(v.Str, RedactedSentinel)
	case Array:
		for _, it := range v.Items {
			if hasSentinel(it) {
				return true
			}
		}
	case Object:
		for _, m := range v.Members {
			if hasSentinel(m.Value) {
				return true
			}
		}
	}
	return false
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
