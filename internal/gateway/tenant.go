package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"talon/internal/agent"
	"talon/internal/approval"
	"talon/internal/ceiling"
	"talon/internal/channel/hub"
	"talon/internal/config"
	"talon/internal/mcp"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/sandbox"
	"talon/internal/store"
	"talon/internal/tenantid"
	"talon/internal/tools"
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
	// ident is the directory's device and inode when it was opened: a
	// directory deleted and made again under the same id is another
	// tenant, which starts empty.
	ident fileIdent
	// paths hides host paths from the tenant (see hide); nil for the
	// default tenant, whose operator owns the host.
	paths *hostPaths
	// life ends when the tenant is dropped (deleted): the HTTP runs bound
	// to it end with it.
	life context.Context
	kill context.CancelCauseFunc

	mu     sync.Mutex
	closed bool // dropped: nothing opens again
	// pins counts the uses of its handles in progress (enter); gen counts
	// every use begun, and used is when the last began or ended: a
	// tenant is closed only when none is in progress (warm.go).
	pins int
	gen  uint64
	used time.Time
	// cooling is set while its handles close (cool): nothing opens them
	// until it is closed.
	cooling chan struct{}
	// wake opens it again before its next cron job or heartbeat, while
	// it is closed; booted says its startup checklist ran (once a
	// process, not once an opening).
	wake   *time.Timer
	booted bool
	stamp  fileStamp
	rt     *runtime // current config and everything built from it
	store  *store.DB
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
	// cooldowns remembers its failing model providers and keys for the
	// life of the process, across config versions; each tenant has its
	// own, so that one tenant's failures never make another's skip a
	// provider.
	cooldowns *provider.Cooldowns
	// channels runs the tenant's channel accounts; it outlives config
	// versions (applyChannels gives it each new one). Nil until a config
	// has a channel.
	channels *hub.Hub
	// cronOn says the cron scheduler has the tenant (applyCron);
	// cronPruned is when its cron leftovers were last pruned (pruneCron).
	cronOn     bool
	cronPruned time.Time
	// wakes paces its wakes and keeps its last heartbeat event
	// (heartbeat.go); nil until the first.
	wakes *wakes
	// sysEvents are the system events queued for its sessions' next
	// turns (sysevents.go); nil until the first.
	sysEvents *sysEvents
	// subagents are the children its sessions spawned (subagents.go);
	// nil until the first.
	subagents *subagentRegistry
	loadErr   error

	// writeMu serialises this gateway's writes of the config file
	// (config.patch/set/apply, agents.*): each re-reads the file and
	// checks its hash under it, so of two writers with one baseHash
	// exactly one wins.
	writeMu sync.Mutex
	// budget remembers the month whose budget alert was sent (budget.go).
	budget budgetGate
}

// runtime is built from one version of a tenant's config.
type runtime struct {
	// file is the config in force: for a tenant, the file as written held
	// to the operator's ceiling (its Raw and Hash are the file's own).
	file   *config.File
	runner *agent.Runner
	// providers is how the runner's model providers are resolved: for a
	// tenant, keys from its own env and connections through netguard.
	providers provider.Options

	// On the default tenant's runtime: the ceiling of every tenant, from
	// the root config it was built from.
	ceil *ceiling.Ceiling
	// On a tenant's: the default tenant's runtime whose ceiling it was
	// held to (a new root config rebuilds the tenant's runtime), and what
	// the ceiling changed.
	root  *runtime
	clamp *ceiling.Result

	// hooks is the config's HTTP hooks handler, made on first use.
	hooks hookRuntime
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
//
// A tenant's config is held to the ceiling of the root config in force:
// when the root config changes, the tenant's runtime is built again.
func (t *tenant) current(s *Server) (*runtime, error) {
	rt, fresh, err := t.load(s)
	if fresh {
		s.applyChannels(t, rt)
		s.applyCron(t, rt)
	}
	return rt, err
}

// load is current without the channels: fresh says rt is a new runtime.
func (t *tenant) load(s *Server) (_ *runtime, fresh bool, _ error) {
	var root *runtime
	if t.id != "" {
		var err error
		if root, err = s.defaultTenant.current(s); err != nil {
			return nil, false, fmt.Errorf("loading the root config, whose ceiling tenant %q is held to: %w", t.id, err)
		}
	}
	if err := s.lockWarm(t); err != nil {
		return nil, false, err
	}
	defer t.mu.Unlock()
	if t.closed {
		s.warm.leave(t)
		return nil, false, errNoTenant
	}
	st := stampOf(t.configPath)
	if t.rt != nil && st == t.stamp && t.rt.root == root {
		return t.rt, false, nil
	}
	rt, fresh, err := s.build(t, root, st)
	if err != nil && t.rt == nil {
		// A tenant is open whole or not at all: the next use retries.
		s.closeHandles(t)
		if t.id != "" {
			s.warm.leave(t)
		}
		if !errors.Is(err, errNoTenant) && s.outOfFiles(err) {
			s.log.Warn("tenant refused: out of file descriptors", "tenant", t.id, "err", err)
			return nil, false, fmt.Errorf("%w: %w", errUnavailable, err)
		}
	}
	return rt, fresh, err
}

// build opens what t lacks of its handles and builds its runtime from the
// config file, stamped st. t.mu is held.
func (s *Server) build(t *tenant, root *runtime, st fileStamp) (_ *runtime, fresh bool, _ error) {
	if t.store == nil {
		db, err := s.openStore(t.dir)
		if err != nil {
			return nil, false, err
		}
		t.store = db
	}
	if t.sandboxes == nil {
		t.sandboxes = sandbox.NewManager()
		t.sandboxes.Checks = s.checks // one probe of a backend for all tenants
		if t.id != "" {
			t.sandboxes.Confine = t.dir
		}
	}
	if t.approvals == nil {
		svc, err := approval.NewService(t.dir, agent.TranscriptSink(t.store))
		if err != nil {
			return nil, false, err
		}
		svc.Log = s.log
		svc.Manager.Approvers = func(req approval.Request) int { return s.approvers(t, req) }
		svc.Manager.Emit = func(e approval.Event) {
			s.broadcast(t, e.Name, e.Payload)
			s.forwardApproval(t, e)
		}
		t.approvals = svc
	}
	if t.plugins == nil {
		t.mcp = mcp.NewManager(s.log.With("tenant", t.id))
		if root != nil {
			t.mcp = mcp.NewGuardedManager(s.log.With("tenant", t.id), root.ceil.Net())
		}
		opts := plugin.Options{StateDir: t.dir, ProcessEnv: t.id == "", Log: s.log.With("tenant", t.id), MCP: t.mcp}
		if root != nil {
			guard := root.ceil.Net()
			opts.Confine, opts.Guard = t.dir, &guard
		}
		t.plugins = plugin.NewHost(opts)
	}
	f, err := config.Load(t.configPath)
	var clamp *ceiling.Result
	if err == nil && root != nil {
		f, clamp, err = root.ceil.Effective(f, t.dir)
	}
	if err != nil {
		s.log.Error("loading tenant config", "tenant", t.id, "path", t.configPath, "err", err)
		if t.rt != nil {
			t.stamp = st // do not retry on every request; a new write changes the stamp
			return t.rt, false, nil
		}
		return nil, false, fmt.Errorf("loading config of tenant %q: %w", t.id, err)
	}
	if t.id != "" && !f.Exists {
		return nil, false, errNoTenant
	}
	for _, w := range f.Warnings {
		s.log.Debug("config", "tenant", t.id, "warning", w.String())
	}
	if t.id == "" {
		logUnused(s.log, f.Warnings)
	}
	rt := &runtime{file: f, root: root, clamp: clamp, providers: provider.Options{Env: s.opts.Env}}
	switch {
	case root != nil:
		for _, v := range clamp.Violations {
			s.log.Warn("tenant config exceeds the operator's ceiling; held to it", "tenant", t.id, "key", v.Path, "rule", v.Message)
		}
		rt.providers = tenantProviders(f.Config, root.ceil, s.opts.Env)
	default:
		var issues []config.Issue
		rt.ceil, issues = ceiling.New(f, pluginIDs())
		for _, is := range issues {
			s.log.Error("the tenant ceiling of the root config", "key", is.Path, "problem", is.Message)
		}
	}
	rt.runner = s.newRunner(t, f.Config, rt.providers)
	t.rt = rt
	t.stamp = st
	return t.rt, true, nil
}

// logUnused tells the operator, once per load of their own config, which
// OpenClaw keys it sets that Talon does not act on (talon doctor lists
// them too). Tenants' configs only log them at debug level: a tenant must
// not be able to flood the operator's log.
func logUnused(log *slog.Logger, warns []config.Issue) {
	const most = 20
	var keys []string
	n := 0
	for _, w := range warns {
		if config.IsUnused(w) {
			if n++; n <= most {
				keys = append(keys, w.Path)
			}
		}
	}
	if n > most {
		keys = append(keys, fmt.Sprintf("and %d more", n-most))
	}
	if n > 0 {
		log.Warn("config keys not used by Talon yet (kept in the file; talon doctor lists them)", "keys", strings.Join(keys, ", "))
	}
}

// tenantProviders is how a tenant's model providers resolve: "${NAME}"
// keys from its own config's env, the operator's keys for the built-in
// providers only at their own hosts (and only if the ceiling lets
// tenants use them), and every connection through netguard.
func tenantProviders(cfg *config.Config, ceil *ceiling.Ceiling, env func(string) string) provider.Options {
	vars := config.EnvVars(cfg)
	keys := func(string) string { return "" }
	if ceil.OperatorKeys() {
		keys = env
	}
	guard := ceil.Net()
	return provider.Options{Env: func(k string) string { return vars[k] }, BuiltinKeys: keys, Guard: &guard}
}

// pluginIDs are the ids of the compiled-in plugins.
func pluginIDs() []string {
	var ids []string
	for _, m := range plugin.Modules() {
		ids = append(ids, m.ID)
	}
	return ids
}

// authConfig is the config a client's secret is checked against, read
// without opening t: its runtime's while it is open and its file has not
// changed, else the file's (the last good runtime's when the file does
// not load, as current keeps it). The operator's tenant is always open.
func (s *Server) authConfig(t *tenant) (*config.Config, error) {
	if t.id == "" {
		rt, err := t.current(s)
		if err != nil {
			return nil, err
		}
		return rt.file.Config, nil
	}
	t.mu.Lock()
	rt, st, closed := t.rt, t.stamp, t.closed
	t.mu.Unlock()
	if closed {
		return nil, errNoTenant
	}
	if rt != nil && stampOf(t.configPath) == st {
		return rt.file.Config, nil
	}
	f, err := config.Load(t.configPath)
	switch {
	case err != nil && rt != nil:
		return rt.file.Config, nil
	case err != nil:
		return nil, fmt.Errorf("loading config of tenant %q: %w", t.id, err)
	case !f.Exists:
		return nil, errNoTenant
	}
	return f.Config, nil
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
	if s.Draining(id) {
		return nil, errMoving
	}
	dir := filepath.Join(s.opts.StateDir, "tenants", id)
	// One stat a request: a tenant deleted and made again (by the
	// platform, the CLI or by hand) is not the one in memory.
	fi, err := os.Stat(dir)
	s.tenants.mu.Lock()
	defer s.tenants.mu.Unlock()
	t, cached := s.tenants.m[id]
	if cached && (err != nil || identOf(fi) != t.ident) {
		delete(s.tenants.m, id)
		go s.dropTenant(t, "its directory was deleted")
		cached = false
	}
	switch {
	case cached:
		return t, nil
	case errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir():
		return nil, errNoTenant
	case err != nil:
		return nil, fmt.Errorf("opening tenant %q: %w", id, err)
	}
	path, ok := config.Find(dir)
	if !ok {
		path = filepath.Join(dir, config.Filename)
	}
	t = &tenant{id: id, dir: dir, configPath: path, ident: identOf(fi), paths: newHostPaths(dir, s.opts.StateDir)}
	t.life, t.kill = context.WithCancelCause(context.Background())
	s.tenants.m[id] = t
	return t, nil
}

// errTenantDropped ends what a deleted tenant had running.
var errTenantDropped = errors.New("the tenant was deleted")

// DropTenant forgets tenant id, whose directory the caller has deleted:
// its runs are aborted and waited for, its WebSocket clients
// disconnected, its background commands killed and forgotten, and every
// handle it had (store, sandboxes, plugins, MCP servers, approvals)
// closed. A tenant made again under the same id starts empty. The
// platform calls it after deleting a tenant; a deletion this process was
// not told of is found at the tenant's next request.
func (s *Server) DropTenant(id string) {
	s.drains.forget(id) // a moved tenant is deleted where it was
	s.tenants.mu.Lock()
	t := s.tenants.m[id]
	delete(s.tenants.m, id)
	s.tenants.mu.Unlock()
	if t != nil {
		s.dropTenant(t, "deleted")
	}
}

// dropTenant ends everything of t, which is no longer in s.tenants.
func (s *Server) dropTenant(t *tenant, why string) {
	s.log.Info("closing tenant", "tenant", t.id, "why", why)
	t.kill(errTenantDropped)
	abortRuns(context.Background(), s.runs.forget(t), errTenantDropped)
	for _, c := range s.hubs.of(t) {
		c.close(protocol.ClosePolicy, "tenant deleted")
	}
	for _, tool := range s.tools.All() {
		if f, ok := tool.(tools.Forgetter); ok {
			f.Forget(t.dir)
		}
	}
	s.closeTenant(t)
}

// bind returns ctx ended also when t is dropped, and the function that
// releases the binding.
func (t *tenant) bind(ctx context.Context) (context.Context, func()) {
	if t.life == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(t.life, func() { cancel(context.Cause(t.life)) })
	return ctx, func() { stop(); cancel(nil) }
}

// fileIdent is a directory's device and inode.
type fileIdent struct{ dev, ino uint64 }

func identOf(fi fs.FileInfo) fileIdent {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileIdent{uint64(st.Dev), st.Ino}
	}
	return fileIdent{}
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
		s.closeTenant(t)
	}
}

// closeTenant closes what t opened; nothing opens again.
func (s *Server) closeTenant(t *tenant) {
	s.closeCron(t)
	s.closeChannels(t)
	t.mu.Lock()
	t.waitCooled()
	t.closed = true
	if t.wake != nil {
		t.wake.Stop()
		t.wake = nil
	}
	s.closeHandles(t)
	t.mu.Unlock()
	if t.id != "" {
		s.warm.leave(t)
	}
}

// closeHandles closes t's handles and forgets its runtime; they open
// again on its next use unless it is closed. t.mu is held.
func (s *Server) closeHandles(t *tenant) {
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
	t.rt = nil
}

// newRunner builds the agent runner for one config version.
// t.mu is held.
func (s *Server) newRunner(t *tenant, cfg *config.Config, providers provider.Options) *agent.Runner {
	if t.cooldowns == nil {
		t.cooldowns = provider.NewCooldowns(nil)
	}
	memo := provider.NewMemo(cfg, providers)
	admit, spent := s.admitter(t, t.store, cfg)
	return &agent.Runner{
		Admit:     admit,
		Spent:     spent,
		Config:    cfg,
		Policy:    policy.New(cfg),
		Tools:     s.tools,
		Store:     t.store,
		Resolve:   memo.Resolve,
		Targets:   memo.Targets,
		Cooldowns: t.cooldowns,
		StateDir:  t.dir,
		Sandboxes: t.sandboxes,
		Approvals: t.approvals,
		Messenger: channelMessenger{s: s, t: t},
		Crons:     cronTools{s: s, t: t},
		Configs:   configTools{s: s, t: t},
		Subagents: subagentTools{s: s, t: t},
		Outbound:  tools.Outbound{Env: providers.Env, Builtin: providers.BuiltinKeys, Guard: providers.Guard},
		Plugins:   t.plugins.Configure(cfg),
		Log:       s.log.With("tenant", t.id),
		Model:     s.opts.Model,
	}
}

// StoreFile is the name of a tenant's SQLite database in its directory.
const StoreFile = store.File

func (s *Server) openStore(dir string) (*store.DB, error) {
	db, err := store.OpenWith(filepath.Join(dir, StoreFile), store.Options{SyncWindow: s.opts.SyncWindow, Log: s.log})
	if err != nil {
		return nil, fmt.Errorf("opening the session store: %w", err)
	}
	return db, nil
}

// hostPaths rewrites the host paths a tenant could be shown: its own
// directory's become relative to it ("workspace-main"; the directory
// itself "." as a JSON value, "the tenant directory" in a sentence), and
// the state directory's "…". A
// tenant learns neither where Talon keeps its files nor who else it
// keeps there; paths it sends back are relative to its directory anyway.
type hostPaths struct {
	roots [][]byte // what to look for first, the state dir and its real path
	r     *strings.Replacer
}

func newHostPaths(dir, stateDir string) *hostPaths {
	h := &hostPaths{}
	var pairs []string
	add := func(d, state string) {
		pairs = append(pairs, `"`+d+`"`, `"."`, d+"/", "", d, "the tenant directory", state+"/", "…/", state, "…")
		h.roots = append(h.roots, []byte(state))
	}
	add(dir, stateDir)
	if real, err := filepath.EvalSymlinks(stateDir); err == nil && real != stateDir {
		add(filepath.Join(real, dir[len(stateDir):]), real)
	}
	h.r = strings.NewReplacer(pairs...)
	return h
}

// hide is b with the host paths a tenant must not see rewritten; the
// default tenant (and a connection before its handshake) sees b as is.
// JSON does not escape '/', so an encoded frame holds the paths as they
// are.
func (t *tenant) hide(b []byte) []byte {
	if t == nil || t.paths == nil {
		return b
	}
	for _, r := range t.paths.roots {
		if bytes.Contains(b, r) {
			return []byte(t.paths.r.Replace(string(b)))
		}
	}
	return b
}

// hideString is hide for a string.
func (t *tenant) hideString(s string) string {
	if t == nil || t.paths == nil {
		return s
	}
	return t.paths.r.Replace(s)
}
