package gateway

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"talon/internal/agent"
	"talon/internal/approval"
	"talon/internal/config"
	"talon/internal/mcp"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/sandbox"
	"talon/internal/store"
	"talon/internal/tenantid"
	"talon/protocol"
)

// errNoTenant is what every tenant lookup failure looks like to a client:
// an unknown tenant is indistinguishable from a bad token.
var errNoTenant = errors.New("no such tenant")

// tenant is one tenant's state: its directory, config, store and runner.
type tenant struct {
	id         string // "" for the default tenant
	dir        string
	configPath string
	envToken   string // TALON_GATEWAY_TOKEN, default tenant only

	mu    sync.Mutex
	stamp fileStamp
	rt    *runtime // current config and everything built from it
	store *store.DB
	// sandboxes outlive config versions: runs of one scope keep sharing a
	// sandbox across reloads (a changed spec gets a new one).
	sandboxes *sandbox.Manager
	// approvals outlive config versions too: a pending approval must still
	// be resolvable after a config.patch.
	approvals *approval.Service
	// plugins outlive config versions: MCP servers keep running and the
	// memory index stays open; each config gets its own plugin Set.
	plugins *plugin.Host
	mcp     *mcp.Manager
	loadErr error

	// writeMu serialises this gateway's writes of the config file
	// (config.patch/set/apply, agents.*): each re-reads the file and
	// checks its hash under it, so of two writers with one baseHash
	// exactly one wins.
	writeMu sync.Mutex
}

// runtime is built from one version of a tenant's config.
type runtime struct {
	file   *config.File
	runner *agent.Runner
}

type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi.ModTime(), fi.Size(), true}
}

// current returns the tenant's runtime, reloading the config when the file
// changed. A config that no longer loads keeps the last good one in force
// and is logged; a tenant whose first load fails serves errors.
func (t *tenant) current(s *Server) (*runtime, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := stampOf(t.configPath)
	if t.rt != nil && st == t.stamp {
		return t.rt, nil
	}
	if t.store == nil {
		db, err := s.openStore(t.dir)
		if err != nil {
			return nil, err
		}
		t.store = db
	}
	if t.sandboxes == nil {
		t.sandboxes = sandbox.NewManager()
	}
	if t.approvals == nil {
		svc, err := approval.NewService(t.dir, agent.TranscriptSink(t.store))
		if err != nil {
			return nil, err
		}
		svc.Log = s.log
		svc.Manager.Approvers = func() int { return s.hubs.count(t, protocol.ScopeApprovals) }
		svc.Manager.Emit = func(e approval.Event) { s.broadcast(t, e.Name, e.Payload) }
		t.approvals = svc
	}
	if t.plugins == nil {
		t.mcp = mcp.NewManager(s.log.With("tenant", t.id))
		t.plugins = plugin.NewHost(plugin.Options{
			StateDir: t.dir, ProcessEnv: t.id == "", Log: s.log.With("tenant", t.id), MCP: t.mcp,
		})
	}
	f, err := config.Load(t.configPath)
	if err != nil {
		s.log.Error("loading tenant config", "tenant", t.id, "path", t.configPath, "err", err)
		if t.rt != nil {
			t.stamp = st // do not retry on every request; a new write changes the stamp
			return t.rt, nil
		}
		return nil, fmt.Errorf("loading config of tenant %q: %w", t.id, err)
	}
	if t.id != "" && !f.Exists {
		return nil, errNoTenant
	}
	for _, w := range f.Warnings {
		s.log.Debug("config", "tenant", t.id, "warning", w.String())
	}
	t.rt = &runtime{file: f, runner: s.newRunner(t, f.Config)}
	t.stamp = st
	return t.rt, nil
}

// approvalService is the tenant's exec approvals, opened with its store.
func (t *tenant) approvalService(s *Server) (*approval.Service, error) {
	if _, err := t.current(s); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.approvals == nil {
		return nil, approval.ErrClosed
	}
	return t.approvals, nil
}

// token is the secret a bearer must present, or "" when none is set.
func (t *tenant) token(cfg *config.Config) []string {
	var out []string
	for _, s := range []string{cfg.Gateway.Auth.Token, cfg.Gateway.Auth.Password, t.envToken} {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// authorize checks the bearer against the tenant's secrets in constant
// time. With no secret configured only the default tenant of a loopback
// server is open; tenants always need a token.
func (t *tenant) authorize(cfg *config.Config, bearer string, loopback bool) bool {
	secrets := t.token(cfg)
	if len(secrets) == 0 {
		return t.id == "" && loopback
	}
	ok := false
	for _, s := range secrets {
		if subtle.ConstantTimeCompare([]byte(s), []byte(bearer)) == 1 {
			ok = true
		}
	}
	return ok
}

// tenants holds the tenants loaded so far.
type tenants struct {
	mu sync.Mutex
	m  map[string]*tenant
}

// lookup finds a tenant by its X-Tenant-ID ("" for the default one). A
// tenant exists when its directory does.
func (s *Server) lookup(id string) (*tenant, error) {
	if id == "" {
		return s.defaultTenant, nil
	}
	if !tenantid.Valid(id) {
		return nil, errNoTenant
	}
	s.tenants.mu.Lock()
	defer s.tenants.mu.Unlock()
	if t, ok := s.tenants.m[id]; ok {
		return t, nil
	}
	dir := filepath.Join(s.opts.StateDir, "tenants", id)
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
		return nil, errNoTenant
	}
	if err != nil {
		return nil, fmt.Errorf("opening tenant %q: %w", id, err)
	}
	path, ok := config.Find(dir)
	if !ok {
		path = filepath.Join(dir, config.Filename)
	}
	t := &tenant{id: id, dir: dir, configPath: path}
	s.tenants.m[id] = t
	return t, nil
}

// closeTenants closes every tenant's sandboxes and store.
func (s *Server) closeTenants() {
	all := []*tenant{s.defaultTenant}
	s.tenants.mu.Lock()
	for _, t := range s.tenants.m {
		all = append(all, t)
	}
	s.tenants.mu.Unlock()
	for _, t := range all {
		t.mu.Lock()
		// Approvals first: their background commands run in the sandboxes
		// and write their outcome to the store.
		if t.approvals != nil {
			t.approvals.Close()
			t.approvals = nil
		}
		if t.plugins != nil {
			if err := t.plugins.Close(); err != nil {
				s.log.Error("closing plugins", "tenant", t.id, "err", err)
			}
			t.plugins = nil
			t.mcp.Close() // after the plugins: their runs may still call a server
			t.mcp = nil
		}
		if t.sandboxes != nil {
			if err := t.sandboxes.Close(); err != nil {
				s.log.Error("closing sandboxes", "tenant", t.id, "err", err)
			}
			t.sandboxes = nil
		}
		if t.store != nil {
			if err := t.store.Close(); err != nil {
				s.log.Error("closing store", "tenant", t.id, "err", err)
			}
			t.store = nil
		}
		t.mu.Unlock()
	}
}

// newRunner builds the agent runner for one config version.
func (s *Server) newRunner(t *tenant, cfg *config.Config) *agent.Runner {
	return &agent.Runner{
		Config:    cfg,
		Policy:    policy.New(cfg),
		Tools:     s.tools,
		Store:     t.store,
		Resolve:   s.resolver(cfg),
		StateDir:  t.dir,
		Sandboxes: t.sandboxes,
		Approvals: t.approvals,
		Plugins:   t.plugins.Configure(cfg),
		Log:       s.log.With("tenant", t.id),
	}
}

// StoreFile is the name of a tenant's SQLite database in its directory.
const StoreFile = "talon.db"

func (s *Server) openStore(dir string) (*store.DB, error) {
	db, err := store.OpenWith(filepath.Join(dir, StoreFile), store.Options{SyncWindow: s.opts.SyncWindow, Log: s.log})
	if err != nil {
		return nil, fmt.Errorf("opening the session store: %w", err)
	}
	return db, nil
}

// workspaceInside reports whether an agent's workspace, and the directory
// of its sandbox workspaces, stay inside the tenant directory; a tenant
// config must not reach another tenant's files.
func workspaceInside(t *tenant, cfg *config.Config, agentID string) error {
	if t.id == "" {
		return nil
	}
	for _, d := range []struct{ what, dir string }{
		{"workspace", agent.WorkspaceDir(cfg, t.dir, agentID)},
		{"sandbox workspace root", sandbox.WorkspacesRoot(cfg, t.dir, agentID)},
	} {
		rel, err := filepath.Rel(t.dir, d.dir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return fmt.Errorf("%s %s of agent %q is outside the tenant directory", d.what, d.dir, agentID)
		}
	}
	return nil
}
