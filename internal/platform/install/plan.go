package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"path/filepath"
	"sort"
	"strings"

	"talon/internal/config"
	"talon/internal/platform/template"
)

// Changes is what Update would do to one tenant, computed without writing.
type Changes struct {
	Tenant string
	Slug   string
	// Workspace paths (relative, forward slashes) of files the template
	// manages: new, different (content or execute bit) and going away.
	Added, Changed, Removed []string
	// Config lists the config values that would change.
	Config []ConfigChange
}

// Empty reports whether Update would change nothing.
func (c Changes) Empty() bool {
	return len(c.Added)+len(c.Changed)+len(c.Removed)+len(c.Config) == 0
}

// ConfigChange is one config value before and after; Old or New is nil
// when the key is absent on that side. Path names list elements with an id
// by it: agents.list[id=coder].tools.alsoAllow.
type ConfigChange struct {
	Path     string
	Old, New *config.Value
}

func (c ConfigChange) String() string {
	show := func(v *config.Value) string {
		if v == nil {
			return "(absent)"
		}
		b, _ := v.MarshalJSON()
		return string(b)
	}
	return fmt.Sprintf("%s: %s → %s", c.Path, show(c.Old), show(c.New))
}

// Plan returns what Update(stateDir, tenantID, tp) would change. When the
// update would fail (not installed, a required plugin kept off), Plan
// returns that error together with the file changes it found.
func Plan(stateDir, tenantID string, tp *template.Template) (Changes, error) {
	ch := Changes{Tenant: tenantID, Slug: tp.Slug}
	t, unlock, err := openLocked(stateDir, tenantID)
	if err != nil {
		return ch, fmt.Errorf("planning: %w", err)
	}
	defer unlock()
	if err := diffFiles(&ch, pathsOf(t, tp.Slug).live, tp.Files()); err != nil {
		return ch, fmt.Errorf("planning employee %q for tenant %q: %w", tp.Slug, tenantID, err)
	}
	f, next, err := planConfig(t, func(tree *config.Value, _ *config.Config) (*config.Value, error) {
		return applyAgent(tree, tp, false)
	})
	if err != nil {
		return ch, fmt.Errorf("planning employee %q for tenant %q: %w", tp.Slug, tenantID, err)
	}
	diffValues(&ch.Config, "", f.Tree, next)
	return ch, nil
}

// diffFiles compares the template's files with the managed entries of the
// workspace at live.
func diffFiles(ch *Changes, live string, files []template.File) error {
	want := map[string]template.File{}
	for _, f := range files {
		if !f.Mode.IsDir() {
			want[f.Path] = f
		}
	}
	have := map[string]fs.FileMode{}
	err := filepath.WalkDir(live, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == live {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(live, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		top, _, _ := strings.Cut(rel, "/")
		if !template.Managed(top) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			have[rel] = d.Type()
		}
		return nil
	})
	if err != nil {
		return err
	}
	for p, f := range want {
		mode, ok := have[p]
		if !ok {
			ch.Added = append(ch.Added, p)
			continue
		}
		if same, err := sameFile(filepath.Join(live, filepath.FromSlash(p)), mode, f); err != nil {
			return err
		} else if !same {
			ch.Changed = append(ch.Changed, p)
		}
	}
	for p := range have {
		if _, ok := want[p]; !ok {
			ch.Removed = append(ch.Removed, p)
		}
	}
	sort.Strings(ch.Added)
	sort.Strings(ch.Changed)
	sort.Strings(ch.Removed)
	return nil
}

func sameFile(p string, typ fs.FileMode, f template.File) (bool, error) {
	if !typ.IsRegular() {
		return false, nil // a symlink or device where a file belongs
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return false, err
	}
	if fi.Mode().Perm()&0o100 != f.Mode.Perm()&0o100 || fi.Size() != int64(len(f.Data)) {
		return false, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return false, err
	}
	return bytes.Equal(data, f.Data), nil
}

// diffValues appends the differences between a and b below path: objects
// recurse, lists of objects with ids recurse by id, anything else compares
// whole.
func diffValues(out *[]ConfigChange, at string, a, b *config.Value) {
	join := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	switch {
	case config.Equal(a, b):
	case a != nil && b != nil && a.Kind == config.Object && b.Kind == config.Object:
		for _, m := range a.Members {
			diffValues(out, join(m.Key), m.Value, b.Get(m.Key))
		}
		for _, m := range b.Members {
			if a.Get(m.Key) == nil {
				diffValues(out, join(m.Key), nil, m.Value)
			}
		}
	case idList(a) && idList(b):
		ids := func(v *config.Value) map[string]*config.Value {
			m := map[string]*config.Value{}
			for _, it := range v.Items {
				m[it.Get("id").Str] = it
			}
			return m
		}
		am, bm := ids(a), ids(b)
		for _, it := range a.Items {
			id := it.Get("id").Str
			diffValues(out, fmt.Sprintf("%s[id=%s]", at, id), it, bm[id])
		}
		for _, it := range b.Items {
			if id := it.Get("id").Str; am[id] == nil {
				diffValues(out, fmt.Sprintf("%s[id=%s]", at, id), nil, it)
			}
		}
	default:
		*out = append(*out, ConfigChange{Path: at, Old: a, New: b})
	}
}

// idList reports whether v is a list whose items are all objects with a
// string id (agents.list).
func idList(v *config.Value) bool {
	if v == nil || v.Kind != config.Array {
		return false
	}
	for _, it := range v.Items {
		id := it.Get("id")
		if id == nil || id.Kind != config.String {
			return false
		}
	}
	return true
}
