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

// Install records a new installation with its shipped files, in one
// transaction.
func (s *Store) Install(ctx context.Context, in catalog.Installation) error {
	if err := in.Normalize(s.now(), false); err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO installations (tenant_id, slug, template_hash, installed_at, updated_at, status, message)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			in.TenantID, in.Slug, in.TemplateHash, in.InstalledAt, in.UpdatedAt, string(in.Status), in.Message); err != nil {
			return mapErr(err, installFKs)
		}
		return putFiles(ctx, tx, in)
	})
	if err != nil {
		return fmt.Errorf("installing %q for tenant %q: %w", in.Slug, in.TenantID, err)
	}
	return nil
}

// putFiles replaces the installation's shipped files with in.Files; nil
// leaves them as they are.
func putFiles(ctx context.Context, tx pgx.Tx, in catalog.Installation) error {
	if in.Files == nil {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM installation_files WHERE tenant_id = $1 AND slug = $2`, in.TenantID, in.Slug); err != nil {
		return err
	}
	paths, sums, execs := make([]string, len(in.Files)), make([]string, len(in.Files)), make([]bool, len(in.Files))
	for i, f := range in.Files {
		paths[i], sums[i], execs[i] = f.Path, f.SHA256, f.Exec
	}
	if _, err := tx.Exec(ctx, `INSERT INTO installation_files (tenant_id, slug, path, sha256, exec)
		SELECT $1, $2, f.path, f.sha256, f.exec FROM unnest($3::text[], $4::text[], $5::boolean[]) AS f (path, sha256, exec)`,
		in.TenantID, in.Slug, paths, sums, execs); err != nil {
		return fmt.Errorf("recording shipped files: %w", mapErr(err, nil))
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE installations SET template_hash = $1, installed_at = COALESCE($2::timestamptz, installed_at),
			updated_at = $3, status = $4, message = $5 WHERE tenant_id = $6 AND slug = $7`,
			in.TemplateHash, installed, in.UpdatedAt, string(in.Status), in.Message, in.TenantID, in.Slug)
		if err != nil {
			return mapErr(err, nil)
		}
		if tag.RowsAffected() == 0 {
			return catalog.ErrNotFound
		}
		return putFiles(ctx, tx, in)
	})
	if err != nil {
		return fmt.Errorf("updating installation of %q for tenant %q: %w", in.Slug, in.TenantID, err)
	}
	return nil
}

// Installations lists the installations f selects, by tenant then slug,
// each with its shipped files: one statement, so the files are those of
// the installation row read. Paths sort bytewise (COLLATE "C"), as Go
// sorts them.
func (s *Store) Installations(ctx context.Context, f catalog.Filter) ([]catalog.Installation, error) {
	rows, err := s.pool.Query(ctx, `SELECT i.tenant_id, i.slug, i.template_hash, i.installed_at, i.updated_at, i.status, i.message,
			f.path, f.sha256, f.exec
		FROM installations i LEFT JOIN installation_files f ON f.tenant_id = i.tenant_id AND f.slug = i.slug
		WHERE ($1 = '' OR i.tenant_id = $1) AND ($2 = '' OR i.slug = $2)
		ORDER BY i.tenant_id, i.slug, f.path COLLATE "C"`,
		f.TenantID, f.Slug)
	if err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	defer rows.Close()
	var out []catalog.Installation
	for rows.Next() {
		var in catalog.Installation
		var path, sum *string
		var exec *bool
		if err := rows.Scan(&in.TenantID, &in.Slug, &in.TemplateHash, &in.InstalledAt, &in.UpdatedAt, &in.Status, &in.Message,
			&path, &sum, &exec); err != nil {
			return nil, fmt.Errorf("listing installations: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].TenantID != in.TenantID || out[n-1].Slug != in.Slug {
			in.InstalledAt, in.UpdatedAt = in.InstalledAt.UTC(), in.UpdatedAt.UTC()
			out = append(out, in)
		}
		if path != nil && sum != nil && exec != nil {
			last := &out[len(out)-1]
			last.Files = append(last.Files, catalog.ShippedFile{Path: *path, SHA256: *sum, Exec: *exec})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	return out, nil
}

// Uninstall deletes an installation and, by cascade, its shipped files.
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
