package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"talon/internal/platform/install"
	"talon/internal/platform/node"
	"talon/internal/platform/template"
	"talon/internal/procfs"
	"talon/internal/store"
	"talon/internal/store/catalog"
	"talon/internal/tenantid"
	"talon/internal/usage"
)

// Node is a gateway's tenants as the platform reaches them: in this
// process over its state dir (Local), or another `talon gateway` over its
// node API (node.Client, which has this method set). Every tenant's files
// are reached only through its node.
type Node interface {
	// URL is the node's base URL (http or https); the gateway's
	// WebSocket is at the same address.
	URL() string
	Health(ctx context.Context) (Health, error)
	CreateTenant(ctx context.Context, id string, env map[string]string) (install.Tenant, error)
	// DeleteTenant removes the tenant's directory and what the gateway
	// holds of it.
	DeleteTenant(ctx context.Context, id string) error
	Install(ctx context.Context, tenant string, tp *template.Template) (install.Result, error)
	Update(ctx context.Context, tenant string, tp *template.Template, shipped []catalog.ShippedFile) (install.Result, error)
	Plan(ctx context.Context, tenant string, tp *template.Template, shipped []catalog.ShippedFile) (install.Changes, error)
	Pending(ctx context.Context, tenant, slug string) ([]catalog.ShippedFile, bool, error)
	Settle(ctx context.Context, tenant, slug string, files []catalog.ShippedFile) error
	Uninstall(ctx context.Context, tenant, slug string) error
	Recover(ctx context.Context, tenant string) error
	// Token is the tenant's gateway token.
	Token(ctx context.Context, tenant string) (string, error)
	Usage(ctx context.Context, tenant string, q usage.Query) (usage.Report, error)
	// Drain refuses the tenant's new work, waits for its runs and closes
	// its handles, so its directory is consistent to copy; Resume undoes
	// it.
	Drain(ctx context.Context, tenant string) error
	Resume(ctx context.Context, tenant string) error
	// Export writes a tar of the drained tenant's directory; Import
	// makes a tenant from one, refusing a tenant that exists.
	Export(ctx context.Context, tenant string, w io.Writer) error
	Import(ctx context.Context, tenant string, r io.Reader) error
}

// Health is what a node reports of itself.
type Health = node.Health

// A remote node is reached through its node API.
var _ Node = (*node.Client)(nil)

// ErrLocalMove refuses moving a tenant of the platform's own state dir:
// a platform with one local gateway has nowhere to move it.
var ErrLocalMove = errors.New("a platform over its own state dir has one node: moving tenants needs talon serve --gateways")

// Local is the node of `talon serve`: its own state dir, in process.
type Local struct {
	// StateDir holds tenants/<id>/.
	StateDir string
	// Addr is the gateway's base URL (http://host:port) this process
	// serves.
	Addr string
	// Dropped, when set, is told of each tenant deleted, after its
	// directory is gone: the gateway's DropTenant, which stops its runs
	// and jobs and closes every handle it had.
	Dropped func(id string)
	// Warm, when set, counts the gateway's warm tenants for Health.
	Warm func() int
	// Version is the gateway's version for Health.
	Version string
}

var _ Node = (*Local)(nil)

// URL is the gateway's address.
func (l *Local) URL() string { return l.Addr }

// Health counts the tenant directories and this process's open files.
func (l *Local) Health(ctx context.Context) (Health, error) {
	list, err := install.ListTenants(l.StateDir)
	if err != nil {
		return Health{}, err
	}
	h := Health{Tenants: len(list), Version: l.Version}
	if n, err := procfs.OpenFiles(os.Getpid()); err == nil {
		h.OpenFiles = n
	}
	if n, err := procfs.MaxOpenFiles(os.Getpid()); err == nil {
		h.MaxOpenFiles = int(n)
	}
	if l.Warm != nil {
		h.Warm = l.Warm()
	}
	return h, nil
}

func (l *Local) CreateTenant(_ context.Context, id string, env map[string]string) (install.Tenant, error) {
	return install.CreateTenant(l.StateDir, id, env)
}

func (l *Local) DeleteTenant(_ context.Context, id string) error {
	if err := install.DeleteTenant(l.StateDir, id); err != nil {
		return err
	}
	if l.Dropped != nil {
		l.Dropped(id)
	}
	return nil
}

func (l *Local) Install(_ context.Context, tenant string, tp *template.Template) (install.Result, error) {
	return install.Install(l.StateDir, tenant, tp)
}

func (l *Local) Update(_ context.Context, tenant string, tp *template.Template, shipped []catalog.ShippedFile) (install.Result, error) {
	return install.Update(l.StateDir, tenant, tp, shipped)
}

func (l *Local) Plan(_ context.Context, tenant string, tp *template.Template, shipped []catalog.ShippedFile) (install.Changes, error) {
	return install.Plan(l.StateDir, tenant, tp, shipped)
}

func (l *Local) Pending(_ context.Context, tenant, slug string) ([]catalog.ShippedFile, bool, error) {
	return install.Pending(l.StateDir, tenant, slug)
}

func (l *Local) Settle(_ context.Context, tenant, slug string, files []catalog.ShippedFile) error {
	return install.Settle(l.StateDir, tenant, slug, files)
}

func (l *Local) Uninstall(_ context.Context, tenant, slug string) error {
	return install.Uninstall(l.StateDir, tenant, slug)
}

func (l *Local) Recover(_ context.Context, tenant string) error {
	return install.Recover(l.StateDir, tenant)
}

// Token reads the tenant's gateway token from its config.
func (l *Local) Token(_ context.Context, tenant string) (string, error) {
	return install.Token(l.StateDir, tenant)
}

// Usage reads the tenant's usage ledger from its database, as `talon
// usage` does: the gateway need not run the tenant.
func (l *Local) Usage(ctx context.Context, tenant string, q usage.Query) (usage.Report, error) {
	if !tenantid.Valid(tenant) {
		return usage.Report{}, fmt.Errorf("tenant %q is not a tenant id", tenant)
	}
	return usage.Read(ctx, filepath.Join(l.StateDir, install.TenantsDir, tenant, store.File), q)
}

func (l *Local) Drain(context.Context, string) error             { return ErrLocalMove }
func (l *Local) Resume(context.Context, string) error            { return ErrLocalMove }
func (l *Local) Export(context.Context, string, io.Writer) error { return ErrLocalMove }
func (l *Local) Import(context.Context, string, io.Reader) error { return ErrLocalMove }
