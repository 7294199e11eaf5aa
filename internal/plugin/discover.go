package plugin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"talon/internal/policy"
)

// Found is one discovered plugin.
type Found struct {
	ID     string        `json:"id"`
	Kind   string        `json:"kind,omitempty"`
	Origin policy.Origin `json:"origin"`
	// Source is "module" (compiled in), "directory" (on disk) or "mcp".
	Source string `json:"source"`
	Dir    string `json:"dir,omitempty"`
	// Problem says why the plugin cannot load: a bad manifest, or code
	// Talon does not run.
	Problem string `json:"problem,omitempty"`
	// OverriddenBy is the origin of the plugin that took this id first.
	OverriddenBy policy.Origin `json:"overriddenBy,omitempty"`

	module   *Module
	manifest *Manifest
}

// Sources of a Found plugin.
const (
	SourceModule    = "module"
	SourceDirectory = "directory"
	SourceMCP       = "mcp"
)

// WorkspaceExtensions is where an agent workspace keeps its plugins.
var WorkspaceExtensions = filepath.Join(".openclaw", "extensions")

// GlobalExtensions is the state dir's plugin directory (OpenClaw's
// ~/.openclaw/extensions).
const GlobalExtensions = "extensions"

// maxPluginDirs bounds one directory scan.
const maxPluginDirs = 256

// scan finds the plugins of dir: dir itself when it holds a manifest,
// else each subdirectory that does. A missing dir has none.
func scan(dir string, origin policy.Origin) []Found {
	// One ReadDir first: a run scans its workspace's extensions every
	// turn, and there usually are none.
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return []Found{{ID: filepath.Base(dir), Origin: origin, Source: SourceDirectory, Dir: dir, Problem: fmt.Sprintf("reading plugin directory: %v", err)}}
		}
		return nil
	}
	if slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == ManifestFile }) {
		if f, ok := readPlugin(dir, origin); ok {
			return []Found{f}
		}
	}
	var out []Found
	for _, e := range entries {
		if len(out) == maxPluginDirs {
			out = append(out, Found{ID: filepath.Base(dir), Origin: origin, Source: SourceDirectory, Dir: dir,
				Problem: fmt.Sprintf("more than %d plugin directories; the rest are ignored", maxPluginDirs)})
			break
		}
		if !e.IsDir() { // a symlink is not followed
			continue
		}
		if f, ok := readPlugin(filepath.Join(dir, e.Name()), origin); ok {
			out = append(out, f)
		}
	}
	return out
}

// readPlugin reads dir's manifest; ok is false when dir has none.
func readPlugin(dir string, origin policy.Origin) (Found, bool) {
	f := Found{ID: filepath.Base(dir), Origin: origin, Source: SourceDirectory, Dir: dir}
	data, err := readRegular(filepath.Join(dir, ManifestFile), maxManifest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, false
	case err != nil:
		f.Problem = fmt.Sprintf("reading %s: %v", ManifestFile, err)
		return f, true
	}
	m, err := ParseManifest(data)
	if err != nil {
		f.Problem = err.Error()
		return f, true
	}
	f.ID, f.Kind, f.manifest = m.ID, m.Kind, m
	if !isDir(filepath.Join(dir, apiToolsDir)) && hasCode(dir) {
		f.Problem = "its code (TypeScript/JavaScript) does not run in Talon, and it has no api-tools/ folder; " +
			"port its tools to YAML api-tools in " + filepath.Join(dir, apiToolsDir) + " or to an MCP server (mcp.servers)"
	}
	return f, true
}

// readRegular reads a regular file (not a symlink) of at most max bytes.
func readRegular(path string, max int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (symlinks are not followed)", filepath.Base(path))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", filepath.Base(path), fi.Size(), max)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max+1))
}

func isDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

func hasCode(dir string) bool {
	for _, n := range []string{"index.ts", "index.js", "index.mjs", "package.json", "dist", "src"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// merge appends next to list in discovery order: the first plugin of an
// id wins, later ones are kept, marked as overridden.
func merge(list []Found, next ...Found) []Found {
	for _, f := range next {
		key := strings.ToLower(f.ID)
		if i := slices.IndexFunc(list, func(g Found) bool { return g.OverriddenBy == "" && strings.ToLower(g.ID) == key }); i >= 0 {
			f.OverriddenBy = list[i].Origin
		}
		list = append(list, f)
	}
	return list
}
