package gateway

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"talon/internal/agent"
	"talon/internal/config"
	"talon/internal/contain"
	"talon/protocol"
)

// agents.list/create/update/delete (gateway-protocol.md §2.1, §6): the
// agents of agents.list[] and their workspaces. Every change is a config
// write under the tenant's write lock (configTx), so it cannot lose a
// concurrent config.patch, and it takes effect at the next call or turn.
func init() {
	register("agents.list", protocol.ScopeRead, agentsList)
	register("agents.create", protocol.ScopeAdmin, agentsCreate)
	register("agents.update", protocol.ScopeAdmin, agentsUpdate)
	register("agents.delete", protocol.ScopeAdmin, agentsDelete)
}

// trashDir is where agents.delete moves workspaces, in the state dir.
const trashDir = "trash"

// Bounds of the text params: names and identity values go into
// IDENTITY.md, which is in every prompt of the agent.
const (
	maxNameChars      = 256
	maxEmojiChars     = 64
	maxAvatarChars    = 2048
	maxModelChars     = 512
	maxWorkspaceChars = 4096
)

type agentModelView struct {
	Primary   string   `json:"primary"`
	Fallbacks []string `json:"fallbacks,omitempty"`
}

type agentIdentityView struct {
	agent.Identity
	AvatarURL string `json:"avatarUrl,omitempty"`
}

type agentListing struct {
	ID        string             `json:"id"`
	Name      string             `json:"name,omitempty"`
	Identity  *agentIdentityView `json:"identity,omitempty"`
	Workspace string             `json:"workspace,omitempty"`
	Model     *agentModelView    `json:"model,omitempty"`
}

func agentsList(_ *Server, c *call) (any, error) {
	if err := c.params(&struct{}{}); err != nil {
		return nil, err
	}
	cfg := c.rt.file.Config
	d := sessionDefaults(cfg)
	rows := []agentListing{}
	for _, id := range cfg.ListedAgentIDs() {
		rows = append(rows, c.listAgent(cfg, id))
	}
	return map[string]any{"defaultId": d.DefaultAgentID, "mainKey": d.MainKey, "scope": d.Scope, "agents": rows}, nil
}

// listAgent describes one agent: its identity is IDENTITY.md's lines with
// the entry's `identity` object over them, its model the entry's or the
// defaults'.
func (c *call) listAgent(cfg *config.Config, id string) agentListing {
	row := agentListing{ID: id, Workspace: cfg.AgentWorkspace(c.t.dir, id)}
	e, _ := cfg.Agent(id)
	var ident agent.Identity
	if ws, err := openWorkspace(c.t, row.Workspace, false); err == nil {
		ident, _ = agent.ReadIdentity(ws) // an unreadable file is no identity
		ws.Close()
	}
	if e != nil {
		row.Name = e.Name
		if e.Identity != nil {
			for key, to := range map[string]*string{"name": &ident.Name, "theme": &ident.Theme, "emoji": &ident.Emoji, "avatar": &ident.Avatar} {
				if v := e.Identity.Get(key); v != nil && v.Kind == config.String && strings.TrimSpace(v.Str) != "" {
					*to = strings.TrimSpace(v.Str)
				}
			}
		}
	}
	if ident != (agent.Identity{}) {
		row.Identity = &agentIdentityView{Identity: ident}
		if a := ident.Avatar; strings.HasPrefix(a, "https://") || strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "data:image/") {
			row.Identity.AvatarURL = a
		}
	}
	if refs, err := config.ModelRefs(cfg.AgentModelSetting(id)); err == nil && len(refs) > 0 {
		row.Model = &agentModelView{Primary: refs[0], Fallbacks: refs[1:]}
	}
	return row
}

// agentTextParam checks an optional text param: trimmed, one line, bounded.
func agentTextParam(method, field string, v *string, max int) (string, error) {
	if v == nil {
		return "", nil
	}
	s := strings.TrimSpace(*v)
	switch {
	case s == "":
		return "", protocol.Errorf("invalid %s params: %s must not be empty", method, field)
	case strings.ContainsFunc(s, unicode.IsControl):
		return "", protocol.Errorf("invalid %s params: %s must be one line of text", method, field)
	case utf8.RuneCountInString(s) > max:
		return "", protocol.Errorf("invalid %s params: %s is longer than %d characters", method, field, max)
	}
	return s, nil
}

// agentParams are the fields agents.create and agents.update share.
type agentParams struct {
	Name      *string `json:"name"`
	Workspace *string `json:"workspace"`
	Model     *string `json:"model"`
	Emoji     *string `json:"emoji"`
	Avatar    *string `json:"avatar"`
}

type agentFields struct{ name, workspace, model, emoji, avatar string }

func (p *agentParams) check(method string) (agentFields, error) {
	var f agentFields
	var err error
	for _, x := range []struct {
		field string
		in    *string
		out   *string
		max   int
	}{
		{"name", p.Name, &f.name, maxNameChars},
		{"workspace", p.Workspace, &f.workspace, maxWorkspaceChars},
		{"model", p.Model, &f.model, maxModelChars},
		{"emoji", p.Emoji, &f.emoji, maxEmojiChars},
		{"avatar", p.Avatar, &f.avatar, maxAvatarChars},
	} {
		if *x.out, err = agentTextParam(method, x.field, x.in, x.max); err != nil {
			return f, err
		}
	}
	return f, nil
}

// identityLines are the IDENTITY.md lines for the given fields.
func (f agentFields) identityLines() []agent.IdentityLine {
	var out []agent.IdentityLine
	for _, l := range []agent.IdentityLine{{Key: "Name", Value: f.name}, {Key: "Emoji", Value: f.emoji}, {Key: "Avatar", Value: f.avatar}} {
		if l.Value != "" {
			out = append(out, l)
		}
	}
	return out
}

func agentsCreate(_ *Server, c *call) (any, error) {
	const m = "agents.create"
	var p agentParams
	if err := c.params(&p); err != nil {
		return nil, err
	}
	f, err := p.check(m)
	if err != nil {
		return nil, err
	}
	if f.name == "" {
		return nil, protocol.Errorf("invalid %s params: name is required", m)
	}
	if f.workspace == "" {
		return nil, protocol.Errorf("invalid %s params: workspace is required", m)
	}
	id := config.NormalizeAgentID(f.name)
	if id == "main" {
		return nil, protocol.Errorf(`invalid %s params: agent id "main" is reserved`, m)
	}
	tx, err := beginEdit(c)
	if err != nil {
		return nil, err
	}
	defer tx.done()
	cfg := tx.cur.file.Config
	if cfg.HasAgent(id) {
		return nil, protocol.Errorf("agent %q already exists", id)
	}
	dir, err := checkWorkspace(m, c.t, cfg, id, f.workspace)
	if err != nil {
		return nil, err
	}
	next := tx.cur.file.Tree.Clone()
	list := agentsListNode(next, cfg)
	entry := config.NewObject(
		config.Member{Key: "id", Value: config.NewString(id)},
		config.Member{Key: "name", Value: config.NewString(f.name)},
		config.Member{Key: "workspace", Value: config.NewString(dir)},
	)
	if f.model != "" {
		entry.Set("model", config.NewString(f.model))
	}
	list.Items = append(list.Items, entry)
	file, err := tx.check(next)
	if err != nil {
		return nil, err
	}
	if err := prepareWorkspace(c.t, cfg, dir, true, f.identityLines()); err != nil {
		return nil, err
	}
	if err := tx.save(file); err != nil {
		return nil, err
	}
	out := map[string]any{"ok": true, "agentId": id, "name": f.name, "workspace": dir}
	if f.model != "" {
		out["model"] = f.model
	}
	return out, nil
}

func agentsUpdate(_ *Server, c *call) (any, error) {
	const m = "agents.update"
	var p struct {
		AgentID string `json:"agentId"`
		agentParams
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.AgentID) == "" {
		return nil, protocol.Errorf("invalid %s params: agentId is required", m)
	}
	f, err := p.check(m)
	if err != nil {
		return nil, err
	}
	id := config.NormalizeAgentID(p.AgentID)
	tx, err := beginEdit(c)
	if err != nil {
		return nil, err
	}
	defer tx.done()
	cfg := tx.cur.file.Config
	if !cfg.HasAgent(id) {
		return nil, protocol.Errorf("agent %q not found", id)
	}
	next := tx.cur.file.Tree.Clone()
	list := agentsListNode(next, cfg) // the implicit default agent gets its entry here
	entry := list.Items[config.AgentIndex(list, id)]
	dir := cfg.AgentWorkspace(c.t.dir, id)
	if f.workspace != "" {
		if dir, err = checkWorkspace(m, c.t, cfg, id, f.workspace); err != nil {
			return nil, err
		}
		entry.Set("workspace", config.NewString(dir))
	}
	if f.name != "" {
		entry.Set("name", config.NewString(f.name))
	}
	if f.model != "" {
		entry.Set("model", config.NewString(f.model))
	}
	file, err := tx.check(next)
	if err != nil {
		return nil, err
	}
	if lines := f.identityLines(); f.workspace != "" || len(lines) > 0 {
		if err := prepareWorkspace(c.t, cfg, dir, f.workspace != "", lines); err != nil {
			return nil, err
		}
	}
	if err := tx.save(file); err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "agentId": id}, nil
}

func agentsDelete(_ *Server, c *call) (any, error) {
	const m = "agents.delete"
	var p struct {
		AgentID     string `json:"agentId"`
		DeleteFiles *bool  `json:"deleteFiles"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.AgentID) == "" {
		return nil, protocol.Errorf("invalid %s params: agentId is required", m)
	}
	id := config.NormalizeAgentID(p.AgentID)
	if id == "main" {
		return nil, protocol.Errorf(`agent "main" cannot be deleted`)
	}
	tx, err := beginEdit(c)
	if err != nil {
		return nil, err
	}
	defer tx.done()
	cfg := tx.cur.file.Config
	if a, _ := cfg.Agent(id); a == nil {
		return nil, protocol.Errorf("agent %q not found", id)
	}
	if id == cfg.DefaultAgentID() {
		return nil, protocol.Errorf("agent %q is the default agent and cannot be deleted", id)
	}
	next := tx.cur.file.Tree.Clone()
	list := agentsListNode(next, cfg)
	i := config.AgentIndex(list, id)
	list.Items = append(list.Items[:i], list.Items[i+1:]...)
	removed := 0
	if b := next.Get("bindings"); b != nil && b.Kind == config.Array {
		kept := b.Items[:0]
		for _, it := range b.Items {
			if a := it.Get("agentId"); a != nil && a.Kind == config.String && config.NormalizeAgentID(a.Str) == id {
				removed++
				continue
			}
			kept = append(kept, it)
		}
		b.Items = kept
	}
	file, err := tx.check(next)
	if err != nil {
		return nil, err
	}
	// The workspace goes to the trash before the config changes, so a
	// workspace that cannot move leaves the agent as it was.
	var undo func() error
	if p.DeleteFiles == nil || *p.DeleteFiles {
		if undo, err = trashWorkspace(c.t, file.Config, id, cfg.AgentWorkspace(c.t.dir, id)); err != nil {
			return nil, err
		}
	}
	if err := tx.save(file); err != nil {
		if undo != nil {
			if uerr := undo(); uerr != nil {
				err = fmt.Errorf("%w (and moving the workspace back failed: %v)", err, uerr)
			}
		}
		return nil, err
	}
	return map[string]any{"ok": true, "agentId": id, "removedBindings": removed}, nil
}

// agentsListNode returns tree's agents.list, creating it. An empty list gets the
// default agent's entry first: the first entry of a list is the default
// agent, and a new agent must not silently take that place.
func agentsListNode(tree *config.Value, cfg *config.Config) *config.Value {
	agents := tree.Get("agents")
	if agents == nil || agents.Kind != config.Object {
		agents = config.NewObject()
		tree.Set("agents", agents)
	}
	list := agents.Get("list")
	if list == nil || list.Kind != config.Array {
		list = config.NewArray()
		agents.Set("list", list)
	}
	if len(list.Items) == 0 {
		list.Items = append(list.Items, config.NewObject(config.Member{Key: "id", Value: config.NewString(cfg.DefaultAgentID())}))
	}
	return list
}

// checkWorkspace resolves a workspace param (relative to the state dir,
// `~` for home) and refuses places an agent must not own: outside a
// tenant's directory, the state directory or one containing it (or the
// config file), the trash, and anything overlapping another agent's
// workspace — agents.delete moves a workspace away whole, which must
// never take another agent's files or the state with it.
func checkWorkspace(method string, t *tenant, cfg *config.Config, id, raw string) (string, error) {
	probe := &config.Config{Agents: config.Agents{List: []config.Agent{{ID: id, Workspace: raw}}}}
	dir := probe.AgentWorkspace(t.dir, id)
	bad := func(format string, args ...any) error {
		return protocol.Errorf("invalid %s params: workspace %s %s", method, dir, fmt.Sprintf(format, args...))
	}
	if _, in := contain.Within(t.dir, dir); t.id != "" && !in {
		return "", bad("is outside the tenant directory")
	}
	if _, in := contain.Within(dir, t.dir); in {
		return "", bad("would contain the state directory %s", t.dir)
	}
	if _, in := contain.Within(dir, t.configPath); in {
		return "", bad("would contain the config file %s", t.configPath)
	}
	if _, in := contain.Within(filepath.Join(t.dir, trashDir), dir); in {
		return "", bad("is in the trash")
	}
	for _, other := range cfg.AgentIDs() {
		if o := cfg.AgentWorkspace(t.dir, other); other != id && pathsOverlap(dir, o) {
			return "", bad("overlaps the workspace %s of agent %q", o, other)
		}
	}
	return dir, nil
}

// pathsOverlap reports whether one of a and b contains the other, by their
// paths and, where they exist, by their real paths.
func pathsOverlap(a, b string) bool {
	return contain.Overlap(a, b) || contain.Overlap(realPathOr(a), realPathOr(b))
}

// realPathOr is where p leads (contain.Real: as far as it exists), or p
// when that cannot be resolved (a dangling link, a loop): the workspace is
// checked again where it is used (contain.Resolved).
func realPathOr(p string) string {
	if r, err := contain.Real(p); err == nil {
		return r
	}
	return p
}

// openWorkspace opens an agent workspace as a root, creating it (0700)
// when asked. A tenant's workspace is reached through the tenant
// directory's root, so no symbolic link on the way leads out of it; the
// default tenant's may be anywhere its owner put it.
func openWorkspace(t *tenant, dir string, create bool) (*os.Root, error) {
	f, err := openTenantFS(t)
	if err != nil {
		return nil, err
	}
	defer f.close()
	if f.root == nil {
		if create {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("creating workspace %s: %w", dir, err)
			}
		}
		return os.OpenRoot(dir)
	}
	rel, err := f.rel(dir)
	if err != nil {
		return nil, err
	}
	if create {
		if err := f.root.MkdirAll(rel, 0o700); err != nil {
			return nil, fmt.Errorf("creating workspace %s: %w", dir, err)
		}
	}
	return f.root.OpenRoot(rel)
}

// prepareWorkspace creates a workspace with its bootstrap files (seed:
// unless agents.defaults.skipBootstrap) and appends identity lines to its
// IDENTITY.md. Failures are the client's to read: they name the file.
func prepareWorkspace(t *tenant, cfg *config.Config, dir string, seed bool, lines []agent.IdentityLine) error {
	ws, err := openWorkspace(t, dir, true)
	if err != nil {
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: fmt.Sprintf("preparing workspace: %v", err)}
	}
	defer ws.Close()
	if seed {
		skip := cfg.Agents.Defaults.SkipBootstrap != nil && *cfg.Agents.Defaults.SkipBootstrap
		if _, err := agent.SeedWorkspace(ws, skip); err != nil {
			return &protocol.Error{Code: protocol.CodeUnavailable, Message: fmt.Sprintf("preparing workspace %s: %v", dir, err)}
		}
	}
	if err := agent.AppendIdentity(ws, lines); err != nil {
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: fmt.Sprintf("preparing workspace %s: %v", dir, err)}
	}
	return nil
}

// trashWorkspace moves a deleted agent's workspace to
// <state>/trash/<id>-<UTC time>/workspace by rename — never a recursive
// delete, and never a copy: a workspace on another file system stays and
// the delete is refused. rest is the config without the agent; a
// workspace that overlaps a remaining agent's, or holds the state, stays
// too. It returns how to move the workspace back (nil when there was
// nothing to move).
func trashWorkspace(t *tenant, rest *config.Config, id, dir string) (func() error, error) {
	refuse := func(why string) error {
		return protocol.Errorf("agents.delete: workspace %s of agent %q %s; delete with deleteFiles:false to keep its files", dir, id, why)
	}
	if _, in := contain.Within(dir, t.dir); in {
		return nil, refuse("contains the state directory")
	}
	if _, in := contain.Within(t.dir, dir); t.id != "" && !in {
		return nil, refuse("is outside the tenant directory")
	}
	for _, other := range rest.AgentIDs() {
		if o := rest.AgentWorkspace(t.dir, other); pathsOverlap(dir, o) {
			return nil, refuse(fmt.Sprintf("overlaps the workspace of agent %q", other))
		}
	}
	fsys, err := openTenantFS(t)
	if err != nil {
		return nil, err
	}
	defer fsys.close()
	if _, err := fsys.lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, refuse(fmt.Sprintf("cannot be read (%v)", err))
	}
	trash := filepath.Join(t.dir, trashDir)
	if err := fsys.mkdir(trash); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating %s: %w", trash, err)
	}
	stem := filepath.Join(trash, id+"-"+time.Now().UTC().Format("20060102T150405Z"))
	dest := stem
	for n := 2; ; n++ {
		err := fsys.mkdir(dest)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || n > 1000 {
			return nil, fmt.Errorf("creating %s: %w", dest, err)
		}
		dest = fmt.Sprintf("%s-%d", stem, n)
	}
	to := filepath.Join(dest, "workspace")
	if err := fsys.rename(dir, to); err != nil {
		_ = fsys.remove(dest)
		return nil, refuse(fmt.Sprintf("cannot be moved to %s (%v)", dest, err))
	}
	return func() error {
		f, err := openTenantFS(t)
		if err != nil {
			return err
		}
		defer f.close()
		return f.rename(to, dir)
	}, nil
}

// tenantFS does file operations on absolute paths: through the tenant
// directory's root for a tenant (so nothing reaches outside it), directly
// for the default tenant.
type tenantFS struct {
	base string
	root *os.Root // nil for the default tenant
}

func openTenantFS(t *tenant) (*tenantFS, error) {
	if t.id == "" {
		return &tenantFS{base: t.dir}, nil
	}
	r, err := os.OpenRoot(t.dir)
	if err != nil {
		return nil, fmt.Errorf("opening tenant directory: %w", err)
	}
	return &tenantFS{base: t.dir, root: r}, nil
}

func (f *tenantFS) close() {
	if f.root != nil {
		f.root.Close()
	}
}

// rel is p inside the tenant's root.
func (f *tenantFS) rel(p string) (string, error) {
	rel, in := contain.Within(f.base, p)
	if !in {
		return "", fmt.Errorf("%s is outside the tenant directory", p)
	}
	return rel, nil
}

func (f *tenantFS) lstat(p string) (fs.FileInfo, error) {
	if f.root == nil {
		return os.Lstat(p)
	}
	rel, err := f.rel(p)
	if err != nil {
		return nil, err
	}
	return f.root.Lstat(rel)
}

func (f *tenantFS) mkdir(p string) error {
	if f.root == nil {
		return os.Mkdir(p, 0o700)
	}
	rel, err := f.rel(p)
	if err != nil {
		return err
	}
	return f.root.Mkdir(rel, 0o700)
}

func (f *tenantFS) remove(p string) error {
	if f.root == nil {
		return os.Remove(p)
	}
	rel, err := f.rel(p)
	if err != nil {
		return err
	}
	return f.root.Remove(rel)
}

func (f *tenantFS) rename(from, to string) error {
	if f.root == nil {
		return os.Rename(from, to)
	}
	a, err := f.rel(from)
	if err != nil {
		return err
	}
	b, err := f.rel(to)
	if err != nil {
		return err
	}
	return f.root.Rename(a, b)
}
