package yamltool

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// EnvUnsetError is Request's error when a requires_env variable has no
// value: it names the variable, never a value, so a caller can add where
// variables come from.
type EnvUnsetError struct {
	Tool, Name string
}

func (e *EnvUnsetError) Error() string {
	return fmt.Sprintf("api tool %q: env %s is not set", e.Tool, e.Name)
}

// Call is one request built by Request, with the env values it carries,
// so that no message about it shows them.
type Call struct {
	Req  *http.Request
	tool *Tool
	env  map[string]string // the requires_env values, read once
	hide *strings.Replacer
}

// newCall reads the tool's env values once: the same values go into the
// request and into the replacer that hides them.
func (t *Tool) newCall(env func(string) (string, bool)) (*Call, error) {
	type pair struct{ value, tag string }
	var pairs []pair
	vals := make(map[string]string, len(t.RequiresEnv))
	for _, name := range t.RequiresEnv {
		v, ok := env(name)
		if !ok || v == "" {
			return nil, &EnvUnsetError{Tool: t.Name, Name: name}
		}
		vals[name] = v
		tag := "{{" + nsEnv + "." + name + "}}"
		// Every form the value takes in what is sent, or in a message
		// that quotes what is sent: as is (headers, text), escaped into
		// the URL path or query or a form, inside a JSON string, and
		// Go-quoted (url.Error prints its URL with %q).
		for _, f := range []string{v, url.PathEscape(v), url.QueryEscape(v),
			strings.Trim(string(mustJSON(v)), `"`), strings.Trim(strconv.Quote(v), `"`)} {
			pairs = append(pairs, pair{f, tag})
		}
	}
	// strings.Replacer tries the old strings in argument order at each
	// position: the longest first, so a value that contains another
	// value is hidden whole.
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(len(b.value), len(a.value)) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.value, p.tag)
	}
	return &Call{tool: t, env: vals, hide: strings.NewReplacer(args...)}, nil
}

// Redact returns s with every env value of the call, in each form it
// takes in the request, replaced by its {{env.NAME}} tag: values of any
// length, so a secret's bytes never pass.
func (c *Call) Redact(s string) string { return c.hide.Replace(s) }

// Error describes an error of sending the call for the model. A transport
// error quotes the request URL: it shows the url as the file writes it,
// tags unexpanded, and what is left (a redirect target that carries a
// value back) passes through Redact.
func (c *Call) Error(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return c.Redact(fmt.Sprintf("%s %s: %v", ue.Op, c.tool.URL, ue.Err))
	}
	return c.Redact(err.Error())
}

// lookup finds a value read by newCall.
func (c *Call) lookup(name string) (string, bool) {
	v, ok := c.env[name]
	return v, ok
}

// fail makes err safe to return from Request; the message is all that
// is kept.
func (c *Call) fail(err error) error {
	return errors.New(c.Redact(err.Error()))
}
