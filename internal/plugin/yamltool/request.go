package yamltool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Request checks the model's arguments against the parameter schema
// (types, enums, required; defaults applied; unknown arguments refused)
// and builds the exact HTTP request. env looks up the env vars the tool
// may use; every requires_env name must be set (an *EnvUnsetError names
// the first that is not). The request has no context or deadline: the
// caller adds them, with t.Timeout, and sends it through the network
// guard. No error shows an env value: the URL appears as the file writes
// it.
func (t *Tool) Request(args map[string]any, env func(string) (string, bool)) (*Call, error) {
	canon, err := t.checkArgs(args)
	if err != nil {
		return nil, err
	}
	c, err := t.newCall(env)
	if err != nil {
		return nil, err
	}
	if c.Req, err = c.build(canon); err != nil {
		return nil, err
	}
	return c, nil
}

// build renders the request from checked arguments. The two errors that
// could quote the rendered URL pass through fail.
func (c *Call) build(canon map[string]any) (*http.Request, error) {
	t := c.tool
	v := values{tool: t.Name, args: canon, env: c.lookup}
	raw, err := t.renderURL(v.text)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, c.fail(fmt.Errorf("api tool %q: building url from %s: %w", t.Name, t.URL, withoutURL(err)))
	}
	// A param value "." or ".." in the path would walk out of the path
	// the file declares, on a server that resolves dot segments.
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("api tool %q: url path has a %q segment", t.Name, seg)
		}
	}
	// The host is literal text checked at parse time; checked again so
	// that no rendering mistake can ever move the request elsewhere.
	if !t.hostAllowed(u.Hostname()) {
		return nil, fmt.Errorf("api tool %q: host %q matches no allowed_hosts entry", t.Name, u.Hostname())
	}

	var body []byte
	contentType := ""
	switch t.bodyType {
	case BodyJSON:
		var b bytes.Buffer
		ok, err := v.writeJSON(&b, t.body)
		if err != nil {
			return nil, err
		}
		if !ok {
			b.WriteString("null")
		}
		body, contentType = b.Bytes(), "application/json"
	case BodyForm:
		s, err := v.form(t.form)
		if err != nil {
			return nil, err
		}
		body, contentType = []byte(s), "application/x-www-form-urlencoded"
	case BodyText:
		s, err := t.text.render(v.text, nil)
		if err != nil {
			return nil, err
		}
		body, contentType = []byte(s), "text/plain; charset=utf-8"
	}
	var r io.Reader = http.NoBody
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(t.Method, u.String(), r)
	if err != nil {
		return nil, c.fail(fmt.Errorf("api tool %q: building request for %s: %w", t.Name, t.URL, withoutURL(err)))
	}
	for _, h := range t.headers {
		s, err := h.value.render(v.text, nil)
		if err != nil {
			return nil, err
		}
		// A value with a line break would split the header; the Go
		// client refuses it too, but the error should name the header.
		if strings.ContainsAny(s, "\r\n\x00") {
			return nil, fmt.Errorf("api tool %q: header %s: value contains a line break or NUL", t.Name, h.name)
		}
		req.Header.Set(h.name, s)
	}
	if contentType != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
}

// withoutURL drops the URL a *url.Error quotes: it holds the values.
func withoutURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// checkArgs returns the canonical argument values with defaults applied.
func (t *Tool) checkArgs(args map[string]any) (map[string]any, error) {
	var unknown []string
	for k := range args {
		if t.param(k) == nil {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("api tool %q: unknown argument %q (parameters: %s)", t.Name, unknown[0], strings.Join(t.paramNames(), ", "))
	}
	out := make(map[string]any, len(t.params))
	for _, p := range t.params {
		a, ok := args[p.Name]
		if !ok || a == nil {
			switch {
			case p.Required:
				return nil, fmt.Errorf("api tool %q: argument %q is required", t.Name, p.Name)
			case p.Default != nil:
				out[p.Name] = p.Default
			}
			continue
		}
		c, err := p.coerce(a)
		if err != nil {
			return nil, fmt.Errorf("api tool %q: argument %q: %w", t.Name, p.Name, err)
		}
		out[p.Name] = c
	}
	return out, nil
}

func (t *Tool) paramNames() []string {
	names := make([]string, len(t.params))
	for i, p := range t.params {
		names[i] = p.Name
	}
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

// Params returns the declared parameters in file order.
func (t *Tool) Params() []Param { return slices.Clone(t.params) }
