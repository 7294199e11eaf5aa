package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"talon/internal/atomicfile"
)

// Filename is the name Talon writes a new config under.
const Filename = "talon.json"

// Names are the config file names Talon reads, in search order: its own,
// then OpenClaw's and its predecessor's, so an existing install just works.
var Names = []string{"talon.json", "openclaw.json", "clawdbot.json"}

// Find returns the first of Names that exists in dir.
func Find(dir string) (path string, ok bool) {
	for _, n := range Names {
		p := filepath.Join(dir, n)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, true
		}
	}
	return "", false
}

// File is a config file as loaded: its bytes (which the hash covers), the
// tree that is edited and saved, and the typed view of that tree.
type File struct {
	Path   string
	Exists bool
	Raw    []byte
	// Hash is Hash(Raw), the baseHash clients must send to change the file.
	Hash string
	// Tree is the parsed document; an empty object when the file is missing.
	Tree *Value
	// Config is decoded from Tree and shares its Raw nodes.
	Config   *Config
	Warnings []Issue
}

// Hash returns the lowercase hex SHA-256 of raw, as OpenClaw's config hash.
func Hash(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// Load reads and decodes the config at path. A missing file is not an error:
// it yields Exists=false and an empty config. When the file parses but does
// not validate, Load returns the File (with its hash and tree, so a caller
// can still show or repair it) together with a wrapped *ValidationError.
func Load(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Path: path, Hash: Hash(nil), Tree: NewObject(), Config: &Config{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loading config %s: %w", path, err)
	}
	return Parse(path, raw)
}

// Parse is Load for bytes already in hand; path is used in messages only.
func Parse(path string, raw []byte) (*File, error) {
	tree, err := ParseJSON5(raw)
	if err != nil {
		return nil, fmt.Errorf("loading config %s: %w", path, err)
	}
	if tree.Kind != Object {
		return nil, fmt.Errorf("loading config %s: expected an object at the top level, found %s", path, tree.Kind)
	}
	f := &File{Path: path, Exists: true, Raw: raw, Hash: Hash(raw), Tree: tree, Config: &Config{}}
	f.Warnings, err = Decode(tree, f.Config)
	if err != nil {
		return f, fmt.Errorf("loading config %s: %w", path, err)
	}
	return f, nil
}

// Save writes tree to path atomically: a crash leaves either the old file or
// the new one, never a mix. The file is private (0600) because it holds
// tokens and API keys, and Save will not write through a symlink, which
// could point anywhere. It returns the hash of the bytes written.
func Save(path string, tree *Value) (hash string, err error) {
	if tree == nil || tree.Kind != Object {
		return "", fmt.Errorf("saving config %s: expected an object at the top level", path)
	}
	if p, bad := nonFinite(tree, ""); bad != "" {
		return "", fmt.Errorf("saving config %s: %s: %s cannot be written as JSON", path, showPath(p), bad)
	}
	data := tree.Indented()
	if err := atomicfile.Write(path, data, 0o600); errors.Is(err, atomicfile.ErrSymlink) {
		return "", fmt.Errorf("saving config %s: refusing to write through a symlink; point Talon at the real file", path)
	} else if err != nil {
		return "", fmt.Errorf("saving config %s: %w", path, err)
	}
	return Hash(data), nil
}
