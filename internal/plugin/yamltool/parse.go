package yamltool

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"talon/internal/safeyaml"
)

// Limits on one tool file.
const (
	MaxFileSize      = 64 << 10
	maxParams        = 32
	maxHeaders       = 32
	maxHosts         = 16
	maxEnv           = 32
	maxEnum          = 64
	maxDescription   = 4096
	maxBodyNodes     = 1024
	maxBodyDepth     = 16
	DefaultTimeout   = 30 * time.Second
	MaxTimeout       = 60 * time.Second
	maxNameLen       = 64
	maxHostEntryLen  = 253
	maxParamValueLen = 64 << 10
)

// Param types.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
)

// Body types.
const (
	BodyJSON = "json"
	BodyForm = "form"
	BodyText = "text"
)

var (
	toolNameRe  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	paramNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	headerRe    = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	hostLabelRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	methods     = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	// Headers the HTTP client sets itself from the request; a tool file
	// setting them would be ignored or would desynchronise the request.
	reservedHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection"}
)

// Tool is one parsed, validated YAML API tool.
type Tool struct {
	Name string
	// URL is the url as the file writes it, tags unexpanded: what
	// messages about a call show.
	URL         string
	Description string
	Method      string
	Timeout     time.Duration
	RequiresEnv []string
	AllowedHost []string

	params   []Param
	urlPath  template // scheme://host/path, tags path-escaped
	urlQuery template // after '?', tags query-escaped; nil when no '?'
	hasQuery bool
	headers  []header
	bodyType string
	body     jnode    // json body
	form     []formKV // form body
	text     template // text body
	summary  template
	errTmpl  template
}

// Param is one declared tool parameter.
type Param struct {
	Name        string
	Type        string
	Description string
	Required    bool
	Enum        []string
	Default     any // canonical: string, float64, int64 or bool; nil when none
}

type header struct {
	name  string
	value template
}

type formKV struct {
	key   string
	value template
}

// file is the YAML schema; strict decoding refuses any other key.
type file struct {
	Name         string               `yaml:"name"`
	Description  string               `yaml:"description"`
	Parameters   map[string]paramFile `yaml:"parameters"`
	Request      *requestFile         `yaml:"request"`
	Response     responseFile         `yaml:"response"`
	RequiresEnv  []string             `yaml:"requires_env"`
	AllowedHosts []string             `yaml:"allowed_hosts"`
}

type paramFile struct {
	Type        string   `yaml:"type"`
	Description string   `yaml:"description"`
	Required    bool     `yaml:"required"`
	Enum        []string `yaml:"enum"`
	Default     any      `yaml:"default"`
}

type requestFile struct {
	Method    string        `yaml:"method"`
	URL       string        `yaml:"url"`
	Headers   yaml.MapSlice `yaml:"headers"`
	Body      *bodyFile     `yaml:"body"`
	TimeoutMS *int64        `yaml:"timeout_ms"`
}

type bodyFile struct {
	Type    string `yaml:"type"`
	Content any    `yaml:"content"`
}

type responseFile struct {
	Summary       string `yaml:"summary"`
	ErrorTemplate string `yaml:"error_template"`
}

// Parse decodes and validates one YAML tool file; name is the file's name,
// used in errors.
func Parse(name string, data []byte) (*Tool, error) {
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("api tool file %q: %w", name, err)
	}
	return t, nil
}

func parse(data []byte) (*Tool, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, more than %d", len(data), MaxFileSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("file is empty")
	}
	var f file
	if err := safeyaml.Unmarshal(data, &f, yaml.Strict(), yaml.UseOrderedMap()); err != nil {
		return nil, fmt.Errorf("decoding YAML: %s", yamlMessage(err))
	}
	// Parameter order as written, for the schema the model sees.
	var order struct {
		Parameters yaml.MapSlice `yaml:"parameters"`
	}
	if err := safeyaml.Unmarshal(data, &order); err != nil {
		return nil, fmt.Errorf("decoding YAML: %s", yamlMessage(err))
	}

	t := &Tool{Name: f.Name, Description: strings.TrimSpace(f.Description)}
	switch {
	case f.Name == "":
		return nil, errors.New("name is missing")
	case len(f.Name) > maxNameLen:
		return nil, fmt.Errorf("name is %d characters, more than %d", len(f.Name), maxNameLen)
	case !toolNameRe.MatchString(f.Name):
		return nil, fmt.Errorf("name %q does not match [a-z][a-z0-9_]*", f.Name)
	}
	if err := checkDescription("description", t.Description); err != nil {
		return nil, err
	}
	if err := t.parseParams(f.Parameters, order.Parameters); err != nil {
		return nil, err
	}
	if err := t.parseEnvAndHosts(f.RequiresEnv, f.AllowedHosts); err != nil {
		return nil, err
	}
	if f.Request == nil {
		return nil, errors.New("request is missing")
	}
	if err := t.parseRequest(f.Request); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	var err error
	if t.summary, err = parseTemplate(f.Response.Summary, nsResponse); err != nil {
		return nil, fmt.Errorf("response.summary: %w", err)
	}
	if t.errTmpl, err = parseTemplate(f.Response.ErrorTemplate, nsResponse); err != nil {
		return nil, fmt.Errorf("response.error_template: %w", err)
	}
	return t, nil
}

// yamlMessage is the first line of a go-yaml error ("[5:5] unknown field
// \"bogus\""), which names the line and column; the rest is a source
// excerpt.
func yamlMessage(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if line, rest, ok := strings.Cut(strings.TrimPrefix(msg, "["), "] "); ok && strings.HasPrefix(msg, "[") {
		l, c, _ := strings.Cut(line, ":")
		return fmt.Sprintf("line %s column %s: %s", l, c, rest)
	}
	return msg
}

func checkDescription(what, d string) error {
	switch {
	case d == "":
		return fmt.Errorf("%s is missing", what)
	case len(d) > maxDescription:
		return fmt.Errorf("%s is %d bytes, more than %d", what, len(d), maxDescription)
	}
	return nil
}

func (t *Tool) parseParams(ps map[string]paramFile, order yaml.MapSlice) error {
	if len(ps) > maxParams {
		return fmt.Errorf("parameters: %d declared, more than %d", len(ps), maxParams)
	}
	for _, item := range order {
		name, ok := item.Key.(string)
		if !ok {
			return fmt.Errorf("parameters: name %v is not a string", item.Key)
		}
		p, err := parseParam(name, ps[name])
		if err != nil {
			return fmt.Errorf("parameters.%s: %w", name, err)
		}
		t.params = append(t.params, p)
	}
	return nil
}

func parseParam(name string, pf paramFile) (Param, error) {
	p := Param{Name: name, Type: pf.Type, Description: strings.TrimSpace(pf.Description), Required: pf.Required}
	if len(name) > maxNameLen || !paramNameRe.MatchString(name) {
		return p, fmt.Errorf("name %q does not match [A-Za-z][A-Za-z0-9_]* (at most %d characters)", name, maxNameLen)
	}
	switch pf.Type {
	case TypeString, TypeNumber, TypeInteger, TypeBoolean:
	case "":
		return p, errors.New("type is missing (string, number, integer or boolean)")
	default:
		return p, fmt.Errorf("type %q is not string, number, integer or boolean", pf.Type)
	}
	if err := checkDescription("description", p.Description); err != nil {
		return p, err
	}
	if pf.Enum != nil {
		if pf.Type != TypeString {
			return p, fmt.Errorf("enum is only for type string, not %s", pf.Type)
		}
		if len(pf.Enum) == 0 || len(pf.Enum) > maxEnum {
			return p, fmt.Errorf("enum has %d values, want 1 to %d", len(pf.Enum), maxEnum)
		}
		for i, v := range pf.Enum {
			if slices.Contains(pf.Enum[:i], v) {
				return p, fmt.Errorf("enum lists %q twice", v)
			}
		}
		p.Enum = pf.Enum
	}
	if pf.Default != nil {
		if pf.Required {
			return p, errors.New("required and default are both set; a parameter with a default is optional")
		}
		v, err := p.coerce(pf.Default)
		if err != nil {
			return p, fmt.Errorf("default: %w", err)
		}
		p.Default = v
	}
	return p, nil
}

// coerce checks v against the parameter's type and enum and returns its
// canonical form: string, float64, int64 or bool.
func (p Param) coerce(v any) (any, error) {
	switch p.Type {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %s", kind(v))
		}
		if len(s) > maxParamValueLen {
			return nil, fmt.Errorf("string is %d bytes, more than %d", len(s), maxParamValueLen)
		}
		if p.Enum != nil && !slices.Contains(p.Enum, s) {
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(p.Enum, ", "))
		}
		return s, nil
	case TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want a boolean, got %s", kind(v))
		}
		return b, nil
	}
	f, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("want a %s, got %s", p.Type, kind(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a finite number", f)
	}
	if p.Type == TypeNumber {
		return f, nil
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return nil, fmt.Errorf("%v is not an integer (at most 2^53 in magnitude)", f)
	}
	return int64(f), nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case interface{ Float64() (float64, error) }: // json.Number
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any, yaml.MapSlice:
		return "an object"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func (t *Tool) parseEnvAndHosts(env, hosts []string) error {
	if len(env) > maxEnv {
		return fmt.Errorf("requires_env: %d names, more than %d", len(env), maxEnv)
	}
	for i, e := range env {
		if !envNameRe.MatchString(e) {
			return fmt.Errorf("requires_env: %q is not an env var name", e)
		}
		if slices.Contains(env[:i], e) {
			return fmt.Errorf("requires_env: %q is listed twice", e)
		}
	}
	t.RequiresEnv = env
	if len(hosts) == 0 {
		return errors.New("allowed_hosts is missing: list the host names the url may use")
	}
	if len(hosts) > maxHosts {
		return fmt.Errorf("allowed_hosts: %d entries, more than %d", len(hosts), maxHosts)
	}
	for _, h := range hosts {
		if err := checkHostEntry(h); err != nil {
			return fmt.Errorf("allowed_hosts: %q: %w", h, err)
		}
	}
	t.AllowedHost = hosts
	return nil
}

// checkHostEntry accepts a lower-case DNS name, optionally "*." followed
// by a name of at least two labels.
func checkHostEntry(h string) error {
	if len(h) == 0 || len(h) > maxHostEntryLen {
		return fmt.Errorf("want a host name of 1 to %d characters", maxHostEntryLen)
	}
	name := h
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		name = rest
		if strings.Count(name, ".") < 1 {
			return errors.New(`a wildcard needs at least two labels after "*." (like *.example.com)`)
		}
	}
	for _, l := range strings.Split(name, ".") {
		if len(l) > 63 || !hostLabelRe.MatchString(l) {
			return errors.New("want a lower-case host name (letters, digits, '-', dots; no scheme, port, path or '*' other than a leading '*.')")
		}
	}
	return nil
}

// AllowsHost reports whether host (no port) matches an allowed_hosts
// entry; a sender checks it again for every redirect.
func (t *Tool) AllowsHost(host string) bool { return t.hostAllowed(host) }

// hostAllowed reports whether host (lower-cased, no port) matches an
// allowed_hosts entry.
func (t *Tool) hostAllowed(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range t.AllowedHost {
		if suffix, ok := strings.CutPrefix(h, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

func (t *Tool) parseRequest(r *requestFile) error {
	if !slices.Contains(methods, r.Method) {
		return fmt.Errorf("method %q is not one of %s", r.Method, strings.Join(methods, ", "))
	}
	t.Method = r.Method
	if err := t.parseURL(r.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	t.URL = r.URL
	t.Timeout = DefaultTimeout
	if r.TimeoutMS != nil {
		ms := *r.TimeoutMS
		if ms <= 0 || ms > MaxTimeout.Milliseconds() {
			return fmt.Errorf("timeout_ms %d is out of range: want 1 to %d", ms, MaxTimeout.Milliseconds())
		}
		t.Timeout = time.Duration(ms) * time.Millisecond
	}
	if len(r.Headers) > maxHeaders {
		return fmt.Errorf("headers: %d, more than %d", len(r.Headers), maxHeaders)
	}
	seen := map[string]bool{}
	for _, item := range r.Headers {
		name, ok := item.Key.(string)
		if !ok || !headerRe.MatchString(name) {
			return fmt.Errorf("headers: %v is not a valid header name", item.Key)
		}
		canon := http.CanonicalHeaderKey(name)
		if seen[canon] {
			return fmt.Errorf("headers: %s is set twice", canon)
		}
		seen[canon] = true
		if slices.Contains(reservedHeaders, canon) {
			return fmt.Errorf("headers: %s is set by the HTTP client and cannot be set here", canon)
		}
		value, ok := item.Value.(string)
		if !ok {
			return fmt.Errorf("headers.%s: want a string, got %s", name, kind(item.Value))
		}
		tm, err := t.requestTemplate(value)
		if err != nil {
			return fmt.Errorf("headers.%s: %w", name, err)
		}
		t.headers = append(t.headers, header{name: canon, value: tm})
	}
	if r.Body == nil {
		return nil
	}
	if r.Method == "GET" {
		return errors.New("body: a GET request has no body")
	}
	if err := t.parseBody(r.Body); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}

// requestTemplate parses a template used in the request: env and params
// only, every env name listed in requires_env, every param declared.
func (t *Tool) requestTemplate(s string) (template, error) {
	tm, err := parseTemplate(s, nsEnv, nsParams)
	if err != nil {
		return nil, err
	}
	for _, p := range tm {
		switch p.ns {
		case nsEnv:
			if !slices.Contains(t.RequiresEnv, p.path[0]) {
				return nil, fmt.Errorf("%s uses env %s, which requires_env does not list", p, p.path[0])
			}
		case nsParams:
			if t.param(p.path[0]) == nil {
				return nil, fmt.Errorf("%s names no declared parameter", p)
			}
		}
	}
	return tm, nil
}

func (t *Tool) param(name string) *Param {
	for i := range t.params {
		if t.params[i].Name == name {
			return &t.params[i]
		}
	}
	return nil
}

// parseURL checks an absolute http(s) URL whose scheme and host are
// literal text and match allowed_hosts; templates may appear in the path
// and the query only.
func (t *Tool) parseURL(raw string) error {
	if raw == "" {
		return errors.New("missing")
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New("contains a space or control character; percent-encode it")
	}
	if strings.Contains(raw, "#") {
		return errors.New("a fragment (#) is never sent; remove it")
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return fmt.Errorf("%q is not an absolute http or https URL", raw)
	}
	hostEnd := strings.IndexAny(rest, "/?")
	if hostEnd < 0 {
		hostEnd = len(rest)
	}
	origin := scheme + "://" + rest[:hostEnd]
	if strings.Contains(origin, "{{") {
		return errors.New("the scheme and host must be literal text, not a template")
	}
	u, err := url.Parse(origin)
	if err != nil {
		return fmt.Errorf("parsing %q: %v", origin, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.User != nil {
		return errors.New("credentials in the URL are refused; use a header with {{env.X}}")
	}
	if u.Hostname() == "" {
		return errors.New("host is missing")
	}
	if !t.hostAllowed(u.Hostname()) {
		return fmt.Errorf("host %q matches no allowed_hosts entry", u.Hostname())
	}
	pathPart, query, hasQuery := strings.Cut(rest[hostEnd:], "?")
	if t.urlPath, err = t.requestTemplate(origin + pathPart); err != nil {
		return err
	}
	if t.urlQuery, err = t.requestTemplate(query); err != nil {
		return err
	}
	t.hasQuery = hasQuery
	// The literal parts must make a valid URL whatever the values.
	probe, err := t.renderURL(func(piece) (string, error) { return "x", nil })
	if err != nil {
		return err
	}
	if _, err := url.Parse(probe); err != nil {
		return fmt.Errorf("not a valid URL: %v", err)
	}
	return nil
}

func (t *Tool) renderURL(value func(piece) (string, error)) (string, error) {
	s, err := t.urlPath.render(value, url.PathEscape)
	if err != nil || !t.hasQuery {
		return s, err
	}
	q, err := t.urlQuery.render(value, url.QueryEscape)
	return s + "?" + q, err
}
