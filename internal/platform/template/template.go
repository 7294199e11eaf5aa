package template

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Template is one loaded, validated employee template.
type Template struct {
	// Dir is the directory it was loaded from.
	Dir         string
	Slug        string // template.yaml "type"; also the agent id
	Name        string
	Description string
	Emoji       string
	Category    string
	Skills      []string
	Model       string // "" when the template leaves it to agents.defaults.model
	AlsoAllow   []string
	Plugins     []string
	Sandbox     *SandboxConfig
	Exec        *ExecConfig

	m        manifest
	manifest []byte // template.yaml as read
	files    []File // workspace files, sorted by path
	seed     []File // MEMORY.md and memory/: first install only
}

// File is one entry to create in an installed workspace.
type File struct {
	// Path is relative to the workspace, with forward slashes.
	Path string
	// Mode is 0o644 or 0o755 for files (the source's execute bit kept),
	// fs.ModeDir|0o755 for directories (listed so empty ones exist).
	Mode fs.FileMode
	Data []byte
}

// Files returns the files an install or update writes into the workspace,
// parents before children, with inline soul/agents/identity text
// materialised as SOUL.md/AGENTS.md/IDENTITY.md where the file is absent.
// It excludes Seed's entries. The slice and data are copies.
func (t *Template) Files() []File { return cloneFiles(t.files) }

// Seed returns MEMORY.md, the memory/ tree and the canvas/ tree: content
// written only by the first install and never replaced, because from then
// on it is the tenant's (memory the agent keeps, files it generates).
func (t *Template) Seed() []File { return cloneFiles(t.seed) }

// Manifest returns template.yaml as it was read: with Files and Seed, the
// whole template, which is how it travels to a node (package node) and
// loads there to the same Template. The slice is a copy.
func (t *Template) Manifest() []byte { return slices.Clone(t.manifest) }

func cloneFiles(in []File) []File {
	out := make([]File, len(in))
	for i, f := range in {
		out[i] = File{Path: f.Path, Mode: f.Mode, Data: slices.Clone(f.Data)}
	}
	return out
}

// Entries of a template directory and what they are.
var (
	// RequiredFiles must exist as a file or as inline text in template.yaml.
	RequiredFiles = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md"}
	// OptionalFiles may exist at the top level.
	OptionalFiles = []string{"TOOLS.md", "BOOT.md", "BOOTSTRAP.md", "HEARTBEAT.md", "MEMORY.md", "USER.md"}
	// OptionalDirs may exist at the top level.
	OptionalDirs = []string{"canvas", "memory", "skills", "api-tools"}
	// SeedEntries are the top-level entries copied on first install only:
	// from then on they are the tenant's. Which files a template owns in an
	// installed workspace is not a list of names but the installation's
	// record of what it shipped (see package install).
	SeedEntries = []string{"MEMORY.md", "memory", "canvas"}
)

// Limits on a template's files, so a mistake (a checked-in build
// directory, a huge data file) is refused rather than copied to every
// tenant.
const (
	MaxFileSize  = 1 << 20  // bytes of one file
	MaxTotalSize = 16 << 20 // bytes of all files
	MaxEntries   = 2000     // files and directories
	MaxDepth     = 12       // directory levels below the template
)

// Load reads and validates the template in dir, whose base name must be
// the template's type.
func Load(dir string) (*Template, error) {
	t, err := load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading template %s: %w", dir, err)
	}
	return t, nil
}

func load(dir string) (*Template, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, errors.New("not a directory")
	}
	data, err := readCapped(filepath.Join(dir, ManifestFile), MaxManifestSize)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(data)
	if err != nil {
		return nil, err
	}
	if base := filepath.Base(dir); m.Type != base {
		return nil, fmt.Errorf("%s: \"type\" is %q but the directory is %q; they must be equal", ManifestFile, m.Type, base)
	}
	t := &Template{
		Dir: dir, Slug: m.Type, Name: m.Name, Description: m.Description, Emoji: m.Emoji,
		Category: m.Category, Skills: m.Skills, Model: m.Model,
		AlsoAllow: m.RequiredTools.AlsoAllow, Plugins: m.RequiredTools.Plugins,
		Sandbox: m.Sandbox, Exec: m.Exec, m: *m, manifest: data,
	}
	w := walker{root: dir}
	if err := w.top(); err != nil {
		return nil, err
	}
	inline := map[string]*string{"SOUL.md": m.Soul, "AGENTS.md": m.Agents, "IDENTITY.md": m.Identity}
	key := map[string]string{"SOUL.md": "soul", "AGENTS.md": "agents", "IDENTITY.md": "identity"}
	for _, name := range RequiredFiles {
		if w.has(name) {
			continue
		}
		text := inline[name]
		if text == nil {
			return nil, fmt.Errorf("%s is missing: add the file or an inline %q text to %s", name, key[name], ManifestFile)
		}
		w.files = append(w.files, File{Path: name, Mode: 0o644, Data: []byte(*text)})
	}
	if err := checkContent(t, w.files); err != nil {
		return nil, err
	}
	for _, f := range w.files {
		top, _, _ := strings.Cut(f.Path, "/")
		if slices.Contains(SeedEntries, top) {
			t.seed = append(t.seed, f)
		} else {
			t.files = append(t.files, f)
		}
	}
	sortFiles(t.files)
	sortFiles(t.seed)
	return t, nil
}

// sortFiles orders by path so parents precede children and output is
// stable.
func sortFiles(fs []File) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
}

// LoadAll loads every template directory under root (entries whose names
// start with "." or "_" are skipped). Templates that fail are left out and
// their errors returned, so one broken template does not hide the others.
func LoadAll(root string) ([]*Template, []error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, []error{fmt.Errorf("loading templates from %s: %w", root, err)}
	}
	var (
		out  []*Template
		errs []error
	)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		if !e.IsDir() {
			errs = append(errs, fmt.Errorf("loading templates from %s: %s is not a template directory", root, name))
			continue
		}
		t, err := Load(filepath.Join(root, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	return out, errs
}

// readCapped reads a regular file (not a symlink) of at most max bytes.
func readCapped(path string, max int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is missing", filepath.Base(path))
		}
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", filepath.Base(path), fi.Size(), max)
	}
	return os.ReadFile(path)
}
