package pg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"talon/internal/store/catalog"
)

// installFKs says which side an installation's refused foreign key names.
var installFKs = map[string]error{
	"installations_tenant_fk": catalog.ErrUnknownTenant,
	"installations_slug_fk":   catalog.ErrUnknownEntry,
}

// Install records a new installation.
func (s *Store) Install(ctx context.Context, in catalog.Installation) error {
	if err := in.Normalize(s.now(), false); err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	_, err := s.exec(ctx, `INSERT INTO installations (tenant_id, slug, template_hash, installed_at, updated_at, status, message)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		in.TenantID, in.Slug, in.TemplateHash, in.InstalledAt, in.UpdatedAt, string(in.Status), in.Message)
	if err != nil {
		return fmt.Errorf("installing %q for tenant %q: %w", in.Slug, in.TenantID, mapErr(err, installFKs))
	}
	return nil
}

// UpdateInstallation rewrites an installation after an update or sync.
func (s *Store) UpdateInstallation(ctx context.Context, in catalog.Installation) error {
	if err := in.Normalize(s.now(), true); err != nil {
		return fmt.Errorf("updating installation: %w", err)
	}
	var installed any // NULL keeps the stored time
	if !in.InstalledAt.IsZero() {
		installed = in.InstalledAt
	}
	n, err := s.exec(ctx, `UPDATE installations SET template_hash = $1, installed_at = COALESCE($2::timestamptz, installed_at),
		updated_at = $3, status = $4, message = $5 WHERE tenant_id = $6 AND slug = $7`,
		in.TemplateHash, installed, in.UpdatedAt, string(in.Status), in.Message, in.TenantID, in.Slug)
	if err == nil && n == 0 {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("updating installation of %q for tenant %q: %w", in.Slug, in.TenantID, mapErr(err, nil))
	}
	return nil
}

// Installations lists the installations f selects, by tenant then slug.
func (s *Store) Installations(ctx context.Context, f catalog.Filter) ([]catalog.Installation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT tenant_id, slug, template_hash, installed_at, updated_at, status, message
		FROM installations WHERE ($1 = '' OR tenant_id = $1) AND ($2 = '' OR slug = $2) ORDER BY tenant_id, slug`,
		f.TenantID, f.Slug)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (catalog.Installation, error) {
		var in catalog.Installation
		err := row.Scan(&in.TenantID, &in.Slug, &in.TemplateHash, &in.InstalledAt, &in.UpdatedAt, &in.Status, &in.Message)
		in.InstalledAt, in.UpdatedAt = in.InstalledAt.UTC(), in.UpdatedAt.UTC()
		return in, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	return out, nil
}

// Uninstall deletes an installation.
func (s *Store) Uninstall(ctx context.Context, tenantID, slug string) error {
	n, err := s.exec(ctx, `DELETE FROM installations WHERE tenant_id = $1 AND slug = $2`, tenantID, slug)
	if err == nil && n == 0 {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("uninstalling %q from tenant %q: %w", slug, tenantID, err)
	}
	return nil
}
