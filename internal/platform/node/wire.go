package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"talon/internal/config"
	"talon/internal/platform/install"
	"talon/internal/store/catalog"
)

// Errors of the node API that have no sentinel in package install. A
// client's error wraps the sentinel its wire code names (install's or
// these), so the platform maps a remote node's errors as a local one's.
var (
	// ErrInvalid is a request the node refuses as malformed: a bad id,
	// slug or query, a template that does not load, a hostile archive.
	ErrInvalid = errors.New("invalid request")
	// ErrMoving is a tenant that is drained (moving to another node): it
	// takes no work and no change until it is resumed or deleted.
	ErrMoving = errors.New("the tenant is moving")
	// ErrNotDrained is an export of a tenant that was not drained first:
	// a live tenant's files are not a consistent copy.
	ErrNotDrained = errors.New("the tenant is not drained")
	// ErrUnauthorized is a wrong or missing node token.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrUnreachable is a node that did not answer: the connection failed
	// or the answer was not the node API's.
	ErrUnreachable = errors.New("the node did not answer")
)

// codes pair each wire code with its sentinel and status. A code the
// client does not know is an *Error with no sentinel.
var codes = []struct {
	code   string
	err    error
	status int
}{
	{"no_tenant", install.ErrNoTenant, http.StatusNotFound},
	{"exists", install.ErrExists, http.StatusConflict},
	{"installed", install.ErrInstalled, http.StatusConflict},
	{"not_installed", install.ErrNotInstalled, http.StatusNotFound},
	{"invalid", ErrInvalid, http.StatusBadRequest},
	{"moving", ErrMoving, http.StatusConflict},
	{"not_drained", ErrNotDrained, http.StatusConflict},
	{"unauthorized", ErrUnauthorized, http.StatusUnauthorized},
}

// Health is a node's load, for placement and the health poller.
type Health struct {
	// Tenants are the tenant directories the node has.
	Tenants int `json:"tenants"`
	// Warm are the tenants its gateway holds open.
	Warm int `json:"warm"`
	// OpenFiles and MaxOpenFiles are the process's descriptors and their
	// soft limit (RLIMIT_NOFILE).
	OpenFiles    int    `json:"openFiles"`
	MaxOpenFiles int    `json:"maxOpenFiles"`
	Version      string `json:"version"`
}

// errorBody is every failure's JSON.
type errorBody struct {
	Error wireError `json:"error"`
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Plugin is an *install.PluginError's fields (code plugin_off).
	Plugin *install.PluginError `json:"plugin,omitempty"`
	// Changes are what a failed plan found (install.Plan returns both).
	Changes *wireChanges `json:"changes,omitempty"`
}

// Error is a node's refusal, as its client returns it: errors.Is finds
// the sentinel of its code, errors.As an *install.PluginError.
type Error struct {
	// Node is the node's base URL.
	Node    string
	Status  int
	Code    string
	Message string
	plugin  *install.PluginError
	changes *wireChanges
	err     error
}

func (e *Error) Error() string { return fmt.Sprintf("node %s: %s", e.Node, e.Message) }

func (e *Error) Unwrap() []error {
	var out []error
	if e.err != nil {
		out = append(out, e.err)
	}
	if e.plugin != nil {
		out = append(out, e.plugin)
	}
	return out
}

// tenantBody creates a tenant.
type tenantBody struct {
	ID  string            `json:"id"`
	Env map[string]string `json:"env,omitempty"`
}

// tenantReply is an install.Tenant, its paths the node's own.
type tenantReply struct {
	ID         string `json:"id"`
	Dir        string `json:"dir"`
	ConfigPath string `json:"configPath"`
	Token      string `json:"token,omitempty"`
}

// templateBody carries a template (packTemplate's archive) and, for an
// update or plan, the record of what it shipped before; nil and empty
// differ (nil: unknown), as install.Update's argument does.
type templateBody struct {
	Slug     string                `json:"slug"`
	Template []byte                `json:"template"`
	Shipped  []catalog.ShippedFile `json:"shipped"`
}

// resultReply is an install.Result.
type resultReply struct {
	Changes wireChanges           `json:"changes"`
	Files   []catalog.ShippedFile `json:"files"`
}

type pendingReply struct {
	Files []catalog.ShippedFile `json:"files"`
	OK    bool                  `json:"ok"`
}

type settleBody struct {
	Files []catalog.ShippedFile `json:"files"`
}

type tokenReply struct {
	Token string `json:"token"`
}

// wireChanges is install.Changes with its config values as JSON, which
// config.Value writes but does not read back.
type wireChanges struct {
	Tenant    string             `json:"tenant"`
	Slug      string             `json:"slug"`
	Added     []string           `json:"added,omitempty"`
	Changed   []string           `json:"changed,omitempty"`
	Removed   []string           `json:"removed,omitempty"`
	Conflicts []install.Conflict `json:"conflicts,omitempty"`
	Kept      []string           `json:"kept,omitempty"`
	Config    []wireConfigChange `json:"config,omitempty"`
}

type wireConfigChange struct {
	Path string          `json:"path"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

func toWire(c install.Changes) (wireChanges, error) {
	w := wireChanges{Tenant: c.Tenant, Slug: c.Slug, Added: c.Added, Changed: c.Changed, Removed: c.Removed,
		Conflicts: c.Conflicts, Kept: c.Kept}
	for _, cc := range c.Config {
		wc := wireConfigChange{Path: cc.Path}
		var err error
		if wc.Old, err = valueJSON(cc.Old); err == nil {
			wc.New, err = valueJSON(cc.New)
		}
		if err != nil {
			return wireChanges{}, fmt.Errorf("encoding the change of %s: %w", cc.Path, err)
		}
		w.Config = append(w.Config, wc)
	}
	return w, nil
}

func valueJSON(v *config.Value) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	return v.MarshalJSON()
}

func fromWire(w wireChanges) (install.Changes, error) {
	c := install.Changes{Tenant: w.Tenant, Slug: w.Slug, Added: w.Added, Changed: w.Changed, Removed: w.Removed,
		Conflicts: w.Conflicts, Kept: w.Kept}
	for _, wc := range w.Config {
		cc := install.ConfigChange{Path: wc.Path}
		var err error
		if cc.Old, err = parseValue(wc.Old); err == nil {
			cc.New, err = parseValue(wc.New)
		}
		if err != nil {
			return install.Changes{}, fmt.Errorf("decoding the change of %s: %w", wc.Path, err)
		}
		c.Config = append(c.Config, cc)
	}
	return c, nil
}

func parseValue(raw json.RawMessage) (*config.Value, error) {
	if len(raw) == 0 { // absent on that side; a JSON null is a value
		return nil, nil
	}
	return config.ParseJSON5(raw)
}
