package install

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"talon/internal/config"
	"talon/internal/platform/template"
	"talon/internal/store/catalog"
)

// Changes is what an update does, or would do, to one tenant.
type Changes struct {
	Tenant string
	Slug   string
	// Workspace paths (relative, forward slashes) of the template's files:
	// written where there was none, replaced (the employee had not edited
	// them), and removed (an earlier version shipped them, this one does
	// not, and the employee had not edited them).
	Added, Changed, Removed []string
	// Conflicts are files the employee edited that the template changes
	// too: the employee's copy is kept beside the template's new version.
	Conflicts []Conflict
	// Kept are files an earlier version shipped and this one does not,
	// which the employee edited: they stay, as the employee's own.
	Kept []string
	// Config lists the config values that would change.
	Config []ConfigChange
}

// Conflict is one file both the template and the employee changed.
type Conflict struct {
	// Path is the file, now the template's new version.
	Path string `json:"path"`
	// Copy is where the employee's version is kept:
	// <Path>.local-<YYYYMMDD-HHMMSS> (UTC), or with -2, -3 … when taken.
	Copy string `json:"copy"`
}

// Empty reports whether Update would change nothing. Kept files are not a
// change: they are left as they are.
func (c Changes) Empty() bool {
	return len(c.Added)+len(c.Changed)+len(c.Removed)+len(c.Conflicts)+len(c.Config) == 0
}

// LocalSuffix starts the name of a kept copy: SOUL.md.local-20260313-101500.
const LocalSuffix = ".local-"

// stampLayout is the UTC time in a kept copy's name.
const stampLayout = "20060102-150405"

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

// Shipped is the record of the files tp ships into a workspace (its Files,
// not its seed, which is the tenant's from the start), sorted by path:
// what an installation's catalog entry keeps after an install or update.
func Shipped(tp *template.Template) []catalog.ShippedFile {
	var out []catalog.ShippedFile
	for _, f := range tp.Files() {
		if !f.Mode.IsDir() {
			out = append(out, catalog.ShippedFile{Path: f.Path, SHA256: sum(f.Data), Exec: f.Mode&0o100 != 0})
		}
	}
	return out
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// fileKind is what a workspace path holds.
type fileKind int

const (
	absent  fileKind = iota
	regular          // a regular file: sum and exec are set
	dir
	other // a symlink, device, socket …
)

// fileState is one workspace path as it is now.
type fileState struct {
	kind fileKind
	sum  string
	exec bool
}

// Op kinds of a journaled update (see swap.go).
const (
	opPut    = "put"    // move the staged file in, keeping what is there unless its hash is in Replace
	opRemove = "remove" // delete the file when its hash is in Replace
	opSeed   = "seed"   // move the staged top-level entry in when the workspace lacks it
	opMkdir  = "mkdir"  // create the directory when missing
)

// op is one step of an update, decided by planFiles and carried out (or,
// after a crash, carried out again) by apply.
type op struct {
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Replace are the contents (hex SHA-256) the live file may have to be
	// overwritten or removed without keeping it: the recorded hash (the
	// employee did not edit it) and the template's new one.
	Replace []string `json:"replace,omitempty"`
}

// filePlan is what planFiles decided.
type filePlan struct {
	ops []op
	ch  Changes // files only
}

// planFiles decides, file by file, how to bring a workspace from what the
// template shipped before (shipped; nil when nothing is known to be the
// template's) to want, given what each path holds now (look). It never
// plans to touch a path that neither the record nor want names, never
// removes or overwrites a file whose content differs from the recorded
// one (the employee's edit), and reads nothing for a path whose template
// version did not change, so an unchanged template plans nothing at all.
//
//   - unchanged in the template: left alone, edited or not, even deleted;
//   - new or changed in the template: written when the path is free, holds
//     the recorded content, or already the new content (only the execute
//     bit differs); otherwise a conflict — the employee's copy is renamed
//     to <path>.local-<stamp> and the new version written;
//   - shipped before, not now: removed when it holds the recorded content,
//     kept (and reported) when the employee edited it.
func planFiles(shipped []catalog.ShippedFile, want []template.File, stamp string, look func(string) (fileState, error)) (filePlan, error) {
	var pl filePlan
	before := make(map[string]catalog.ShippedFile, len(shipped))
	for _, s := range shipped {
		before[s.Path] = s
	}
	wanted := map[string]bool{}
	var puts []op
	for _, f := range want {
		if f.Mode.IsDir() {
			continue
		}
		wanted[f.Path] = true
		w := catalog.ShippedFile{Path: f.Path, SHA256: sum(f.Data), Exec: f.Mode&0o100 != 0}
		r, known := before[f.Path]
		if known && r == w {
			continue
		}
		st, err := look(f.Path)
		if err != nil {
			return pl, err
		}
		replace := []string{w.SHA256}
		if known {
			replace = append(replace, r.SHA256)
		}
		switch {
		case st.kind == absent:
			pl.ch.Added = append(pl.ch.Added, f.Path)
		case st.kind == regular && st.sum == w.SHA256 && st.exec == w.Exec:
			continue // already the new version
		case st.kind == regular && slices.Contains(replace, st.sum):
			pl.ch.Changed = append(pl.ch.Changed, f.Path)
		default:
			pl.ch.Conflicts = append(pl.ch.Conflicts, Conflict{Path: f.Path, Copy: f.Path + LocalSuffix + stamp})
		}
		puts = append(puts, op{Kind: opPut, Path: f.Path, Replace: replace})
	}
	for _, r := range shipped {
		if wanted[r.Path] {
			continue
		}
		st, err := look(r.Path)
		if err != nil {
			return pl, err
		}
		switch {
		case st.kind == absent:
		case st.kind == regular && st.sum == r.SHA256:
			pl.ch.Removed = append(pl.ch.Removed, r.Path)
			pl.ops = append(pl.ops, op{Kind: opRemove, Path: r.Path, Replace: []string{r.SHA256}})
		default:
			pl.ch.Kept = append(pl.ch.Kept, r.Path)
		}
	}
	// Removals first, so that a path a removal frees can take a new file.
	pl.ops = append(pl.ops, puts...)
	sort.Strings(pl.ch.Added)
	sort.Strings(pl.ch.Changed)
	sort.Strings(pl.ch.Removed)
	sort.Strings(pl.ch.Kept)
	return pl, nil
}

// templateDirs are the directories tp ships, which an update never
// removes as empty.
func templateDirs(files []template.File) []string {
	var out []string
	for _, f := range files {
		if f.Mode.IsDir() {
			out = append(out, f.Path)
		}
	}
	return out
}

// parents lists the directories above p, nearest last: "a/b/c" → a, a/b.
func parents(p string) []string {
	var out []string
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}

// topOf is the first segment of p.
func topOf(p string) string {
	top, _, _ := strings.Cut(p, "/")
	return top
}

// Plan returns what Update(stateDir, tenantID, tp, shipped) would change,
// writing nothing; a kept copy's name is the one it would get now. When
// the update would fail (not installed, a required plugin kept off), Plan
// returns that error together with the file changes it found.
func Plan(stateDir, tenantID string, tp *template.Template, shipped []catalog.ShippedFile) (Changes, error) {
	ch := Changes{Tenant: tenantID, Slug: tp.Slug}
	fail := func(err error) (Changes, error) {
		return ch, fmt.Errorf("planning employee %q for tenant %q: %w", tp.Slug, tenantID, err)
	}
	t, unlock, err := openLocked(stateDir, tenantID)
	if err != nil {
		return ch, fmt.Errorf("planning: %w", err)
	}
	defer unlock()
	w, err := openWorkspace(t, tp.Slug, false)
	if err != nil {
		return fail(err)
	}
	defer w.close()
	pl, err := planFiles(shipped, tp.Files(), now().UTC().Format(stampLayout), w.look)
	if err != nil {
		return fail(err)
	}
	pl.ch.Tenant, pl.ch.Slug = tenantID, tp.Slug
	ch = pl.ch
	f, next, err := planConfig(t, func(tree *config.Value, _ *config.Config) (*config.Value, error) {
		return applyAgent(tree, tp, false)
	})
	if err != nil {
		return fail(err)
	}
	diffValues(&ch.Config, "", f.Tree, next)
	return ch, nil
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
