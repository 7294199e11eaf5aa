// Package ceiling holds a tenant's config to what the operator allows.
//
// The operator's root config (the default tenant's, which Talon trusts)
// sets the ceiling in its `tenants` section; a tenant's config is input
// from someone Talon does not trust. Apply checks a tenant's config tree
// against the ceiling and returns the tree that is in force: where the
// tenant wrote something beyond the ceiling, the value the ceiling allows
// (a violation, which config writes refuse and doctor reports), and where
// it wrote nothing, the tenant defaults (its sessions run sandboxed in its
// agent workspace).
//
// The rules, each reported with the key at fault:
//
//   - sandbox: a tenant's sessions always run sandboxed (mode "all"; off
//     and non-main would run commands on the host), with a backend the
//     ceiling lists (bwrap and docker by default; never host), no network
//     unless tenants.sandbox.network, limits no higher than
//     tenants.sandbox.limits (Talon's defaults by default), and only the
//     docker keys that do not widen the container (no binds, profiles,
//     capabilities, user, devices or resource keys of its own);
//   - network: every URL a tenant writes for the gateway to call (model
//     providers, MCP servers, memory search embeddings endpoints) is
//     public, or an "IP:port" the operator lists in
//     tenants.network.allowHosts; tools.network.allowLoopback is the
//     operator's alone;
//   - programs: a tenant's MCP server never runs a program on the host;
//     the servers the operator declares in tenants.mcp.servers are offered
//     to every tenant instead;
//   - plugins: only the compiled-in plugins tenants.plugins.allow names
//     (all by default), plugins.load.paths inside the tenant directory,
//     and no api-tools processEnv (the gateway's environment);
//   - paths: workspaces and sandbox workspace roots inside the tenant
//     directory, never the directory itself (which holds the config, the
//     store and the approvals file);
//   - budgets: a tenant's usage.budget may lower the monthly budget the
//     operator sets (tenants.budgets.<id>, else tenants.budget), never
//     raise it, and its alertAt may only be earlier; where it sets
//     nothing the operator's applies;
//   - the `tenants` section itself belongs to the root config.
//
// Apply is pure: it reads no file and keeps no state. A Ceiling is
// immutable and safe for concurrent use.
package ceiling

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	"talon/internal/config"
	"talon/internal/netguard"
)

// Ceiling is the operator's limits on tenant configs.
type Ceiling struct {
	backends     []string
	network      bool
	limits       []limit
	allow        []netip.AddrPort
	mcp          []config.Member // tenants.mcp.servers as the operator wrote them
	plugins      []string        // compiled-in plugins tenants may turn on
	bundled      []string        // every compiled-in plugin
	operatorKeys bool
	budget       *config.Budget           // tenants.budget
	budgets      map[string]config.Budget // tenants.budgets
}

// limit is one sandbox.limits key and its ceiling.
type limit struct {
	key string
	max int64
}

// Defaults of the ceiling when the root config says nothing. The limits
// are Talon's own sandbox defaults (internal/sandbox.DefaultLimits), so a
// tenant may lower them but not raise them.
var (
	defaultBackends = []string{"bwrap", "docker"}
	defaultLimits   = []limit{
		{"processes", 256}, {"openFiles", 1024}, {"fileSizeMb", 256},
		{"cpuSeconds", 300}, {"memoryMb", 2048}, {"timeoutSeconds", 1800},
	}
)

// New reads the ceiling from the operator's root config; nil means a root
// config with no tenants section. bundled are the ids of the compiled-in
// plugins. The root config has been validated (config.Validate checks the
// tenants section's values); what only the ceiling can check — plugin ids
// — is returned as issues.
func New(root *config.File, bundled []string) (*Ceiling, []config.Issue) {
	c := &Ceiling{backends: defaultBackends, limits: slices.Clone(defaultLimits), bundled: slices.Clone(bundled), operatorKeys: true}
	c.plugins = c.bundled
	if root == nil || root.Config == nil {
		return c, nil
	}
	t := &root.Config.Tenants
	if t.Sandbox.Backends != nil {
		c.backends = slices.Clone([]string(t.Sandbox.Backends))
	}
	c.network = t.Sandbox.Network != nil && *t.Sandbox.Network
	if l := t.Sandbox.Limits; l != nil {
		for i, v := range []*int{l.Processes, l.OpenFiles, l.FileSizeMB, l.CPUSeconds, l.MemoryMB, l.TimeoutSeconds} {
			if v != nil {
				c.limits[i].max = int64(*v)
			}
		}
	}
	for _, h := range t.Network.AllowHosts {
		if ap, err := config.ParseAllowHost(h); err == nil {
			c.allow = append(c.allow, ap)
		}
	}
	if servers := root.Tree.Lookup("tenants", "mcp", "servers"); servers != nil && servers.Kind == config.Object {
		c.mcp = servers.Clone().Members
	}
	c.budget, c.budgets = t.Budget, t.Budgets
	if o := t.Models.OperatorKeys; o != nil {
		c.operatorKeys = *o
	}
	var issues []config.Issue
	if t.Plugins.Allow != nil {
		c.plugins = nil
		for i, id := range t.Plugins.Allow {
			if !slices.Contains(c.bundled, id) {
				issues = append(issues, config.Issue{Path: config.JoinIndex("tenants.plugins.allow", i),
					Message: fmt.Sprintf("unknown plugin %q: the compiled-in plugins are %s", id, strings.Join(c.bundled, ", "))})
				continue
			}
			c.plugins = append(c.plugins, id)
		}
	}
	return c, issues
}

// Net is the network guard of everything a tenant's config makes the
// gateway call: private addresses refused but for the operator's
// allowHosts.
func (c *Ceiling) Net() netguard.Options {
	return netguard.Options{Allow: slices.Clone(c.allow)}
}

// OperatorKeys reports whether a tenant may use the built-in providers
// with the gateway's own keys (tenants.models.operatorKeys).
func (c *Ceiling) OperatorKeys() bool { return c.operatorKeys }

// Result is a tenant config as the ceiling leaves it.
type Result struct {
	// Tree is the config in force: the tenant's with every violation
	// clamped and the tenant defaults filled in.
	Tree *config.Value
	// Violations are keys the tenant set beyond the ceiling, each with
	// the rule: a config write that has any is refused.
	Violations []config.Issue
	// Defaults are keys the ceiling set where the tenant wrote nothing.
	Defaults []config.Issue
}

// Apply holds tree, a tenant's config as written, to the ceiling. dir is
// the tenant's directory; tree is not modified.
func (c *Ceiling) Apply(tree *config.Value, dir string) *Result {
	a := &applier{c: c, dir: filepath.Clean(dir), res: &Result{Tree: tree.Clone()}}
	if a.res.Tree == nil || a.res.Tree.Kind != config.Object {
		a.res.Tree = config.NewObject()
	}
	t := a.res.Tree
	if t.Get("tenants") != nil {
		a.violate("tenants", "the tenant ceiling is the operator's: only the root config sets it")
		t.Delete("tenants")
	}
	a.sandboxes()
	a.network()
	a.mcpServers()
	a.plugins()
	a.paths()
	a.budget()
	return a.res
}

type applier struct {
	c   *Ceiling
	dir string
	res *Result
}

func (a *applier) violate(path, rule string) {
	a.res.Violations = append(a.res.Violations, config.Issue{Path: path, Message: rule})
}

func (a *applier) setDefault(path, what string) {
	a.res.Defaults = append(a.res.Defaults, config.Issue{Path: path, Message: what})
}

// object returns the object at key of v, creating it (and replacing a
// value of another type, which would not decode anyway) when create is set.
func object(v *config.Value, key string, create bool) *config.Value {
	x := v.Get(key)
	if x != nil && x.Kind == config.Object {
		return x
	}
	if !create {
		return nil
	}
	x = config.NewObject()
	v.Set(key, x)
	return x
}

// agents are the agents.list entries that are objects, with their paths.
func (a *applier) agents(fn func(path string, entry *config.Value)) {
	list := a.res.Tree.Lookup("agents", "list")
	if list == nil || list.Kind != config.Array {
		return
	}
	for i, it := range list.Items {
		if it != nil && it.Kind == config.Object {
			fn(config.JoinIndex("agents.list", i), it)
		}
	}
}

func str(v *config.Value) (string, bool) {
	if v == nil || v.Kind != config.String {
		return "", false
	}
	return strings.TrimSpace(v.Str), true
}

// Effective is f, a tenant's config file as loaded, with the config in
// force: its tree held to the ceiling, decoded and validated. The file's
// Raw and Hash stay those of the bytes on disk.
func (c *Ceiling) Effective(f *config.File, dir string) (*config.File, *Result, error) {
	res := c.Apply(f.Tree, dir)
	eff := &config.File{Path: f.Path, Exists: f.Exists, Raw: f.Raw, Hash: f.Hash, Tree: res.Tree, Config: &config.Config{}}
	var err error
	if eff.Warnings, err = config.Decode(res.Tree, eff.Config); err != nil {
		return nil, res, fmt.Errorf("loading config %s held to the operator's ceiling: %w", f.Path, err)
	}
	return eff, res, nil
}
