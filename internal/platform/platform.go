// Package platform is the workforce platform: the library of employee
// templates, tenants, installing employees into tenants and keeping every
// installation current (sync), and chat with a tenant's employee. It ties
// together the templates on disk (platform/template), the files of each
// tenant (platform/install), the catalog database (store/catalog: SQLite
// or PostgreSQL) and the gateway, which it reaches only over the
// WebSocket protocol (platform/relay).
//
// A tenant's files are reached through its Node: in `talon serve` the
// one Local node over the state dir; with `talon serve --gateways` the
// node API of the gateway the catalog places it on (placement.go), whose
// health a poller follows (health.go), and between which a tenant moves
// (move.go).
//
// A Platform is safe for concurrent use. Operations on one tenant's files
// are serialised by the installer; Sync runs tenants concurrently, with a
// bound.
package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"talon/internal/platform/install"
	"talon/internal/platform/relay"
	"talon/internal/platform/template"
	"talon/internal/store/catalog"
)

// Options configure a Platform.
type Options struct {
	// StateDir is the gateway's state dir: tenants are its tenants/<id>/.
	// Unused with Nodes or Local.
	StateDir string
	// Local is the one node of a single-gateway platform; nil means one
	// over StateDir, told of deleted tenants by CloseTenant.
	Local *Local
	// Nodes, when set, are the gateways tenants are placed on, by node
	// id (talon serve --gateways): New registers them in the catalog,
	// and Local, StateDir and CloseTenant are unused.
	Nodes map[string]Node
	// Moved, when set, is told of each tenant moved to another node,
	// after its placement switched: connections to the old node close.
	Moved func(tenant string)
	// Now is the clock of health checks and the token cache; nil is
	// time.Now.
	Now func() time.Time
	// Templates is the directory of templates/<slug>/.
	Templates string
	// Store is the catalog database.
	Store catalog.Store
	// Relay carries chat to the gateway; nil means chat is unavailable.
	Relay *relay.Relay
	// SyncConcurrency bounds the tenants synced at once; 0 means 8.
	SyncConcurrency int
	// CloseTenant, when set, is told of each tenant deleted, after its
	// directory is gone: in talon serve, the gateway's DropTenant, which
	// stops its runs and jobs and closes every handle it had.
	CloseTenant func(id string)
	Log         *slog.Logger
}

// Platform is the workforce platform over one gateway state dir.
type Platform struct {
	o Options

	reloading sync.Mutex // one reload at a time
	mu        sync.RWMutex
	templates map[string]*template.Template
	hashes    map[string]string
	loadErrs  []error
	stamp     dirStamp // the templates directory as last loaded

	nodes  map[string]Node
	multi  bool // nodes come from Options.Nodes: tenants are placed
	health board
	tokens tokenCache
	busy   busy
}

// Errors a caller maps to its own (HTTP statuses, exit codes).
var (
	ErrNoTemplate   = errors.New("no such template")
	ErrInstalled    = errors.New("already installed")
	ErrNotInstalled = errors.New("not installed")
	ErrNoChat       = errors.New("chat is not available: the platform has no gateway connection")
)

// LocalID is the node id of a single-gateway platform's Local node.
const LocalID = "local"

// New returns a Platform and loads the templates (Reload).
func New(ctx context.Context, o Options) (*Platform, error) {
	if o.Store == nil {
		return nil, errors.New("platform: no catalog store")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.SyncConcurrency <= 0 {
		o.SyncConcurrency = 8
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Platform{o: o, nodes: o.Nodes, multi: o.Nodes != nil}
	if !p.multi {
		l := o.Local
		if l == nil {
			l = &Local{StateDir: o.StateDir, Dropped: o.CloseTenant}
		}
		p.nodes = map[string]Node{LocalID: l}
	}
	if err := p.register(ctx); err != nil {
		return nil, err
	}
	if err := p.Reload(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Hash is a template's content hash: its fields and every file it
// installs. An installation whose hash differs is due for sync.
func Hash(t *template.Template) string {
	h := sha256.New()
	meta, _ := json.Marshal(struct {
		Slug, Name, Description, Emoji, Category, Model string
		Skills, AlsoAllow, Plugins                      []string
		Sandbox, Exec                                   any
	}{t.Slug, t.Name, t.Description, t.Emoji, t.Category, t.Model, t.Skills, t.AlsoAllow, t.Plugins, t.Sandbox, t.Exec})
	h.Write(meta)
	for _, f := range append(t.Files(), t.Seed()...) {
		fmt.Fprintf(h, "\x00%s\x00%o\x00%d\x00", f.Path, f.Mode, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CreateTenant creates a tenant's directory and config (with a generated
// gateway token, returned once) and records it in the catalog.
// With several nodes it goes on the least loaded healthy one (Place).
func (p *Platform) CreateTenant(ctx context.Context, id, name string, env map[string]string) (install.Tenant, error) {
	nodeID, n, err := p.placeNew(ctx)
	if err != nil {
		return install.Tenant{}, err
	}
	t, err := n.CreateTenant(ctx, id, env)
	if err != nil {
		return install.Tenant{}, err
	}
	err = p.o.Store.PutTenant(ctx, catalog.Tenant{ID: id, Name: name})
	if err == nil && p.multi {
		if err = p.o.Store.Place(ctx, id, nodeID); err != nil {
			_ = p.o.Store.DeleteTenant(ctx, id)
		}
	}
	switch {
	case err == nil:
		return t, nil
	case !p.multi:
		return install.Tenant{}, fmt.Errorf("recording tenant %q: %w (its directory %s exists; delete the tenant to retry)", id, err, t.Dir)
	}
	// An unplaced directory on a node is out of the API's reach: it goes.
	if derr := n.DeleteTenant(context.WithoutCancel(ctx), id); derr != nil {
		return install.Tenant{}, fmt.Errorf("recording tenant %q: %w (and deleting its directory on node %s failed: %v)", id, err, nodeID, derr)
	}
	return install.Tenant{}, fmt.Errorf("recording tenant %q: %w (its directory on node %s is deleted again)", id, err, nodeID)
}

// Tenants lists the tenants of the catalog (TenantStatuses adds where
// each is and whether it is available).
func (p *Platform) Tenants(ctx context.Context) ([]catalog.Tenant, error) {
	return p.o.Store.Tenants(ctx)
}

// DeleteTenant removes a tenant from the catalog, then its directory and
// what the gateway still holds of it (Node.DeleteTenant). A tenant whose
// node is down is refused: its files could not go.
func (p *Platform) DeleteTenant(ctx context.Context, id string) error {
	done, err := p.busy.enter(id)
	if err != nil {
		return err
	}
	defer done()
	_, n, err := p.nodeOf(ctx, id)
	if err != nil {
		return err
	}
	if err := p.o.Store.DeleteTenant(ctx, id); err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return err
	}
	if err := n.DeleteTenant(ctx, id); err != nil {
		return err
	}
	p.tokens.forget(id)
	return nil
}

// Install installs the employee slug for tenant: its files, its agent
// entry and the plugins it needs, then the catalog record.
func (p *Platform) Install(ctx context.Context, tenant, slug string) (catalog.Installation, error) {
	t, hash, err := p.template(ctx, slug)
	if err != nil {
		return catalog.Installation{}, err
	}
	if _, err := p.installation(ctx, tenant, slug); err == nil {
		return catalog.Installation{}, fmt.Errorf("%s for tenant %q: %w (sync updates it)", slug, tenant, ErrInstalled)
	}
	done, err := p.busy.enter(tenant)
	if err != nil {
		return catalog.Installation{}, err
	}
	defer done()
	_, n, err := p.nodeOf(ctx, tenant)
	if err != nil {
		return catalog.Installation{}, err
	}
	res, err := n.Install(ctx, tenant, t)
	if err != nil {
		return catalog.Installation{}, err
	}
	in := catalog.Installation{TenantID: tenant, Slug: slug, TemplateHash: hash, Status: catalog.StatusOK, Files: res.Files}
	if err := p.o.Store.Install(ctx, in); err != nil {
		return catalog.Installation{}, fmt.Errorf("recording the installation of %s for %q: %w", slug, tenant, err)
	}
	if err := n.Settle(ctx, tenant, slug, res.Files); err != nil {
		return catalog.Installation{}, err
	}
	return p.installation(ctx, tenant, slug)
}

func (p *Platform) installation(ctx context.Context, tenant, slug string) (catalog.Installation, error) {
	list, err := p.o.Store.Installations(ctx, catalog.Filter{TenantID: tenant, Slug: slug})
	if err != nil {
		return catalog.Installation{}, err
	}
	if len(list) == 0 {
		return catalog.Installation{}, fmt.Errorf("%s for tenant %q: %w", slug, tenant, ErrNotInstalled)
	}
	return list[0], nil
}

// Installations lists installations matching f.
func (p *Platform) Installations(ctx context.Context, f catalog.Filter) ([]catalog.Installation, error) {
	return p.o.Store.Installations(ctx, f)
}

// UninstalledMessage says what an uninstall deleted, for every surface
// that reports one (API, Studio): plainly, since it cannot be undone.
func UninstalledMessage(tenant, slug string) string {
	return fmt.Sprintf("%s is uninstalled from tenant %s: its workspace agents/%s/ is deleted, with the employee's memory (MEMORY.md, memory/) and every file it wrote",
		slug, tenant, slug)
}

// Uninstall removes the employee's agent entry and workspace — its memory
// and every file it wrote — and the catalog record.
func (p *Platform) Uninstall(ctx context.Context, tenant, slug string) error {
	if _, err := p.installation(ctx, tenant, slug); err != nil {
		return err
	}
	done, err := p.busy.enter(tenant)
	if err != nil {
		return err
	}
	defer done()
	_, n, err := p.nodeOf(ctx, tenant)
	if err != nil {
		return err
	}
	if err := n.Uninstall(ctx, tenant, slug); err != nil {
		return err
	}
	return p.o.Store.Uninstall(ctx, tenant, slug)
}

// SyncResult is what a sync did, or would do, for one installation.
type SyncResult struct {
	Tenant  string          `json:"tenant"`
	Slug    string          `json:"slug"`
	Changes install.Changes `json:"-"`
	// Summary lists the changes, one line each.
	Summary []string `json:"changes"`
	// Conflicts are the files the employee edited that the template
	// changes too: the employee's copy is kept beside the new version.
	Conflicts []install.Conflict `json:"conflicts,omitempty"`
	// Kept are edited files the template no longer ships: they stay.
	Kept  []string `json:"kept,omitempty"`
	Error string   `json:"error,omitempty"`
}

// Sync brings every installation of slug up to its template as it is on
// disk now (dryRun: only says what would change), tenants concurrently
// within the bound. Each installation's outcome is recorded in the catalog
// (not on a dry run); one tenant's failure does not stop the others.
func (p *Platform) Sync(ctx context.Context, slug string, dryRun bool) ([]SyncResult, error) {
	t, hash, err := p.template(ctx, slug)
	if err != nil {
		return nil, err
	}
	list, err := p.o.Store.Installations(ctx, catalog.Filter{Slug: slug})
	if err != nil {
		return nil, err
	}
	out := make([]SyncResult, len(list))
	sem := make(chan struct{}, p.o.SyncConcurrency)
	var wg sync.WaitGroup
	for i, in := range list {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = p.syncOne(ctx, t, hash, in, dryRun)
		}()
	}
	wg.Wait()
	return out, nil
}

// shipped is the record to update an installation from: a pending record
// an interrupted sync left on disk (newer than the catalog's), else the
// catalog's. An installation from a Talon that kept no record gets one it
// can prove: when its recorded template hash is t's, t's files are what
// was shipped; otherwise nil, and only files holding exactly t's content
// count as the template's — nothing else is ever removed or overwritten.
func (p *Platform) shipped(ctx context.Context, n Node, in catalog.Installation, t *template.Template, hash string) ([]catalog.ShippedFile, error) {
	files, ok, err := n.Pending(ctx, in.TenantID, in.Slug)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return files, nil
	case in.Files != nil:
		return in.Files, nil
	case in.TemplateHash == hash:
		return install.Shipped(t), nil
	}
	return nil, nil
}

func (p *Platform) syncOne(ctx context.Context, t *template.Template, hash string, in catalog.Installation, dryRun bool) SyncResult {
	r := SyncResult{Tenant: in.TenantID, Slug: in.Slug}
	// A tenant that is moving, or whose node is down, is left as it is
	// (its record too): the next sync brings it up to date.
	done, err := p.busy.enter(in.TenantID)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer done()
	_, n, err := p.nodeOf(ctx, in.TenantID)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var shipped []catalog.ShippedFile
	err = n.Recover(ctx, in.TenantID)
	if err == nil {
		shipped, err = p.shipped(ctx, n, in, t, hash)
	}
	if err == nil {
		r.Changes, err = n.Plan(ctx, in.TenantID, t, shipped)
	}
	if err == nil && !dryRun && !r.Changes.Empty() {
		var res install.Result
		if res, err = n.Update(ctx, in.TenantID, t, shipped); err == nil {
			// What was done, which a change since the plan may alter.
			res.Changes.Config = r.Changes.Config
			r.Changes = res.Changes
		}
	}
	r.Summary, r.Conflicts, r.Kept = summarize(r.Changes), r.Changes.Conflicts, r.Changes.Kept
	if dryRun {
		if err != nil {
			r.Error = err.Error()
		}
		return r
	}
	rec := catalog.Installation{TenantID: in.TenantID, Slug: in.Slug, TemplateHash: hash, Status: catalog.StatusOK, Files: install.Shipped(t)}
	if err != nil {
		r.Error = err.Error()
		rec.TemplateHash, rec.Status, rec.Message, rec.Files = in.TemplateHash, catalog.StatusError, err.Error(), nil
		p.o.Log.Error("sync", "tenant", in.TenantID, "template", in.Slug, "err", err)
	}
	if uerr := p.o.Store.UpdateInstallation(ctx, rec); uerr != nil && r.Error == "" {
		r.Error = fmt.Sprintf("recording the sync: %v", uerr)
	} else if uerr == nil && rec.Files != nil {
		if serr := n.Settle(ctx, in.TenantID, in.Slug, rec.Files); serr != nil && r.Error == "" {
			r.Error = serr.Error()
		}
	}
	return r
}

// summarize lists the changes one a line: "+ path" added, "~ path"
// replaced, "- path" removed, "! kept your copy of …" for an edited file
// the template changed too, "= kept your edited …" for an edited file the
// template dropped, "config …" for a config value.
func summarize(c install.Changes) []string {
	var out []string
	for _, f := range c.Added {
		out = append(out, "+ "+f)
	}
	for _, f := range c.Changed {
		out = append(out, "~ "+f)
	}
	for _, f := range c.Removed {
		out = append(out, "- "+f)
	}
	for _, k := range c.Conflicts {
		out = append(out, fmt.Sprintf("! kept your copy of %s as %s (the template changed it too)", k.Path, k.Copy))
	}
	for _, f := range c.Kept {
		out = append(out, fmt.Sprintf("= kept your edited %s (the template no longer ships it)", f))
	}
	for _, cc := range c.Config {
		out = append(out, "config "+cc.String())
	}
	return out
}

// SyncAll syncs every template that has installations, as the platform
// does on start.
func (p *Platform) SyncAll(ctx context.Context, dryRun bool) ([]SyncResult, error) {
	list, err := p.o.Store.Installations(ctx, catalog.Filter{})
	if err != nil {
		return nil, err
	}
	slugs := map[string]bool{}
	for _, in := range list {
		slugs[in.Slug] = true
	}
	ordered := make([]string, 0, len(slugs))
	for s := range slugs {
		ordered = append(ordered, s)
	}
	sort.Strings(ordered)
	var out []SyncResult
	for _, s := range ordered {
		res, err := p.Sync(ctx, s, dryRun)
		if errors.Is(err, ErrNoTemplate) {
			out = append(out, SyncResult{Slug: s, Error: fmt.Sprintf("installed but its template is gone or does not load (%v)", err)})
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// Chat sends a user's message to the tenant's employee slug (its session
// for that user) and reports the reply's events to on.
func (p *Platform) Chat(ctx context.Context, tenant, slug, user, text string, on func(relay.Event)) (relay.Event, error) {
	if p.o.Relay == nil {
		return relay.Event{}, ErrNoChat
	}
	if _, err := p.installation(ctx, tenant, slug); err != nil {
		return relay.Event{}, err
	}
	if err := p.busy.check(tenant); err != nil {
		return relay.Event{}, err
	}
	if _, _, err := p.nodeOf(ctx, tenant); err != nil {
		return relay.Event{}, err
	}
	user = strings.TrimSpace(user)
	if user == "" || len(user) > 128 || strings.ContainsAny(user, ": \t\n") {
		return relay.Event{}, fmt.Errorf("invalid user %q: 1-128 characters, no spaces or colons", user)
	}
	key := "agent:" + slug + ":platform:" + strings.ToLower(user)
	return p.o.Relay.Chat(ctx, relay.Message{Tenant: tenant, AgentID: slug, SessionKey: key, Text: text}, on)
}
