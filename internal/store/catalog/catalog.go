package catalog

import (
	"context"
	"errors"
	"time"
)

// Store keeps the agent library, tenants and installations. List methods
// return their rows in a fixed order: library by slug, tenants by id,
// installations by tenant id then slug.
type Store interface {
	// PutLibrary inserts the entry or replaces the one with its slug.
	PutLibrary(ctx context.Context, e Entry) error
	Library(ctx context.Context) ([]Entry, error)
	// LibraryEntry returns ErrNotFound for an unknown slug.
	LibraryEntry(ctx context.Context, slug string) (Entry, error)
	// DeleteLibrary returns ErrNotFound for an unknown slug and ErrInUse
	// while the entry has installations.
	DeleteLibrary(ctx context.Context, slug string) error

	// PutTenant inserts the tenant or renames the one with its id; a
	// tenant's Created never changes.
	PutTenant(ctx context.Context, t Tenant) error
	Tenants(ctx context.Context) ([]Tenant, error)
	// DeleteTenant deletes the tenant and its installations; ErrNotFound
	// for an unknown id.
	DeleteTenant(ctx context.Context, id string) error

	// Install records a new installation: ErrExists when the pair is
	// already installed, ErrUnknownTenant or ErrUnknownEntry when either
	// side does not exist.
	Install(ctx context.Context, in Installation) error
	// UpdateInstallation replaces an installation's template hash, times,
	// status and message (after an update or a sync) and, when Files is not
	// nil, its shipped files; ErrNotFound when the pair is not installed.
	// InstalledAt is kept when zero.
	UpdateInstallation(ctx context.Context, in Installation) error
	Installations(ctx context.Context, f Filter) ([]Installation, error)
	// Uninstall returns ErrNotFound when the pair is not installed.
	Uninstall(ctx context.Context, tenantID, slug string) error

	// PutNode inserts the node or changes the URL of the one with its id;
	// a node's Added never changes.
	PutNode(ctx context.Context, n Node) error
	Nodes(ctx context.Context) ([]Node, error)
	// DeleteNode returns ErrNotFound for an unknown id and ErrInUse while
	// tenants are placed on it.
	DeleteNode(ctx context.Context, id string) error
	// Place puts the tenant on the node, replacing its placement if it
	// had one: ErrUnknownTenant or ErrUnknownNode when either side does
	// not exist. Deleting the tenant deletes its placement.
	Place(ctx context.Context, tenantID, nodeID string) error
	// PlacementOf is the id of the tenant's node; ErrNotFound when the
	// tenant is not placed.
	PlacementOf(ctx context.Context, tenantID string) (string, error)
	// Placements lists every placement by tenant id.
	Placements(ctx context.Context) ([]Placement, error)
	// PlacedCounts is how many tenants each node holds; a node with none
	// is absent.
	PlacedCounts(ctx context.Context) (map[string]int, error)

	Close() error
}

// Errors of every Store, wrapped with the step that failed: test them with
// errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrExists        = errors.New("already exists")
	ErrInUse         = errors.New("in use by installations")
	ErrUnknownTenant = errors.New("unknown tenant")
	ErrUnknownEntry  = errors.New("unknown library entry")
	ErrUnknownNode   = errors.New("unknown node")
	ErrInvalid       = errors.New("invalid value")
)

// Entry is one employee in the agent library (seed 000's agent_library
// row), written from a template.
type Entry struct {
	Slug            string    `json:"slug"`
	Name            string    `json:"name"`
	Description     string    `json:"description"`
	Emoji           string    `json:"emoji"`
	Category        string    `json:"category"`
	DefaultModel    string    `json:"defaultModel"`
	Skills          []string  `json:"skills"` // never nil when read back
	Public          bool      `json:"public"`
	TemplateVersion string    `json:"templateVersion"`
	TemplateHash    string    `json:"templateHash"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// Tenant is a tenant the platform knows; its files live in the gateway's
// <stateDir>/tenants/<id>/.
type Tenant struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// Node is a gateway the platform places tenants on (talon serve
// --gateways): tenants/<id>/ of a placed tenant is in that gateway's
// state dir, reached through its node API at URL.
type Node struct {
	ID    string    `json:"id"`
	URL   string    `json:"url"`
	Added time.Time `json:"added"`
}

// Placement says which node serves a tenant.
type Placement struct {
	TenantID string `json:"tenantId"`
	NodeID   string `json:"nodeId"`
}

// Status says whether the last install, update or sync of an installation
// worked.
type Status string

const (
	StatusOK    Status = "ok"
	StatusError Status = "error" // Message says why
)

// Installation is one library entry installed into one tenant.
type Installation struct {
	TenantID     string    `json:"tenantId"`
	Slug         string    `json:"slug"`
	TemplateHash string    `json:"templateHash"` // the template as last installed
	InstalledAt  time.Time `json:"installedAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	Status       Status    `json:"status"`            // empty means StatusOK
	Message      string    `json:"message,omitempty"` // set exactly when Status is StatusError
	// Files are the files the template shipped into the workspace at the
	// last install or update, sorted by path: the installer owns exactly
	// these and tells the employee's edits by their hashes. Nil means not
	// recorded (installed by a Talon that kept no record); a record is
	// never empty. Bookkeeping, not shown by the API.
	Files []ShippedFile `json:"-"`
}

// ShippedFile is one file a template wrote into a workspace, as written.
type ShippedFile struct {
	// Path is relative to the workspace, with forward slashes.
	Path string
	// SHA256 is the hex SHA-256 of the content.
	SHA256 string
	// Exec is the execute bit the file was written with.
	Exec bool
}

// Filter selects installations; an empty field matches any value.
type Filter struct {
	TenantID string
	Slug     string
}
