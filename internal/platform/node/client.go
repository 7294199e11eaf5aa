package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"talon/internal/platform/install"
	"talon/internal/platform/template"
	"talon/internal/store/catalog"
	"talon/internal/usage"
)

// Client calls one node's API. It is safe for concurrent use; every call
// ends with its context (an export or import as long as it takes).
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// New returns a client of the node at baseURL (http(s)://host:port)
// presenting token (TALON_NODE_TOKEN). A malformed URL fails each call.
func New(baseURL, token string) *Client {
	return &Client{base: strings.TrimRight(strings.TrimSpace(baseURL), "/"), token: token, hc: &http.Client{}}
}

// URL is the node's base URL.
func (c *Client) URL() string { return c.base }

// maxReply bounds a JSON answer: the largest, a plan or usage by day,
// is far smaller.
const maxReply = 16 << 20

// Health reports the node's load.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.call(ctx, http.MethodGet, "/node/health", nil, &h)
	return h, err
}

// CreateTenant creates the tenant's directory and config on the node,
// with a new gateway token (Tenant.Token); Dir and ConfigPath are the
// node's paths.
func (c *Client) CreateTenant(ctx context.Context, id string, env map[string]string) (install.Tenant, error) {
	var r tenantReply
	if err := c.call(ctx, http.MethodPost, "/node/tenants", tenantBody{ID: id, Env: env}, &r); err != nil {
		return install.Tenant{}, err
	}
	return install.Tenant{ID: r.ID, Dir: r.Dir, ConfigPath: r.ConfigPath, Token: r.Token}, nil
}

// DeleteTenant deletes the tenant's directory and drops it in the node's
// gateway (runs aborted, handles closed).
func (c *Client) DeleteTenant(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, tenantPath(id, ""), nil, nil)
}

// Install installs the employee tp for tenant (install.Install on the node).
func (c *Client) Install(ctx context.Context, tenant string, tp *template.Template) (install.Result, error) {
	return c.apply(ctx, tenant, "install", tp, nil)
}

// Update brings tenant's employee to tp (install.Update on the node);
// shipped nil means unknown, as there.
func (c *Client) Update(ctx context.Context, tenant string, tp *template.Template, shipped []catalog.ShippedFile) (install.Result, error) {
	return c.apply(ctx, tenant, "update", tp, shipped)
}

func (c *Client) apply(ctx context.Context, tenant, verb string, tp *template.Template, shipped []catalog.ShippedFile) (install.Result, error) {
	body, err := templateRequest(tp, shipped)
	if err != nil {
		return install.Result{}, err
	}
	var r resultReply
	if err := c.call(ctx, http.MethodPost, tenantPath(tenant, verb), body, &r); err != nil {
		return install.Result{}, err
	}
	ch, err := fromWire(r.Changes)
	if err != nil {
		return install.Result{}, fmt.Errorf("node %s: %w", c.base, err)
	}
	return install.Result{Changes: ch, Files: r.Files}, nil
}

// Plan says what Update would change (install.Plan on the node). As
// there, a plan that fails returns the changes it found with the error.
func (c *Client) Plan(ctx context.Context, tenant string, tp *template.Template, shipped []catalog.ShippedFile) (install.Changes, error) {
	body, err := templateRequest(tp, shipped)
	if err != nil {
		return install.Changes{}, err
	}
	var w wireChanges
	err = c.call(ctx, http.MethodPost, tenantPath(tenant, "plan"), body, &w)
	var ne *Error
	if errors.As(err, &ne) && ne.changes != nil {
		w = *ne.changes
	} else if err != nil {
		return install.Changes{}, err
	}
	ch, werr := fromWire(w)
	if werr != nil {
		return install.Changes{}, fmt.Errorf("node %s: %w", c.base, werr)
	}
	return ch, err
}

func templateRequest(tp *template.Template, shipped []catalog.ShippedFile) (templateBody, error) {
	var buf bytes.Buffer
	if err := packTemplate(&buf, tp); err != nil {
		return templateBody{}, err
	}
	return templateBody{Slug: tp.Slug, Template: buf.Bytes(), Shipped: shipped}, nil
}

// Pending is the record an interrupted update left (install.Pending).
func (c *Client) Pending(ctx context.Context, tenant, slug string) ([]catalog.ShippedFile, bool, error) {
	var r pendingReply
	err := c.call(ctx, http.MethodGet, tenantPath(tenant, "employees/"+url.PathEscape(slug)+"/pending"), nil, &r)
	return r.Files, r.OK, err
}

// Settle removes the pending record once files is stored (install.Settle).
func (c *Client) Settle(ctx context.Context, tenant, slug string, files []catalog.ShippedFile) error {
	return c.call(ctx, http.MethodPost, tenantPath(tenant, "employees/"+url.PathEscape(slug)+"/settle"), settleBody{Files: files}, nil)
}

// Uninstall removes the employee and its workspace (install.Uninstall).
func (c *Client) Uninstall(ctx context.Context, tenant, slug string) error {
	return c.call(ctx, http.MethodDelete, tenantPath(tenant, "employees/"+url.PathEscape(slug)), nil, nil)
}

// Recover finishes or rolls back interrupted updates (install.Recover).
func (c *Client) Recover(ctx context.Context, tenant string) error {
	return c.call(ctx, http.MethodPost, tenantPath(tenant, "recover"), nil, nil)
}

// Token is the tenant's gateway token, from its config on the node.
func (c *Client) Token(ctx context.Context, tenant string) (string, error) {
	var r tokenReply
	err := c.call(ctx, http.MethodGet, tenantPath(tenant, "token"), nil, &r)
	return r.Token, err
}

// Usage reports the tenant's usage ledger (usage.Read on the node).
func (c *Client) Usage(ctx context.Context, tenant string, q usage.Query) (usage.Report, error) {
	v := url.Values{}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if q.By != "" {
		v.Set("by", q.By)
	}
	p := tenantPath(tenant, "usage")
	if len(v) > 0 {
		p += "?" + v.Encode()
	}
	var r usage.Report
	err := c.call(ctx, http.MethodGet, p, nil, &r)
	return r, err
}

// tenantPath is a route of tenant id; rest is already escaped.
func tenantPath(id, rest string) string {
	p := "/node/tenants/" + url.PathEscape(id)
	if rest != "" {
		p += "/" + rest
	}
	return p
}

// call sends in (JSON, unless nil) and decodes the answer into out
// (unless nil).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("node %s: encoding the request: %w", c.base, err)
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.send(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReply))
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxReply))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("node %s: %s %s: reading the answer: %w: %w", c.base, method, path, ErrUnreachable, err)
	}
	return nil
}

// send makes the request and returns a 2xx response; any other status
// is the node's *Error, and a failure to reach it wraps ErrUnreachable.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	u, err := url.Parse(c.base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("node %q: want an http(s)://host:port URL", c.base)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("node %s: %s %s: %w", c.base, method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("node %s: %s %s: %w", c.base, method, path, ctx.Err())
		}
		return nil, fmt.Errorf("node %s: %s %s: %w: %w", c.base, method, path, ErrUnreachable, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, c.decodeError(resp)
}

// decodeError turns a refusal into an *Error; an answer that is not the
// node API's (a proxy's page, another server) wraps ErrUnreachable.
func (c *Client) decodeError(resp *http.Response) error {
	var b errorBody
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err := json.Unmarshal(raw, &b); err != nil || b.Error.Code == "" {
		return fmt.Errorf("node %s: answered %s without the node API's error: %w", c.base, resp.Status, ErrUnreachable)
	}
	e := &Error{Node: c.base, Status: resp.StatusCode, Code: b.Error.Code, Message: b.Error.Message, plugin: b.Error.Plugin, changes: b.Error.Changes}
	for _, k := range codes {
		if k.code == b.Error.Code {
			e.err = k.err
		}
	}
	if b.Error.Code == "canceled" {
		e.err = context.Canceled
	}
	return e
}
