package gateway

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"talon/internal/agent"
	"talon/internal/config"
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

// listAgent describes one agent: its identity (agent.Workspaces.Identity)
// and its model, the entry's or the defaults'.
func (c *call) listAgent(cfg *config.Config, id string) agentListing {
	row := agentListing{ID: id, Workspace: cfg.AgentWorkspace(c.t.dir, id)}
	if e, _ := cfg.Agent(id); e != nil {
		row.Name = e.Name
	}
	if ident := c.t.workspaces().Identity(cfg, id); ident != (agent.Identity{}) {
		row.Identity = &agentIdentityView{Identity: ident}
		if a := ident.Avatar; strings.HasPrefix(a, "https://") || strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "data:image/") {
			row.Identity.AvatarURL = a
		}
	}
	// The chain the agent's turns run with: its primary and the
	// fallbacks that apply to it (its own, or the shared ones).
	if config.ModelPrimary(cfg.AgentModelSetting(id)) != "" {
		row.Model = &agentModelView{Primary: cfg.AgentModel(id), Fallbacks: cfg.AgentFallbacks(id)}
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
	return agent.Identity{Name: f.name, Emoji: f.emoji, Avatar: f.avatar}.Lines()
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
		if undo, err = c.t.workspaces().Trash(file.Config, id, cfg.AgentWorkspace(c.t.dir, id)); err != nil {
			if te, ok := errors.AsType[*agent.TrashError](err); ok {
				return nil, protocol.Errorf("%s: %v; delete with deleteFiles:false to keep its files", m, te)
			}
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

// workspaces are the tenant's agent workspaces.
func (t *tenant) workspaces() agent.Workspaces {
	return agent.Workspaces{Dir: t.dir, ConfigPath: t.configPath, Confined: t.id != ""}
}

// checkWorkspace is agent.Workspaces.Check with the error of a bad param.
func checkWorkspace(method string, t *tenant, cfg *config.Config, id, raw string) (string, error) {
	dir, err := t.workspaces().Check(cfg, id, raw)
	if err != nil {
		return "", protocol.Errorf("invalid %s params: %v", method, err)
	}
	return dir, nil
}

// prepareWorkspace is agent.Workspaces.Prepare; its failures are the
// client's to read, naming the file.
func prepareWorkspace(t *tenant, cfg *config.Config, dir string, seed bool, lines []agent.IdentityLine) error {
	if err := t.workspaces().Prepare(cfg, dir, seed, lines); err != nil {
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: err.Error()}
	}
	return nil
}
