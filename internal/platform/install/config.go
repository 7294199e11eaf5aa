package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"talon/internal/config"
	"talon/internal/platform/template"
	"talon/internal/plugin"
	"talon/internal/policy"
)

// maxConfigTries bounds how often an edit is re-applied when the config
// changes under it.
const maxConfigTries = 5

// editConfig applies edit to the tenant's config and saves the result,
// guarded by the hash of the file edit saw: if someone else wrote the file
// meanwhile, the edit is re-applied to their version. edit gets a clone of
// the tree and the typed config; it returns the new tree. An edit that
// changes nothing writes nothing.
func editConfig(t Tenant, edit func(tree *config.Value, cfg *config.Config) (*config.Value, error)) error {
	for range maxConfigTries {
		f, next, err := planConfig(t, edit)
		if err != nil {
			return err
		}
		if config.Equal(f.Tree, next) {
			return nil
		}
		raw, err := os.ReadFile(t.ConfigPath)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("re-reading %s: %w", t.ConfigPath, err)
		}
		if config.Hash(raw) != f.Hash {
			continue // changed since we read it: start again from the new file
		}
		if _, err := config.Save(t.ConfigPath, next); err != nil {
			return err
		}
		return nil
	}
	return fmt.Errorf("config %s kept changing while being edited (%d tries); try again", t.ConfigPath, maxConfigTries)
}

// planConfig loads the config, applies edit and checks that the result
// still loads and validates, without writing.
func planConfig(t Tenant, edit func(tree *config.Value, cfg *config.Config) (*config.Value, error)) (*config.File, *config.Value, error) {
	f, err := config.Load(t.ConfigPath)
	if err != nil {
		return nil, nil, fmt.Errorf("tenant %q: %w (fix the config before installing)", t.ID, err)
	}
	next, err := edit(f.Tree.Clone(), f.Config)
	if err != nil {
		return nil, nil, err
	}
	if _, err := config.Parse(t.ConfigPath, next.Indented()); err != nil {
		return nil, nil, fmt.Errorf("tenant %q: the edited config would not load: %w", t.ID, err)
	}
	return f, next, nil
}

// ensureObject returns parent[key], making it an empty object when it is
// absent; an existing non-object is an error naming the key.
func ensureObject(parent *config.Value, key, path string) (*config.Value, error) {
	v := parent.Get(key)
	if v.IsNull() {
		v = config.NewObject()
		parent.Set(key, v)
		return v, nil
	}
	if v.Kind != config.Object {
		return nil, fmt.Errorf("%s is a %s; expected an object", path, v.Kind)
	}
	return v, nil
}

// workspaceRel is the workspace of slug as written in the config,
// relative to the tenant directory, so the tenant directory can move.
func workspaceRel(slug string) string { return agentsDir + "/" + slug }

// applyAgent writes the template's agents.list[] entry into tree. With
// install set, the entry must not exist and is written whole; otherwise it
// must exist and only the keys updates own are replaced (the tenant's name,
// model and other keys are kept). It also enables the required plugins and
// removes stale tenant-level tools.alsoAllow entries.
func applyAgent(tree *config.Value, tp *template.Template, install bool) (*config.Value, error) {
	agents, err := ensureObject(tree, "agents", "agents")
	if err != nil {
		return nil, err
	}
	list := agents.Get("list")
	if list.IsNull() {
		list = config.NewArray()
		agents.Set("list", list)
	} else if list.Kind != config.Array {
		return nil, fmt.Errorf("agents.list is a %s; expected a list", list.Kind)
	}
	want := tp.AgentEntry(workspaceRel(tp.Slug))
	i := config.AgentIndex(list, tp.Slug)
	var previous []string // the entry's alsoAllow before this change
	switch {
	case install && i >= 0:
		return nil, fmt.Errorf("employee %q is %w (agents.list[%d]); update it instead", tp.Slug, ErrInstalled, i)
	case !install && i < 0:
		return nil, fmt.Errorf("employee %q is %w (no agents.list entry with id %q); install it first", tp.Slug, ErrNotInstalled, tp.Slug)
	case install:
		list.Items = append(list.Items, want)
	default:
		entry := list.Items[i]
		previous = stringList(entry.Lookup("tools", "alsoAllow"))
		for _, k := range template.SyncedEntryKeys {
			setOrDelete(entry, k, want.Get(k))
		}
		tools := entry.Get("tools")
		if tools.IsNull() || tools.Kind != config.Object {
			tools = config.NewObject()
		}
		for _, k := range template.ManagedToolKeys {
			setOrDelete(tools, k, want.Get("tools").Get(k))
		}
		if len(tools.Members) == 0 {
			entry.Delete("tools")
		} else {
			entry.Set("tools", tools)
		}
	}
	removeStaleAlsoAllow(tree, append(previous, tp.AlsoAllow...))
	return tree, enablePlugins(tree, tp.Plugins)
}

func setOrDelete(obj *config.Value, key string, v *config.Value) {
	if v.IsNull() {
		obj.Delete(key)
		return
	}
	obj.Set(key, v.Clone())
}

// stringList reads a JSON array of strings, skipping other items.
func stringList(v *config.Value) []string {
	if v == nil || v.Kind != config.Array {
		return nil
	}
	var out []string
	for _, it := range v.Items {
		if it.Kind == config.String {
			out = append(out, it.Str)
		}
	}
	return out
}

// removeStaleAlsoAllow drops from the tenant-level tools.alsoAllow the
// employee's tools: before tools lived on the agent entry they were added
// there, which granted them to every agent of the tenant. The key goes
// when it ends up empty.
func removeStaleAlsoAllow(tree *config.Value, employeeTools []string) {
	tools := tree.Get("tools")
	aa := tools.Get("alsoAllow")
	if aa == nil || aa.Kind != config.Array {
		return
	}
	kept := aa.Items[:0:0]
	for _, it := range aa.Items {
		if it.Kind == config.String && slices.Contains(employeeTools, it.Str) {
			continue
		}
		kept = append(kept, it)
	}
	if len(kept) == len(aa.Items) {
		return
	}
	if len(kept) == 0 {
		tools.Delete("alsoAllow")
		return
	}
	tools.Set("alsoAllow", config.NewArray(kept...))
}

// enablePlugins sets plugins.entries.<id>.enabled to true for each id and
// then checks, with the gateway's own rule (policy.LoadState), that the
// plugin is really on for the tenant; when another key keeps it off, the
// error names the plugin, that key and the fix.
func enablePlugins(tree *config.Value, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	plugins, err := ensureObject(tree, "plugins", "plugins")
	if err != nil {
		return err
	}
	entries, err := ensureObject(plugins, "entries", "plugins.entries")
	if err != nil {
		return err
	}
	for _, id := range ids {
		e, err := ensureObject(entries, id, "plugins.entries."+id)
		if err != nil {
			return err
		}
		e.Set("enabled", config.NewBool(true))
	}
	var cfg config.Config
	if _, err := config.Decode(tree, &cfg); err != nil {
		return fmt.Errorf("decoding the edited config: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if err := pluginOn(&cfg, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PluginError is a required plugin that the tenant's config keeps off.
type PluginError struct {
	Plugin string
	Key    string // the config key that keeps it off
	Reason string
	Fix    string
}

func (e *PluginError) Error() string {
	return fmt.Sprintf("required plugin %q is off for this tenant (%s, decided by %s): %s", e.Plugin, e.Reason, e.Key, e.Fix)
}

func pluginOn(cfg *config.Config, id string) error {
	i := slices.IndexFunc(plugin.Modules(), func(m plugin.Module) bool { return m.ID == id })
	if i < 0 {
		return &PluginError{Plugin: id, Key: "requiredTools.plugins", Reason: "unknown to Talon",
			Fix: fmt.Sprintf("remove it from the template's requiredTools.plugins; Talon's plugins are %s", strings.Join(template.PluginIDs(), ", "))}
	}
	st := policy.LoadState(cfg, id, policy.OriginBundled, plugin.Modules()[i].Kind)
	if st.Enabled {
		return nil
	}
	e := &PluginError{Plugin: id, Key: st.Key, Reason: st.Reason}
	switch st.Key {
	case "plugins.enabled":
		e.Fix = "set plugins.enabled to true (or remove it) in the tenant's config"
	case "plugins.deny":
		e.Fix = fmt.Sprintf("remove %q from plugins.deny in the tenant's config", id)
	case "plugins.allow":
		e.Fix = fmt.Sprintf("add %q to plugins.allow in the tenant's config", id)
	case "plugins.slots.memory":
		e.Fix = fmt.Sprintf("set plugins.slots.memory to %q in the tenant's config", id)
	default:
		e.Fix = fmt.Sprintf("set %s to true in the tenant's config", st.Key)
	}
	return e
}
