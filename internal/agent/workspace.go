package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"talon/internal/config"
	"talon/internal/contain"
)

// trashDir is where Trash moves workspaces, in the state directory.
const trashDir = "trash"

// Workspaces does the file work on the agent workspaces of one state
// directory: checking where a workspace may go, preparing one with its
// bootstrap files and identity lines, reading an agent's identity, and
// moving a deleted agent's workspace to the trash. A tenant's workspaces
// (Confined) are reached through an os.Root of its directory, so no
// symbolic link on the way leads out of it; the default tenant's may be
// anywhere its operator put them.
//
// A Workspaces holds no state: calls on it are safe from many goroutines,
// and the caller serialises the config writes they go with.
type Workspaces struct {
	Dir        string // the state directory: relative workspaces and the trash are in it
	ConfigPath string // the config file, which no workspace may hold
	Confined   bool   // a tenant's: every workspace is inside Dir
}

// Check resolves raw, the workspace asked for agent id (relative to Dir,
// `~` for home), and refuses places an agent must not own: outside a
// tenant's directory, the state directory or one containing it (or the
// config file), the trash, and anything overlapping another agent's
// workspace in cfg — Trash moves a workspace away whole, which must never
// take another agent's files or the state with it. Its errors are the
// request's fault and say why, naming the workspace.
func (w Workspaces) Check(cfg *config.Config, id, raw string) (string, error) {
	probe := &config.Config{Agents: config.Agents{List: []config.Agent{{ID: id, Workspace: raw}}}}
	dir := probe.AgentWorkspace(w.Dir, id)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("workspace %s %s", dir, fmt.Sprintf(format, args...))
	}
	if _, in := contain.Within(w.Dir, dir); w.Confined && !in {
		return "", bad("is outside the tenant directory")
	}
	if _, in := contain.Within(dir, w.Dir); in {
		return "", bad("would contain the state directory %s", w.Dir)
	}
	if _, in := contain.Within(dir, w.ConfigPath); in {
		return "", bad("would contain the config file %s", w.ConfigPath)
	}
	if _, in := contain.Within(filepath.Join(w.Dir, trashDir), dir); in {
		return "", bad("is in the trash")
	}
	for _, other := range cfg.AgentIDs() {
		if o := cfg.AgentWorkspace(w.Dir, other); other != id && pathsOverlap(dir, o) {
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

// Open opens the workspace dir as a root, creating it (0700) when asked.
func (w Workspaces) Open(dir string, create bool) (*os.Root, error) {
	f, err := w.openFS()
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

// Prepare creates the workspace dir with its bootstrap files (seed:
// SeedWorkspace, unless agents.defaults.skipBootstrap) and appends lines
// to its IDENTITY.md. Its errors name the workspace and the file.
func (w Workspaces) Prepare(cfg *config.Config, dir string, seed bool, lines []IdentityLine) error {
	ws, err := w.Open(dir, true)
	if err != nil {
		return fmt.Errorf("preparing workspace: %w", err)
	}
	defer ws.Close()
	if seed {
		skip := cfg.Agents.Defaults.SkipBootstrap != nil && *cfg.Agents.Defaults.SkipBootstrap
		if _, err := SeedWorkspace(ws, skip); err != nil {
			return fmt.Errorf("preparing workspace %s: %w", dir, err)
		}
	}
	if err := AppendIdentity(ws, lines); err != nil {
		return fmt.Errorf("preparing workspace %s: %w", dir, err)
	}
	return nil
}

// Identity is agent id's identity: its workspace's IDENTITY.md lines, with
// the `identity` object of its agents.list entry over them. A workspace or
// file that cannot be read is no identity.
func (w Workspaces) Identity(cfg *config.Config, id string) Identity {
	var ident Identity
	if ws, err := w.Open(cfg.AgentWorkspace(w.Dir, id), false); err == nil {
		ident, _ = ReadIdentity(ws)
		ws.Close()
	}
	e, _ := cfg.Agent(id)
	if e == nil || e.Identity == nil {
		return ident
	}
	for key, to := range map[string]*string{"name": &ident.Name, "theme": &ident.Theme, "emoji": &ident.Emoji, "avatar": &ident.Avatar} {
		if v := e.Identity.Get(key); v != nil && v.Kind == config.String && strings.TrimSpace(v.Str) != "" {
			*to = strings.TrimSpace(v.Str)
		}
	}
	return ident
}

// Lines are the IDENTITY.md lines that set id's non-empty fields.
func (id Identity) Lines() []IdentityLine {
	var out []IdentityLine
	for _, l := range []IdentityLine{{"Name", id.Name}, {"Emoji", id.Emoji}, {"Avatar", id.Avatar}, {"Theme", id.Theme}} {
		if l.Value != "" {
			out = append(out, l)
		}
	}
	return out
}

// TrashError is a workspace Trash leaves where it is, and why.
type TrashError struct {
	Dir, Agent, Reason string
}

func (e *TrashError) Error() string {
	return fmt.Sprintf("workspace %s of agent %q %s", e.Dir, e.Agent, e.Reason)
}

// Trash moves the workspace dir of the deleted agent id to
// <Dir>/trash/<id>-<UTC time>/workspace by rename — never a recursive
// delete, and never a copy: a workspace on another file system stays, and
// so does one that overlaps the workspace of an agent of rest (the config
// without id), holds the state directory or, for a tenant, lies outside
// its directory; each of these is a *TrashError. It returns how to move
// the workspace back, or nil when there was nothing to move.
func (w Workspaces) Trash(rest *config.Config, id, dir string) (func() error, error) {
	refuse := func(why string) error { return &TrashError{Dir: dir, Agent: id, Reason: why} }
	if _, in := contain.Within(dir, w.Dir); in {
		return nil, refuse("contains the state directory")
	}
	if _, in := contain.Within(w.Dir, dir); w.Confined && !in {
		return nil, refuse("is outside the tenant directory")
	}
	for _, other := range rest.AgentIDs() {
		if o := rest.AgentWorkspace(w.Dir, other); pathsOverlap(dir, o) {
			return nil, refuse(fmt.Sprintf("overlaps the workspace of agent %q", other))
		}
	}
	fsys, err := w.openFS()
	if err != nil {
		return nil, err
	}
	defer fsys.close()
	if _, err := fsys.lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, refuse(fmt.Sprintf("cannot be read (%v)", err))
	}
	trash := filepath.Join(w.Dir, trashDir)
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
		f, err := w.openFS()
		if err != nil {
			return err
		}
		defer f.close()
		return f.rename(to, dir)
	}, nil
}

// stateFS does file operations on absolute paths: through the state
// directory's root when confined (so nothing reaches outside it),
// directly otherwise.
type stateFS struct {
	base string
	root *os.Root // nil when not confined
}

func (w Workspaces) openFS() (*stateFS, error) {
	if !w.Confined {
		return &stateFS{base: w.Dir}, nil
	}
	r, err := os.OpenRoot(w.Dir)
	if err != nil {
		return nil, fmt.Errorf("opening tenant directory: %w", err)
	}
	return &stateFS{base: w.Dir, root: r}, nil
}

func (f *stateFS) close() {
	if f.root != nil {
		f.root.Close()
	}
}

// rel is p inside the root.
func (f *stateFS) rel(p string) (string, error) {
	rel, in := contain.Within(f.base, p)
	if !in {
		return "", fmt.Errorf("%s is outside the tenant directory", p)
	}
	return rel, nil
}

func (f *stateFS) lstat(p string) (fs.FileInfo, error) {
	if f.root == nil {
		return os.Lstat(p)
	}
	rel, err := f.rel(p)
	if err != nil {
		return nil, err
	}
	return f.root.Lstat(rel)
}

func (f *stateFS) mkdir(p string) error {
	if f.root == nil {
		return os.Mkdir(p, 0o700)
	}
	rel, err := f.rel(p)
	if err != nil {
		return err
	}
	return f.root.Mkdir(rel, 0o700)
}

func (f *stateFS) remove(p string) error {
	if f.root == nil {
		return os.Remove(p)
	}
	rel, err := f.rel(p)
	if err != nil {
		return err
	}
	return f.root.Remove(rel)
}

func (f *stateFS) rename(from, to string) error {
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
