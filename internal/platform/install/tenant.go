package install

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"talon/internal/atomicfile"
	"talon/internal/config"
	"talon/internal/tenantid"
)

// TenantsDir is the directory under the state dir that holds tenants.
const TenantsDir = "tenants"

// Tenant is one tenant directory.
type Tenant struct {
	ID         string
	Dir        string
	ConfigPath string
	// Token is the gateway token CreateTenant generated; empty in listings,
	// which never read secrets.
	Token string
}

// Errors a caller maps to its own (HTTP statuses, wire codes): wrapped,
// with the tenant named, by every operation that meets them.
var (
	// ErrNoTenant is a tenant whose directory does not exist.
	ErrNoTenant = errors.New("no such tenant")
	// ErrExists is a tenant created (or imported) under an id in use.
	ErrExists = errors.New("it already exists")
	// ErrInstalled is an install of an employee the config lists.
	ErrInstalled = errors.New("already installed")
	// ErrNotInstalled is an update or uninstall of one it does not.
	ErrNotInstalled = errors.New("not installed")
)

// envNameRE is the rule for env var names a tenant may be given.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidEnvName reports whether k may name a tenant's env var; callers
// check it first to report a bad name as their own input error.
func ValidEnvName(k string) bool { return len(k) <= 128 && envNameRE.MatchString(k) }

// tenantDir checks id and returns the tenant's directory.
func tenantDir(stateDir, id string) (string, error) {
	if !tenantid.Valid(id) {
		return "", fmt.Errorf("tenant id %q is invalid: use letters, digits, _ and -, starting with a letter or digit, at most 128 characters", id)
	}
	if stateDir == "" {
		return "", errors.New("no state directory given")
	}
	return filepath.Join(stateDir, TenantsDir, id), nil
}

// openTenant returns an existing tenant, refusing a symlinked directory
// (which could lead out of the state dir).
func openTenant(stateDir, id string) (Tenant, error) {
	dir, err := tenantDir(stateDir, id)
	if err != nil {
		return Tenant{}, err
	}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Tenant{}, fmt.Errorf("tenant %q: %w", id, ErrNoTenant)
	case err != nil:
		return Tenant{}, fmt.Errorf("opening tenant %q: %w", id, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return Tenant{}, fmt.Errorf("tenant %q: %s is a symlink; refusing to follow it", id, dir)
	case !fi.IsDir():
		return Tenant{}, fmt.Errorf("tenant %q: %s is not a directory", id, dir)
	}
	path, ok := config.Find(dir)
	if !ok {
		path = filepath.Join(dir, config.Filename)
	}
	return Tenant{ID: id, Dir: dir, ConfigPath: path}, nil
}

// CreateTenant creates <stateDir>/tenants/<id>/ (mode 0700) with a config
// holding a new random gateway token (gateway.auth.token) and env. It
// refuses an id that exists.
func CreateTenant(stateDir, id string, env map[string]string) (Tenant, error) {
	dir, err := tenantDir(stateDir, id)
	if err != nil {
		return Tenant{}, err
	}
	keys := make([]string, 0, len(env))
	for k, v := range env {
		if !envNameRE.MatchString(k) {
			return Tenant{}, fmt.Errorf("creating tenant %q: env name %q is invalid: use letters, digits and _, not starting with a digit", id, k)
		}
		if len(v) > 64<<10 {
			return Tenant{}, fmt.Errorf("creating tenant %q: env %s is longer than 64 KiB", id, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Tenant{}, fmt.Errorf("creating tenant %q: generating the gateway token: %w", id, err)
	}
	token := hex.EncodeToString(b[:])
	envObj := config.NewObject()
	for _, k := range keys {
		envObj.Set(k, config.NewString(env[k]))
	}
	tree := config.NewObject(
		config.Member{Key: "gateway", Value: config.NewObject(config.Member{Key: "auth", Value: config.NewObject(
			config.Member{Key: "mode", Value: config.NewString("token")},
			config.Member{Key: "token", Value: config.NewString(token)})})},
		config.Member{Key: "env", Value: envObj},
	)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return Tenant{}, fmt.Errorf("creating tenant %q: %w", id, err)
	}
	// The config is written to a hidden directory that is renamed into
	// place whole, so a tenant never exists without its config (and its
	// token: a tenant without one would refuse every client anyway).
	tmp, err := os.MkdirTemp(parent, ".new-"+id+"-")
	if err != nil {
		return Tenant{}, fmt.Errorf("creating tenant %q: %w", id, err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o700); err != nil {
		return Tenant{}, fmt.Errorf("creating tenant %q: %w", id, err)
	}
	if _, err := config.Save(filepath.Join(tmp, config.Filename), tree); err != nil {
		return Tenant{}, fmt.Errorf("creating tenant %q: %w", id, err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return Tenant{}, fmt.Errorf("creating tenant %q: %w", id, ErrExists)
	}
	// A rename onto an existing non-empty directory fails, so of two
	// concurrent creators exactly one wins.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Lstat(dir); serr == nil {
			return Tenant{}, fmt.Errorf("creating tenant %q: %w", id, ErrExists)
		}
		return Tenant{}, fmt.Errorf("creating tenant %q: %w", id, err)
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return Tenant{}, fmt.Errorf("creating tenant %q: syncing %s: %w", id, parent, err)
	}
	return Tenant{ID: id, Dir: dir, ConfigPath: filepath.Join(dir, config.Filename), Token: token}, nil
}

// ListTenants lists the tenants under stateDir, sorted by id: directories
// whose names are valid ids (symlinks and leftovers of interrupted creates
// and deletes are not tenants).
func ListTenants(stateDir string) ([]Tenant, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, TenantsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing tenants: %w", err)
	}
	var out []Tenant
	for _, e := range entries {
		if !e.IsDir() || !tenantid.Valid(e.Name()) { // IsDir is false for a symlink
			continue
		}
		t, err := openTenant(stateDir, e.Name())
		if err != nil {
			return nil, fmt.Errorf("listing tenants: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// DeleteTenant removes a tenant's directory and everything in it. The
// directory is first renamed to a hidden name, so a half-deleted tenant is
// never served; a symlink is refused, never followed. A gateway that has
// the tenant open keeps its open files until it lets go of them.
func DeleteTenant(stateDir, id string) error {
	t, unlock, err := openLocked(stateDir, id)
	if err != nil {
		return fmt.Errorf("deleting tenant: %w", err)
	}
	defer unlock()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("deleting tenant %q: %w", id, err)
	}
	trash := filepath.Join(filepath.Dir(t.Dir), ".deleted-"+id+"-"+hex.EncodeToString(b[:]))
	if err := os.Rename(t.Dir, trash); err != nil {
		return fmt.Errorf("deleting tenant %q: %w", id, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(t.Dir)); err != nil {
		return fmt.Errorf("deleting tenant %q: %w", id, err)
	}
	if err := os.RemoveAll(trash); err != nil { // RemoveAll removes symlinks, never their targets
		return fmt.Errorf("deleting tenant %q: removing %s: %w", id, trash, err)
	}
	return nil
}

// Token is the tenant's gateway token (gateway.auth.token), read from its
// config: what the platform presents for it at the gateway.
func Token(stateDir, id string) (string, error) {
	t, err := openTenant(stateDir, id)
	if err != nil {
		return "", err
	}
	if _, ok := config.Find(t.Dir); !ok {
		return "", fmt.Errorf("tenant %q: %w (its directory has no config)", id, ErrNoTenant)
	}
	f, err := config.Load(t.ConfigPath)
	if err != nil {
		return "", fmt.Errorf("reading tenant %q config: %w", id, err)
	}
	return f.Config.Gateway.Auth.Token, nil
}
